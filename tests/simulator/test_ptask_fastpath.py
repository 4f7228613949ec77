"""The ptask model's fast path (isolated tasks at a constant rate, out of the sharing solver)
gives the completion times, rates and kill states of the full solver."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mrsched.simulator.platform import load_platform
from mrsched.simulator.ptask import PtaskModel

HEAD = "<?xml version='1.0'?>\n<platform version=\"4.1\">\n"

# six hosts around a router, two of them multi-core; "s" storage behind a shared link;
# "f" behind a FATPIPE link (a FATPIPE resource never takes the fast path)
STAR = """<zone id="z" routing="Floyd">
  <host id="master_host" speed="1f"/>
  <host id="h0" speed="10f"/><host id="h1" speed="10f"/><host id="h2" speed="20f" core="4"/>
  <host id="h3" speed="7f"/><host id="h4" speed="13f" core="2"/><host id="h5" speed="10f"/>
  <host id="s" speed="1f"><prop id="role" value="storage"/></host>
  <host id="f" speed="1f"><prop id="role" value="storage"/></host>
  <router id="r"/>
  <link id="l0" bandwidth="1000Bps" latency="0"/><link id="l1" bandwidth="800Bps" latency="0"/>
  <link id="l2" bandwidth="1000Bps" latency="0"/><link id="l3" bandwidth="500Bps" latency="0"/>
  <link id="l4" bandwidth="1000Bps" latency="0" sharing_policy="SPLITDUPLEX"/>
  <link id="l5" bandwidth="900Bps" latency="{lat}"/>
  <link id="ls" bandwidth="300Bps" latency="0"/>
  <link id="lf" bandwidth="200Bps" latency="0" sharing_policy="FATPIPE"/>
  <route src="h0" dst="r"><link_ctn id="l0"/></route>
  <route src="h1" dst="r"><link_ctn id="l1"/></route>
  <route src="h2" dst="r"><link_ctn id="l2"/></route>
  <route src="h3" dst="r"><link_ctn id="l3"/></route>
  <route src="h4" dst="r"><link_ctn id="l4" direction="UP"/></route>
  <route src="h5" dst="r"><link_ctn id="l5"/></route>
  <route src="s" dst="r"><link_ctn id="ls"/></route>
  <route src="f" dst="r"><link_ctn id="lf"/></route>
