"""The ptask model's fast path (isolated tasks at a constant rate, out of the sharing solver)
gives the completion times, rates and kill states of the full solver."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mrsched.errors import SimulationError
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


# -- the plain-float solver for small systems and the adopted look-ahead -------------------------

def random_system(rng, n_var, n_cnst, p_fat):
    """Elements grouped by variable as the model builds them, with bounds and FATPIPE links."""
    ev, ec, ew, starts = [], [], [], []
    for v in range(n_var):
        starts.append(len(ev))
        for c in rng.choice(n_cnst, size=int(rng.integers(1, min(4, n_cnst) + 1)), replace=False):
            ev.append(v)
            ec.append(int(c))
            ew.append(float(rng.uniform(1, 1e3)) if rng.random() < 0.7 else 100.0)  # ties too
    cap = [float(rng.uniform(10, 1e4)) if rng.random() < 0.7 else 1000.0 for _ in range(n_cnst)]
    fat = [bool(rng.random() < p_fat) for _ in range(n_cnst)]
    bound = np.array([math.inf if rng.random() < 0.6 else float(rng.uniform(0.01, 5)) for _ in range(n_var)])
    return np.array(ev), np.array(ec), np.array(ew), np.array(starts), cap, fat, bound


def test_small_solver_gives_the_numpy_solvers_rates_bit_for_bit(monkeypatch):
    from mrsched.errors import SimulationError
    from mrsched.simulator import maxmin

    monkeypatch.setattr(maxmin, "_MAX_ROUNDS", 2000)  # FATPIPE crawls: both must give up alike
    rng = np.random.default_rng(7)
    compared = 0
    for i in range(600):
        ev, ec, ew, starts, cap, fat, bound = random_system(rng, int(rng.integers(1, 14)),
                                                           int(rng.integers(1, 10)), 0.25 if i % 2 else 0.0)
        out = []
        for solve in (lambda: maxmin.fair_bottleneck(ev, ec, ew, starts, np.array(cap), np.array(fat), bound),
                      lambda: maxmin.fair_bottleneck_small(ev.tolist(), ec.tolist(), ew.tolist(), starts.tolist(),
                                                           cap, fat, bound.tolist())):
            try:
                out.append(solve())
            except SimulationError:
                out.append(None)
        if out[0] is None or out[1] is None:
            assert out[0] is None and out[1] is None, i
            continue
        compared += 1
        assert out[0].tolist() == out[1], i  # same operations in the same order
    assert compared > 500


def test_both_solvers_are_simgrids_loop_with_its_element_order():
    """The solvers (numpy, plain floats and, when built, C) against SimGrid's loop written out (``maxmin_reference.py``): each
    resource's capacity loses its elements' consumptions one after the other, newest variable
    first (``rank``); bit for bit, on random systems, ranks and bounds."""
    from maxmin_reference import fair_bottleneck as reference

    from mrsched.simulator import maxmin

    rng = np.random.default_rng(11)
    checked = 0
    for i in range(400):
        ev, ec, ew, starts, cap, fat, bound = random_system(rng, int(rng.integers(1, 10)),
                                                           int(rng.integers(1, 6)), 0.2 if i % 3 else 0.0)
        n_var = len(starts)
        rank = rng.permutation(n_var)
        bound = np.where(np.isinf(bound), -1.0, bound)   # SimGrid's "no bound" is -1
        variables = [{"bound": float(bound[v]), "rank": int(rank[v]),
                      "elements": [(int(ec[e]), float(ew[e])) for e in range(starts[v], starts[v + 1]
                                                                            if v + 1 < n_var else len(ev))]}
                     for v in range(n_var)]
        solver_bound = np.where(bound < 0, math.inf, bound)
        try:
            want = reference(variables, cap, fat)
        except RecursionError:   # pragma: no cover
            continue
        fast = maxmin.fair_bottleneck(ev, ec, ew, starts, np.array(cap), np.array(fat), solver_bound,
                                      rank).tolist()
        small = maxmin.fair_bottleneck_small(ev.tolist(), ec.tolist(), ew.tolist(), starts.tolist(), cap,
                                             fat, solver_bound.tolist(), rank.tolist())
        assert fast == want and small == want, i
        if maxmin._c_fair_bottleneck is not None:
            assert maxmin.fair_bottleneck_compiled(ev.tolist(), ec.tolist(), ew.tolist(), starts.tolist(),
                                                   cap, fat, solver_bound.tolist(), rank.tolist()) == want, i
        checked += 1
    assert checked == 400


@pytest.fixture
def c_solver(require):
    from mrsched.simulator import maxmin

    require(maxmin._c_fair_bottleneck is not None,
            "the compiled solver (simulator/_maxmin.c) was not built: no C compiler at install")
    return maxmin.fair_bottleneck_compiled


def test_compiled_solver_gives_the_plain_solvers_rates_bit_for_bit(monkeypatch, c_solver):
    """``_maxmin.c`` against its twin, on small and large random systems with FATPIPE links,
    bounds and ranks; a crawl that does not end gives up alike."""
    from mrsched.simulator import maxmin

    monkeypatch.setattr(maxmin, "_MAX_ROUNDS", 2000)
    rng = np.random.default_rng(13)
    compared = 0
    for i in range(700):
        big = i % 7 == 0
        ev, ec, ew, starts, cap, fat, bound = random_system(
            rng, int(rng.integers(20, 120) if big else rng.integers(1, 14)),
            int(rng.integers(5, 40) if big else rng.integers(1, 10)), 0.25 if i % 2 else 0.0)
        rank = rng.permutation(len(starts)).tolist() if i % 3 else None
        args = (ev.tolist(), ec.tolist(), ew.tolist(), starts.tolist(), cap, fat, bound.tolist(), rank)
        out = []
        for solve in (maxmin.fair_bottleneck_small, c_solver):
            try:
                out.append(solve(*args))
            except SimulationError as exc:
                assert "did not converge" in str(exc)
                out.append(None)
        assert out[0] == out[1], i      # the same floats, or both gave up
        compared += out[0] is not None
    assert compared > 600


def test_compiled_solver_refuses_inconsistent_systems(c_solver):
    from mrsched.simulator import maxmin

    cap, fat = [100.0, 60.0], [False, False]
    with pytest.raises(ValueError, match="inconsistent lengths"):
        maxmin._c_fair_bottleneck([0], [0, 1], [1.0], [0], cap, fat, [math.inf], [0], 10)
    with pytest.raises(IndexError, match="out of range"):
        c_solver([0], [2], [1.0], [0], cap, fat, [math.inf])
    with pytest.raises(ValueError, match="increasing"):
        c_solver([0, 1], [0, 1], [1.0, 1.0], [1, 0], cap, fat, [math.inf, math.inf])
    with pytest.raises(TypeError):
        c_solver([0], [0], ["x"], [0], cap, fat, [math.inf])
    assert c_solver([], [], [], [], cap, fat, []) == []


def test_small_solver_handles_bounds_and_saturation_by_hand():
    from mrsched.simulator.maxmin import fair_bottleneck_small

    # two tasks on one 100 B/s link (weights 10 and 30 bytes): equal 50 B/s shares -> rates
    # 5 and 5/3; a third task alone on its own 60 B/s link with weight 20 but bounded at 2/s
    rates = fair_bottleneck_small([0, 1, 2], [4, 4, 9], [10.0, 30.0, 20.0], [0, 1, 2],
                                   [0.0] * 4 + [100.0] + [0.0] * 4 + [60.0], [False] * 10, [math.inf, math.inf, 2.0])
    assert rates == pytest.approx([5.0, 5.0 / 3.0, 2.0], rel=1e-12)


def full_solver(platform):
    model = PtaskModel(platform)
    model._isolate = False
    model._small_solver = 0  # every solve in numpy, as before the plain-float path
    model._compiled_solver = False
    return model


def make_component_script(seed, n=80):
    """Many tasks over the star: CPU-only ones on disjoint hosts, transfers sharing links (with
    latency on l5: look-aheads through latency endings), killed ones, bursts at one instant."""
    return make_script(seed, n)


def test_random_components_finish_as_with_the_all_numpy_full_solver(star):
    adoptions = 0
    for seed in range(10):
        fast = PtaskModel(star)
        adopted = []
        original = fast._adopt_ahead

        def spy(sim, to_time, original=original, adopted=adopted):
            slots = original(sim, to_time)
            adopted.append(len(slots))
            return slots

        fast._adopt_ahead = spy
        script = make_component_script(seed)
        (a, _), (b, _) = drive(fast, script), drive(full_solver(star), script)
        assert a.keys() == b.keys() and len(a) >= 60
        for key in a:
            (fa, ra), (fb, rb) = a[key], b[key]
            if fb is None:
                assert fa is None and ra == pytest.approx(rb, rel=1e-9, abs=1e-12), (seed, key)
            else:
                assert fa == pytest.approx(fb, rel=1e-9), (seed, key)
        adoptions += sum(1 for k in adopted if k)
    assert adoptions >= 10  # the adopted look-ahead path was exercised


def test_adopted_look_ahead_matches_a_fresh_simulation(star):
    """A transfer waits its latency while another runs: the look-ahead simulates through the
    latency end; advancing to its answer adopts it, and the state equals a re-simulation."""
    models_ = [PtaskModel(star), PtaskModel(star)]
    for m in models_:
        m.add({"h0": 50.0}, {("h0", "s"): 300.0}, now=0.0, tag="a")
        m.add({"h5": 20.0}, {("h5", "s"): 300.0}, now=0.0, tag="lat")  # l5: 0.25 s latency
    when = [m.next_completion() for m in models_]
    assert when[0][0] == when[1][0] and models_[0]._ahead is not None
    models_[1]._ahead = None  # the second one simulates again
    done = [[(t.tag, t.finish) for t in m.advance(when[0][0])] for m in models_]
    assert done[0] == done[1] and len(done[0]) >= 1
    assert models_[0]._ahead is None
    for t0, t1 in zip(models_[0].tasks, models_[1].tasks):
        assert (t0.tag, t0.remaining, t0.rate, t0.latency_left) == (t1.tag, t1.remaining, t1.rate, t1.latency_left)
    rest = [[] for _ in models_]
    for m, out in zip(models_, rest):
        while (nxt := m.next_completion()) is not None:
            out += [(t.tag, t.finish) for t in m.advance(nxt[0])]
    assert rest[0] == rest[1]


def test_stale_look_ahead_is_not_adopted_after_a_change(star):
    model, ref = PtaskModel(star), full_solver(star)
    for m in (model, ref):
        m.add({"h0": 50.0}, {("h0", "s"): 300.0}, now=0.0, tag="a")
        m.add({"h5": 20.0}, {("h5", "s"): 300.0}, now=0.0, tag="lat")
        m.next_completion()
        m.advance(0.1)
        m.add({"h1": 40.0}, {("h1", "s"): 100.0}, now=0.1, tag="b")  # shares ls: all change
    out = []
    for m in (model, ref):
        done = []
        while (nxt := m.next_completion()) is not None:
            done += [(t.tag, t.finish) for t in m.advance(nxt[0])]
        out.append(done)
    assert [k for k, _ in out[0]] == [k for k, _ in out[1]]
    for (_, fa), (_, fb) in zip(*out):
        assert fa == pytest.approx(fb, rel=1e-9)


# -- add_uniform: a job's same flops on a range of hosts, no step per host -----------------------

def uniform_script(seed, n=40):
    """Uniform tasks on ranges of HOSTS positions, and now and then a general task (CPU work on
    one of those hosts, or a transfer) that shares a uniform task's CPU; some kills."""
    rng = np.random.default_rng(seed)
    t, script = 0.0, []
    for k in range(n):
        t += float(rng.exponential(3.0)) if rng.random() < 0.8 else 0.0
        if rng.random() < 0.7:
            lo = int(rng.integers(0, len(HOSTS)))
            hi = int(rng.integers(lo, len(HOSTS)))
            runs = [(lo, hi)] if rng.random() < 0.7 or hi - lo < 2 else [(lo, lo), (lo + 2, hi)]
            script.append((t, "uniform", (k, runs, float(rng.uniform(5, 200)))))
        else:
            script.append((t, "add", (k, *random_task(rng))))
        if rng.random() < 0.25:
            script.append((t + float(rng.uniform(0.1, 5)), "kill", int(rng.integers(0, k + 1))))
    script.sort(key=lambda e: (e[0], e[1] == "kill"))
    return script


