"""ptask_L07 sharing on hand-computed cases: one task alone, shared and FATPIPE links, the
bottleneck of several resources, SPLITDUPLEX directions, latency, kills, multi-core hosts."""

from __future__ import annotations

import pytest

from mrsched.errors import SimulationError
from mrsched.simulator.platform import load_platform
from mrsched.simulator.ptask import PtaskModel

HEAD = "<?xml version='1.0'?>\n<platform version=\"4.1\">\n"

# a star: hosts a, b, c, d around router r; "s" is a storage host behind a 100 B/s link
STAR = """<zone id="z" routing="Floyd">
  <host id="master_host" speed="1f"/>
  <host id="a" speed="10f"/><host id="b" speed="10f"/><host id="c" speed="20f" core="4"/><host id="d" speed="10f"/>
  <host id="s" speed="1f"><prop id="role" value="storage"/></host>
  <router id="r"/>
  <link id="la" bandwidth="1000Bps" latency="0"/><link id="lb" bandwidth="1000Bps" latency="0"/>
  <link id="lc" bandwidth="1000Bps" latency="0"/>
  <link id="ld" bandwidth="60Bps" latency="0" sharing_policy="SPLITDUPLEX"/>
  <link id="ls" bandwidth="100Bps" latency="{lat}" sharing_policy="{policy}"/>
  <route src="a" dst="r"><link_ctn id="la"/></route>
  <route src="b" dst="r"><link_ctn id="lb"/></route>
  <route src="c" dst="r"><link_ctn id="lc"/></route>
  <route src="d" dst="r"><link_ctn id="ld" direction="UP"/></route>
  <route src="s" dst="r"><link_ctn id="ls"/></route>
</zone>"""


def platform(tmp_path, lat="0", policy="SHARED"):
    path = tmp_path / f"star-{policy}-{lat}.xml"
    path.write_text(HEAD + STAR.format(lat=lat, policy=policy) + "\n</platform>\n")
    return load_platform(path)


def run_all(model):
    """Advance until every task finished; {task: finish time}."""
    out = {}
    while (nxt := model.next_completion()) is not None:
        for task in model.advance(nxt[0]):
            out[task] = task.finish
    return out


def test_one_task_alone_takes_max_of_compute_and_transfer_plus_latency(tmp_path):
    p = platform(tmp_path, lat="0.5")
    m = PtaskModel(p)
    cpu = m.add({"a": 50.0}, {}, now=0.0)  # 50 flop at 10 flop/s
    assert m.next_completion() == (pytest.approx(5.0), cpu)
    assert m.advance(5.0) == [cpu] and cpu.finish == pytest.approx(5.0)
    io = m.add({"a": 20.0}, {("a", "s"): 300.0}, now=5.0)  # 2 s of CPU, 3 s on ls, 0.5 s latency
    assert io.latency == pytest.approx(0.5)
    when, task = m.next_completion()
    assert task is io and when == pytest.approx(5.0 + 0.5 + 3.0)
    assert m.advance(7.0) == [] and io.remaining == pytest.approx(0.5)
    assert m.advance(when) == [io]
    assert m.next_completion() is None


def test_two_tasks_share_a_link_equally(tmp_path):
    m = PtaskModel(platform(tmp_path))
    t1 = m.add({}, {("a", "s"): 100.0}, now=0.0)
    t2 = m.add({}, {("b", "s"): 100.0}, now=0.0)
    assert m.rates() == {t1.id: pytest.approx(0.5), t2.id: pytest.approx(0.5)}  # 50 B/s each
    assert run_all(m) == {t1: pytest.approx(2.0), t2: pytest.approx(2.0)}


def test_shares_are_equal_bandwidth_not_equal_rate(tmp_path):
    """SimGrid's fair bottleneck: each task gets C/n of a saturated link whatever its size."""
    m = PtaskModel(platform(tmp_path))
    big = m.add({}, {("a", "s"): 400.0}, now=0.0)
    small = m.add({}, {("b", "s"): 100.0}, now=0.0)
    done = run_all(m)
    # 50 B/s each: small done at 2 s; big has 300 B left, alone at 100 B/s: 3 more seconds
    assert done == {small: pytest.approx(2.0), big: pytest.approx(5.0)}


