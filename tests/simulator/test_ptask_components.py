"""The ptask model solves the connected components of its system one by one and keeps solved
rates per set of progressing tasks; both are pure speed-ups: completion times, rates and the
work left by killed tasks are bit for bit those of one solve of the whole system, every time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mrsched.simulator import maxmin, ptask, ptask_steps
from mrsched.simulator.platform import load_platform
from mrsched.simulator.ptask import PtaskModel

HEAD = "<?xml version='1.0'?>\n<platform version=\"4.1\">\n"

# two groups of four hosts and a storage host, each around its router, the routers joined by a
# bridge link: tasks inside a group share only that group's links (separate components) and a
# rare task across the bridge merges them; a3 sits behind a FATPIPE link, storage links have
# latency (look-aheads through latency endings)
TWO_GROUPS = """<zone id="z" routing="Floyd">
  <host id="master_host" speed="1f"/>
  <host id="a0" speed="10f"/><host id="a1" speed="10f"/><host id="a2" speed="20f" core="2"/><host id="a3" speed="7f"/>
  <host id="b0" speed="10f"/><host id="b1" speed="13f"/><host id="b2" speed="20f" core="4"/><host id="b3" speed="10f"/>
  <host id="sa" speed="1f"><prop id="role" value="storage"/></host>
  <host id="sb" speed="1f"><prop id="role" value="storage"/></host>
  <router id="r1"/><router id="r2"/>
  <link id="la0" bandwidth="1000Bps" latency="0"/><link id="la1" bandwidth="800Bps" latency="0"/>
  <link id="la2" bandwidth="1000Bps" latency="0"/>
  <link id="la3" bandwidth="400Bps" latency="0" sharing_policy="FATPIPE"/>
  <link id="lb0" bandwidth="900Bps" latency="0"/><link id="lb1" bandwidth="1000Bps" latency="0"/>
  <link id="lb2" bandwidth="500Bps" latency="0" sharing_policy="SPLITDUPLEX"/>
  <link id="lb3" bandwidth="1000Bps" latency="0.01"/>
  <link id="lsa" bandwidth="300Bps" latency="0.1"/><link id="lsb" bandwidth="200Bps" latency="0.05"/>
  <link id="lx" bandwidth="500Bps" latency="0.02"/>
  <route src="a0" dst="r1"><link_ctn id="la0"/></route>
  <route src="a1" dst="r1"><link_ctn id="la1"/></route>
  <route src="a2" dst="r1"><link_ctn id="la2"/></route>
  <route src="a3" dst="r1"><link_ctn id="la3"/></route>
  <route src="sa" dst="r1"><link_ctn id="lsa"/></route>
  <route src="b0" dst="r2"><link_ctn id="lb0"/></route>
  <route src="b1" dst="r2"><link_ctn id="lb1"/></route>
  <route src="b2" dst="r2"><link_ctn id="lb2" direction="UP"/></route>
  <route src="b3" dst="r2"><link_ctn id="lb3"/></route>
  <route src="sb" dst="r2"><link_ctn id="lsb"/></route>
  <route src="r1" dst="r2"><link_ctn id="lx"/></route>