def drive_stepped(model, script, uniform):
    """Play the script as the engine does (SimGrid steps to the next task end or event); uniform
    tasks through ``add_uniform`` or, ``uniform=False``, through ``add`` with the same flops."""
    handles, out, now, i = {}, {}, 0.0, 0
    while True:
        t_evt = script[i][0] if i < len(script) else math.inf
        left = model.time_left()
        if math.isinf(left) and math.isinf(t_evt):
            return out
        delta = left if now + left <= t_evt else t_evt - now
        now = now + delta
        for task in model.step(now, delta):
            out[task.tag] = (task.finish, 0.0)
        while i < len(script) and script[i][0] <= now:
            _, op, arg = script[i]
            if op == "uniform":
                key, runs, amount = arg
                if uniform:
                    handles[key] = model.add_uniform(runs, amount, now, tag=key)
                else:
                    hosts = [HOSTS[h] for lo, hi in runs for h in range(lo, hi + 1)]
                    handles[key] = model.add(dict.fromkeys(hosts, amount), {}, now, tag=key)
            elif op == "add":
                key, flops, nbytes = arg
                handles[key] = model.add(flops, nbytes, now, tag=key)
            elif arg in handles and handles[arg].finish is None:
                model.remove(handles[arg], now)
                out[arg] = (None, handles[arg].remaining)
            i += 1