</zone>"""

HOSTS = ["h0", "h1", "h2", "h3", "h4", "h5"]


@pytest.fixture
def star(tmp_path):
    path = tmp_path / "star.xml"
    path.write_text(HEAD + STAR.format(lat="0.25") + "\n</platform>\n")
    return load_platform(path)


def models(platform):
    fast = PtaskModel(platform)
    full = PtaskModel(platform)
    full._isolate = False  # every task through the sharing solver
    return fast, full


def random_task(rng):
    """CPU-only on one or two hosts (often isolated), or with traffic (sharing links)."""
    kind = rng.integers(0, 4)
    hosts = list(rng.choice(HOSTS, size=int(rng.integers(1, 3)), replace=False))
    flops = {h: float(rng.uniform(5, 200)) for h in hosts}
    nbytes = {}
    if kind == 1:
        nbytes[(hosts[0], "s")] = float(rng.uniform(50, 900))
    elif kind == 2 and len(hosts) == 2:
        nbytes[(hosts[0], hosts[1])] = float(rng.uniform(50, 900))
    elif kind == 3 and rng.random() < 0.3:
        nbytes[(hosts[0], "f")] = float(rng.uniform(50, 500))
    return flops, nbytes


def drive(model, script):
    """Play (time, op, arg) events like the engine (advance to each next completion or
    event); return {key: (finish or None, remaining when killed)} and fast-path counts
    (tasks started isolated, isolated tasks that rejoined the solver while running)."""
    handles, out = {}, {}
    stats = {"isolated": 0, "rejoined": 0}
    was_iso = []
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
                if handles[key]._iso:
                    stats["isolated"] += 1
                stats["rejoined"] += sum(1 for h in was_iso if not h._iso and h.finish is None)
                was_iso = [h for h in handles.values() if h._iso]
            elif arg in handles and handles[arg].finish is None:
                task = handles[arg]
                model.remove(task, now=t)
                out[arg] = (None, task.remaining)
            i += 1
    return out, stats


def make_script(seed, n=40):
    rng = np.random.default_rng(seed)
    t = 0.0
    script = []
    for k in range(n):
        t += float(rng.exponential(3.0)) if rng.random() < 0.8 else 0.0  # some simultaneous
        script.append((t, "add", (k, *random_task(rng))))
        if rng.random() < 0.25:  # kill an earlier task a bit later
            script.append((t + float(rng.uniform(0.1, 5)), "kill", int(rng.integers(0, k + 1))))
    script.sort(key=lambda e: (e[0], e[1] == "kill"))
    return script


@pytest.mark.parametrize("seed", range(12))
def test_random_mixes_finish_as_with_the_full_solver(star, seed):
    fast, full = models(star)
    script = make_script(seed)
    (a, stats), (b, none) = drive(fast, script), drive(full, script)
    assert none == {"isolated": 0, "rejoined": 0}
    assert stats["isolated"] >= 2 and stats["rejoined"] >= 1, stats  # both paths exercised
    assert a.keys() == b.keys() and len(a) >= 30
    for key in a:
        (fa, ra), (fb, rb) = a[key], b[key]
        if fb is None:
            assert fa is None and ra == pytest.approx(rb, rel=1e-9, abs=1e-12), key
        else:
            assert fa == pytest.approx(fb, rel=1e-9), key


def test_isolated_tasks_stay_out_of_the_solver_and_rejoin_it_when_shared(star):
    fast, full = models(star)
    for m in (fast, full):
        m.add({"h0": 100.0}, {}, now=0.0, tag="cpu")          # 10 s alone
        m.add({"h2": 100.0, "h3": 14.0}, {}, now=0.0, tag="two")  # one h2 core: 5 s
    assert fast._n_solver == 0 and full._n_solver == 2
    assert fast.rates() == full.rates()
    # a transfer from h1 to s at t=1 touches none of their resources: isolated too
    for m in (fast, full):
        m.advance(1.0)
        m.add({}, {("h1", "s"): 300.0}, now=1.0, tag="io")
    assert fast._n_solver == 0  # io alone on l1 and ls: isolated too
    # a second CPU task on h0 shares its CPU: the first rejoins the solver mid-way
    early = []
    for m in (fast, full):
        early.append([(t.tag, t.finish) for t in m.advance(4.0)])  # 300 B at 300 B/s
        m.add({"h0": 30.0}, {}, now=4.0, tag="cpu2")
    assert early[0] == early[1] == [("io", 2.0)]
    assert fast._n_solver == 2  # cpu and cpu2 share h0; "two" stays isolated
    assert [t.tag for t in fast.tasks] == [t.tag for t in full.tasks]
    for t_fast, t_full in zip(fast.tasks, full.tasks):
        assert t_fast.remaining == pytest.approx(t_full.remaining, rel=1e-12)
        assert t_fast.rate == pytest.approx(t_full.rate, rel=1e-12)
    done_fast, done_full = [], []
    for m, done in ((fast, done_fast), (full, done_full)):
        while (nxt := m.next_completion()) is not None:
            done += [(t.tag, t.finish) for t in m.advance(nxt[0])]
    assert [k for k, _ in done_fast] == [k for k, _ in done_full] == ["two", "cpu2", "cpu"]
    for (_, fa), (_, fb) in zip(done_fast, done_full):
        assert fa == pytest.approx(fb, rel=1e-12)
    # cpu: 4 s alone (40 flop), then 60 flop at half speed until cpu2 ends (30 flop at 5/s,
    # t=10: cpu at 70 flop), then 30 flop alone: t=13
    assert dict(done_fast)["cpu"] == pytest.approx(13.0)


def test_simultaneous_isolated_completions_come_out_in_start_order(star):
    fast, full = models(star)
    for m in (fast, full):
        m.add({"h1": 50.0}, {}, now=0.0, tag="b")
        m.add({"h0": 50.0}, {}, now=0.0, tag="a")
        m.add({"h5": 200.0}, {("h5", "s"): 300.0}, now=0.0, tag="lat")  # latency: solver
    out = []
    for m in (fast, full):
        nxt = m.next_completion()
        out.append([(t.tag, t.finish) for t in m.advance(nxt[0])])
    for fast_or_full in out:  # the full solver steps through the latency end: 4.999999999999999
        assert [tag for tag, _ in fast_or_full] == ["b", "a"]
        assert [when for _, when in fast_or_full] == pytest.approx([5.0, 5.0], rel=1e-12)


def test_killed_isolated_task_reports_the_work_left(star):
    fast, _ = models(star)
    task = fast.add({"h3": 70.0}, {}, now=0.0)  # 7 flop/s: 10 s
    fast.advance(2.5)
    assert task.remaining == pytest.approx(0.75) and task.rate == pytest.approx(0.1)
    fast.remove(task, now=4.0)
    assert task.remaining == pytest.approx(0.6) and task.rate == 0.0 and task.finish is None
    assert fast.next_completion() is None and fast.tasks == []