def test_one_task_two_flows_counts_once_per_link(tmp_path):
    """Flows of one task add up on a shared link: the task is one share, not two."""
    m = PtaskModel(platform(tmp_path))
    pair = m.add({}, {("a", "s"): 100.0, ("b", "s"): 100.0}, now=0.0)  # 200 B on ls
    other = m.add({}, {("c", "s"): 100.0}, now=0.0)
    done = run_all(m)
    # 50 B/s each: other done at 2 s (pair moved 100 of 200 B), then pair alone: 1 s more
    assert done == {other: pytest.approx(2.0), pair: pytest.approx(3.0)}


def test_fatpipe_link_does_not_share(tmp_path):
    m = PtaskModel(platform(tmp_path, policy="FATPIPE"))
    t1 = m.add({}, {("a", "s"): 100.0}, now=0.0)
    t2 = m.add({}, {("b", "s"): 100.0}, now=0.0)
    t3 = m.add({}, {("s", "c"): 300.0}, now=0.0)
    assert run_all(m) == {t1: pytest.approx(1.0), t2: pytest.approx(1.0), t3: pytest.approx(3.0)}


def test_bottleneck_of_three_resources_and_redistribution(tmp_path):
    m = PtaskModel(platform(tmp_path))
    # task A: 30 flop on a (3 s), 60 B a->d (ld_DOWN 60 B/s: 1 s), 150 B a->s (ls: 1.5 s): CPU-bound
    a = m.add({"a": 30.0}, {("a", "d"): 60.0, ("a", "s"): 150.0}, now=0.0)
    assert m.rates()[a.id] == pytest.approx(1 / 3)
    # task B only crosses la with A; A keeps its bottleneck, B takes what la has left
    b = m.add({}, {("a", "b"): 1000.0}, now=0.0)
    rates = m.rates()
    assert rates[a.id] == pytest.approx(1 / 3)
    # la: A uses 210/3 = 70 B/s, B gets the remaining 930 B/s (max-min redistribution)
    assert rates[b.id] * 1000.0 == pytest.approx(930.0)
    done = run_all(m)
    assert done[a] == pytest.approx(3.0)
    assert done[b] == pytest.approx(1000.0 / 930.0)


def test_splitduplex_directions_are_independent(tmp_path):
    m = PtaskModel(platform(tmp_path))
    up = m.add({}, {("d", "a"): 60.0}, now=0.0)  # ld_UP
    down = m.add({}, {("a", "d"): 60.0}, now=0.0)  # ld_DOWN
    assert run_all(m) == {up: pytest.approx(1.0), down: pytest.approx(1.0)}
    m = PtaskModel(platform(tmp_path))
    up1 = m.add({}, {("d", "a"): 60.0}, now=0.0)
    up2 = m.add({}, {("d", "b"): 60.0}, now=0.0)  # same direction: shared
    assert run_all(m) == {up1: pytest.approx(2.0), up2: pytest.approx(2.0)}


def test_latency_is_paid_before_sharing(tmp_path):
    m = PtaskModel(platform(tmp_path, lat="1"))
    first = m.add({}, {("a", "s"): 100.0}, now=0.0)  # waits 1 s, then 100 B/s
    assert m.rates()[first.id] == 0.0 and first.waiting
    second = m.add({}, {("b", "s"): 100.0}, now=1.5)  # waits until 2.5
    assert first.remaining == pytest.approx(0.5)
    done = run_all(m)
    # first alone from 1 to 2.5 (150 B: done at 2.0); second alone from 2.5: 1 s
    assert done == {first: pytest.approx(2.0), second: pytest.approx(3.5)}