</zone>"""

GROUPS = {"a": (["a0", "a1", "a2", "a3"], "sa"), "b": (["b0", "b1", "b2", "b3"], "sb")}


@pytest.fixture
def two_groups(tmp_path):
    path = tmp_path / "two-groups.xml"
    path.write_text(HEAD + TWO_GROUPS + "\n</platform>\n")
    return load_platform(path)


def variant(platform, *, split=True, cache=64, isolate=True, small=32, compiled=True):
    model = PtaskModel(platform)
    model._compiled_solver = compiled
    model._split_components = split
    model._solve_cache_size = cache
    model._isolate = isolate
    model._small_solver = small
    return model


def random_task(rng):
    """Inside one group: CPU only, to its storage (stage-in / checkpoint like), between two of
    its hosts, from storage to storage; now and then across the bridge (merges components)."""
    group = "ab"[int(rng.integers(0, 2))]
    hosts, storage = GROUPS[group]
    picked = [str(h) for h in rng.choice(hosts, size=int(rng.integers(1, 3)), replace=False)]
    flops = {h: float(rng.uniform(5, 200)) for h in picked}
    nbytes = {}
    kind = int(rng.integers(0, 5))
    if kind == 1:
        nbytes[(picked[0], storage)] = float(rng.uniform(50, 900))
    elif kind == 2 and len(picked) == 2:
        nbytes[(picked[0], picked[1])] = float(rng.uniform(50, 900))
    elif kind == 3:
        flops = {storage: 0.0}
        nbytes[(storage, picked[0])] = float(rng.uniform(50, 900))
    elif kind == 4 and rng.random() < 0.25:
        other = GROUPS["b" if group == "a" else "a"][1]
        nbytes[(picked[0], other)] = float(rng.uniform(50, 400))
    return flops, nbytes


def make_script(seed, n=70):
    rng = np.random.default_rng(seed)
    t = 0.0
    script = []
    for k in range(n):
        t += float(rng.exponential(2.0)) if rng.random() < 0.75 else 0.0  # some simultaneous
        script.append((t, "add", (k, *random_task(rng))))
        if rng.random() < 0.2:  # kill an earlier task a bit later
            script.append((t + float(rng.uniform(0.01, 4)), "kill", int(rng.integers(0, k + 1))))
    script.sort(key=lambda e: (e[0], e[1] == "kill"))
    return script


def drive(model, script, probe=()):
    """Play (time, op, arg) events like the engine: advance to each next completion or script
    event. Returns {key: (finish or None, work left when killed)} and, at each script event,
    the look-ahead time and the rates of the running tasks (by key)."""
    handles, out, seen = {}, {}, []
    i = 0
    while True:
        nxt = model.next_completion()
        t_evt = script[i][0] if i < len(script) else math.inf
        t = min(t_evt, nxt[0] if nxt else math.inf)
        if math.isinf(t):
            break
        for task in model.advance(t):
            out[task.tag] = (task.finish, 0.0)
        while i < len(script) and script[i][0] <= t:
            _, op, arg = script[i]
            if op == "add":
                key, flops, nbytes = arg
                handles[key] = model.add(flops, nbytes, now=t, tag=key)
            elif arg in handles and handles[arg].finish is None:
                model.remove(handles[arg], now=t)
                out[arg] = (None, handles[arg].remaining)
            i += 1
        if i in probe:
            nxt = model.next_completion()
            seen.append((nxt and nxt[0], {task.tag: task.rate for task in model.tasks}))
    return out, seen


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("isolate", [True, False])
def test_split_and_cached_solves_give_the_whole_solve_bit_for_bit(two_groups, monkeypatch, seed, isolate):
    split_seen = []
    original = ptask.components

    def spy(tasks):
        groups = original(tasks)
        split_seen.append(len(groups))
        return groups

    monkeypatch.setattr(ptask, "components", spy)
    script = make_script(seed)
    probe = set(range(5, len(script), 7))
    fast = drive(variant(two_groups, isolate=isolate), script, probe)
    whole = drive(variant(two_groups, split=False, cache=0, isolate=isolate), script, probe)
    numpy_only = drive(variant(two_groups, split=False, cache=0, isolate=isolate, small=0, compiled=False),
                       script, probe)
    plain = drive(variant(two_groups, split=False, cache=0, isolate=isolate, compiled=False), script, probe)
    assert fast[0] == whole[0] == numpy_only[0] == plain[0]  # finish times and killed work left, exactly
    assert fast[1] == whole[1] == numpy_only[1] == plain[1]  # look-ahead times and rates along the way
    finished = [f for f, _ in fast[0].values() if f is not None]
    killed = [r for f, r in fast[0].values() if f is None]
    assert len(finished) >= 50 and killed and all(0 <= r <= 1 for r in killed)
    assert max(split_seen) >= 2, split_seen  # systems of several components were split


def test_split_alone_and_cache_alone_match_the_whole_solve(two_groups):
    script = make_script(11, n=90)
    ref = drive(variant(two_groups, split=False, cache=0), script)[0]
    for split, cache in ((True, 0), (False, 64), (True, 1)):
        assert drive(variant(two_groups, split=split, cache=cache), script)[0] == ref, (split, cache)


def test_components_group_tasks_by_shared_resources(two_groups):
    model = variant(two_groups, isolate=False)
    t = [model.add({"a0": 10.0}, {("a0", "sa"): 100.0}, now=0.0),   # 0: a0, la0, lsa
         model.add({"b0": 10.0}, {}, now=0.0),                        # 1: b0 alone
         model.add({"a1": 10.0}, {("a1", "sa"): 100.0}, now=0.0),   # 2: shares lsa with 0
         model.add({"b1": 10.0}, {("b1", "b2"): 50.0}, now=0.0),    # 3: b1's CPU, lb1, lb2
         model.add({"b2": 5.0}, {}, now=0.0),                         # 4: b2's CPU (3 has no flops there)
         model.add({}, {("b1", "sb"): 10.0}, now=0.0)]                # 5: lb1 (with 3), lsb
    groups = maxmin.components(t)
    assert groups == [[0, 2], [1], [3, 5], [4]]
    # a transfer across the bridge joins the a-group and the b0..sb chain
    t.append(model.add({}, {("a0", "sb"): 10.0}, now=0.0))
    assert maxmin.components(t) == [[0, 2, 3, 5, 6], [1], [4]]


def test_a_change_re_solves_only_its_component(two_groups):
    model = variant(two_groups, isolate=False)
    solved = []
    original = model._solve
    model._solve = lambda tasks: solved.append(sorted(x.tag for x in tasks)) or original(tasks)
    model.add({"a0": 10.0}, {("a0", "a1"): 100.0}, now=0.0, tag="a-pair")
    model.add({"a1": 40.0}, {}, now=0.0, tag="a-cpu")  # a1's CPU: a-pair has no flops there
    model.add({"b0": 20.0}, {("b0", "b1"): 300.0}, now=0.0, tag="b-pair")
    model.add({"b1": 30.0}, {}, now=0.0, tag="b-cpu")
    first = model.rates()
    assert sorted(map(sorted, solved)) == [["a-cpu"], ["a-pair"], ["b-cpu"], ["b-pair"]]
    solved.clear()
    model.advance(0.5)
    model.add({"b1": 10.0}, {}, now=0.5, tag="b-cpu2")  # shares b1's CPU with b-cpu only
    second = model.rates()
    assert solved == [["b-cpu", "b-cpu2"]]  # the other components' rates come from the cache
    same = {k: v for k, v in second.items() if k in first and k != 3}
    assert same == {k: first[k] for k in same}
    # b1's 13 flop/s split equally between b-cpu (30 flop) and b-cpu2 (10 flop)
    assert second[3] == pytest.approx(13.0 / 2 / 30.0) and second[4] == pytest.approx(13.0 / 2 / 10.0)


def test_look_ahead_leaves_the_model_state_untouched(two_groups):
    model = variant(two_groups)
    a = model.add({"a0": 5.0}, {("a0", "sa"): 300.0}, now=0.0, tag="a")
    b = model.add({"a1": 2.0}, {("a1", "sa"): 300.0}, now=0.0, tag="b")
    model.advance(0.05)  # both still paying lsa's 0.1 s latency
    before = [(t.remaining, t.latency_left, t.rate) for t in (a, b)]
    when, first = model.next_completion()  # simulated ahead through the latency end
    assert [(t.remaining, t.latency_left, t.rate) for t in (a, b)] == before
    assert before[0][1] == pytest.approx(0.05) and model.now == 0.05
    # both cross lsa (300 B/s): 150 B/s each, 2 s, after the 0.05 s of latency left
    assert when == pytest.approx(2.1) and first is a
    assert [t.tag for t in model.advance(when)] == ["a", "b"]


@pytest.mark.parametrize("seed", range(4))
def test_large_system_paths_give_the_small_system_results(two_groups, monkeypatch, seed):
    """Systems of many tasks are stepped on numpy arrays and solved whole (no split): forced
    on these small ones, every completion, kill and rate is the same as with the float lists."""
    script = make_script(100 + seed, n=90)
    probe = set(range(3, len(script), 5))
    ref = drive(variant(two_groups, isolate=False), script, probe)
    monkeypatch.setattr(ptask_steps, "_VECTOR_MIN", 1)
    monkeypatch.setattr(ptask, "_SPLIT_MAX", 0)
    vec = drive(variant(two_groups, isolate=False), script, probe)
    assert vec == ref
    monkeypatch.setattr(ptask_steps, "_VECTOR_MIN", 3)  # switches between the two along the way
    mixed = drive(variant(two_groups, isolate=False), script, probe)
    assert mixed == ref