@pytest.mark.parametrize("seed", range(8))
def test_add_uniform_is_add_of_the_same_flops(star, seed):
    """Bit for bit the tasks ``add`` makes of the same flops (stepped, as the engine runs them),
    kills and CPUs shared with later tasks included; and the full solver's times."""
    script = uniform_script(seed)
    ranged = PtaskModel(star, stepped=True, hosts=HOSTS)
    plain = PtaskModel(star, stepped=True)
    full = PtaskModel(star, stepped=True, hosts=HOSTS)
    full._isolate = False
    a, b, c = (drive_stepped(ranged, script, True), drive_stepped(plain, script, False),
               drive_stepped(full, script, True))
    assert a == b and len(a) >= 30
    assert a.keys() == c.keys()
    for key, (finish, left) in a.items():
        assert (finish is None) == (c[key][0] is None)
        assert (finish or 0.0) == pytest.approx(c[key][0] or 0.0, rel=1e-9), key
        assert left == pytest.approx(c[key][1], rel=1e-9, abs=1e-12), key


def test_add_uniform_isolates_by_ranges_and_gives_way_to_a_sharing_task(star):
    m = PtaskModel(star, stepped=True, hosts=HOSTS)

    def busy_is_users():   # the byte per constraint that add_uniform searches: a count, or an
        # isolated uniform task's range (which keeps no counts until it joins the solver)
        ranges = {c for lo, hi in zip(m._range_lo, m._range_hi) for c in range(lo, hi + 1)}
        assert list(m._busy) == [int(u > 0 or c in ranges) for c, u in enumerate(m._users)]
        assert not any(m._users[c] for c in ranges)
        return ranges

    job = m.add_uniform([(0, 1), (3, 4)], 100.0, 0.0, tag="job")   # h0, h1, h3, h4
    assert job._iso and job.flops == dict.fromkeys(["h0", "h1", "h3", "h4"], 100.0)
    assert job.rate == 7.0 / 100.0            # the slowest core (h3, 7 flop/s)
    assert busy_is_users() == {0, 1, 3, 4} and m._range_task == [job, job]
    other = m.add_uniform([(1, 2)], 10.0, 0.0, tag="other")   # h1 in use: the general path
    assert not job._iso and not other._iso and m._n_solver == 2
    assert busy_is_users() == set() and m._users[:5] == [1, 2, 1, 1, 1]
    assert m.add_uniform([(5, 5)], 0.0, 0.0, tag="empty")._empty   # no work: add's empty task
    m.remove(other, 0.0)
    busy_is_users()
    m.remove(job, 0.0)
    busy_is_users()
    again = m.add_uniform([(0, 4)], 50.0, 0.0)        # every CPU free again
    assert again._iso and again.rate == 7.0 / 50.0
    m.remove(again, 0.0)
    assert busy_is_users() == set() and m._range_lo == []
    with pytest.raises(SimulationError, match="no isolated range starts at CPU 0"):
        m._drop_range(0)     # an internal slip is loud, never another task's range dropped
    cores = m.add_uniform([(2, 2), (4, 4)], 100.0, 0.0)   # h2: 4 x 20 flop/s, h4: 2 x 13
    assert cores.rate == 13.0 / 100.0 == cores._bound     # one core each, the slower one