def test_remove_frees_the_share(tmp_path):
    m = PtaskModel(platform(tmp_path))
    keep = m.add({}, {("a", "s"): 200.0}, now=0.0)
    kill = m.add({}, {("b", "s"): 200.0}, now=0.0)
    assert m.advance(1.0) == []
    m.remove(kill, now=1.0)  # keep moved 50 B; 150 B left at 100 B/s
    assert m.next_completion() == (pytest.approx(2.5), keep)
    assert run_all(m) == {keep: pytest.approx(2.5)}
    assert kill.finish is None and kill not in m.tasks


def test_multicore_host_bounds_each_task_by_one_core(tmp_path):
    m = PtaskModel(platform(tmp_path))  # host c: 4 cores x 20 flop/s
    tasks = [m.add({"c": 40.0}, {}, now=0.0) for _ in range(4)]
    assert all(m.rates()[t.id] == pytest.approx(0.5) for t in tasks)  # 20 flop/s each
    m.add({"c": 40.0}, {}, now=0.0)  # a fifth one: 80 flop/s shared by five
    assert all(rate == pytest.approx(16.0 / 40.0) for rate in m.rates().values())


def test_tcp_gamma_bounds_long_fat_transfers(tmp_path):
    m = PtaskModel(platform(tmp_path, lat="1"))
    task = m.add({}, {("a", "s"): 50.0}, now=0.0)
    gamma_bound = 4194304.0 / (2 * 1.0 * 50.0)  # tasks/s: far above the 2 tasks/s of ls
    assert run_all(m) == {task: pytest.approx(1.0 + 0.5)}
    m = PtaskModel(platform(tmp_path, lat="1"))
    m._tcp_gamma = 100.0  # a tiny TCP window: the bound gamma / (2 lat bytes) = 1 task/s wins
    task = m.add({}, {("a", "s"): 50.0}, now=0.0)
    assert gamma_bound > 2 and run_all(m) == {task: pytest.approx(2.0)}


def test_api_edges(tmp_path):
    m = PtaskModel(platform(tmp_path))
    empty = m.add({"a": 0.0}, {("a", "s"): 0.0}, now=2.0)  # nothing to do: done at once
    assert m.next_completion() == (2.0, empty)
    assert m.advance(2.0) == [empty] and empty.finish == 2.0
    assert m.next_completion() is None
    with pytest.raises(SimulationError, match="back in time"):
        m.advance(1.0)
    with pytest.raises(SimulationError, match="unknown host 'zz'"):
        m.add({"zz": 1.0}, {}, now=2.0)
    with pytest.raises(SimulationError, match="unknown host 'zz'"):
        m.add({}, {("a", "zz"): 1.0}, now=2.0)
    with pytest.raises(SimulationError, match="invalid flop amount"):
        m.add({"a": float("nan")}, {}, now=2.0)
    # acting later than the model's clock moves it forward; completions are kept for advance()
    t = m.add({"a": 10.0}, {}, now=2.0)
    later = m.add({"b": 10.0}, {}, now=5.0)
    assert m.next_completion() == (pytest.approx(3.0), t)
    assert m.advance(6.0) == [t, later] and later.finish == pytest.approx(6.0)


def test_many_tasks_over_time_keep_exact_shares(tmp_path):
    """Hundreds of short tasks beside a long one (slots are recycled along the way)."""
    m = PtaskModel(platform(tmp_path))
    background = m.add({}, {("a", "s"): 1e6}, now=0.0, tag="bg")
    t = 0.0
    for k in range(300):  # each 100 B at half of ls (50 B/s): 2 s, one after the other
        task = m.add({}, {("b", "s"): 100.0}, now=t, tag=k)
        when, first = m.next_completion()
        assert first is task and when == pytest.approx(t + 2.0)
        assert m.advance(when) == [task] and task.tag == k
        assert (task.remaining, task.rate) == (0.0, 0.0)
        t = when
    assert t == pytest.approx(600.0)
    assert background.remaining == pytest.approx(1 - 50.0 * 600.0 / 1e6)
    assert m.tasks == [background] and background.tag == "bg"
    assert m.next_completion() == (pytest.approx(600.0 + (1e6 - 30000.0) / 100.0), background)
