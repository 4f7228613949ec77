"""The ptask model in stepped mode (the engine's): isolated tasks lose ``rate * delta`` at every
step the caller makes, as SimGrid's ``HostL07Model::update_actions_state``, so two tasks that
end "together" end in the step SimGrid's subtractions decide (docs/DESIGN.md, "Equal times")."""

from __future__ import annotations

import math

from mrsched.simulator.platform import load_platform
from mrsched.simulator.ptask import REMAINS_PRECISION, PtaskModel

PLATFORM = """<?xml version='1.0'?>
<platform version="4.1"><zone id="z" routing="Full">
  <host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
</zone></platform>
"""


def _model(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(PLATFORM)
    return PtaskModel(load_platform(str(path)), stepped=True)


def test_isolated_tasks_follow_the_steps(tmp_path):
    model = _model(tmp_path)
    a = model.add({"a": 13e9}, {}, 0.0)           # 13 s, rate 1/13
    now, steps = 0.0, [0.3, 1.7, 2.0000000001]    # someone else's steps (sleeps, messages)
    rem = 1.0
    for d in steps:
        assert model.time_left() == rem / (1e9 / 13e9)
        now += d
        assert model.step(now, d) == []
        rem -= (1e9 / 13e9) * d
        assert a.remaining == rem                  # the same operations, bit for bit
    b = model.add({"b": 9e9}, {}, now)             # 9 s: ends "with" a (4.0000000001 + 9 = 13)
    left_a, left_b = rem / (1e9 / 13e9), 1.0 / (1e9 / 9e9)
    assert model.time_left() == min(left_a, left_b)
    first = min(left_a, left_b)
    now += first
    done = model.step(now, first)
    # whichever has less left ends alone unless the other is within 1e-14 of work
    rem_a = rem - (1e9 / 13e9) * first
    rem_b = 1.0 - (1e9 / 9e9) * first
    assert [t.id for t in done] == [t.id for t, r in ((a, rem_a), (b, rem_b))
                                    if r < REMAINS_PRECISION]
    assert all(t.finish == now for t in done)


def test_work_below_precision_is_done(tmp_path):
    model = _model(tmp_path)
    a = model.add({"a": 10e9}, {}, 0.0)
    d = 10.0 - 5e-14                   # 5e-15 of the work left: below 1e-14, done
    done = model.step(d, d)
    assert done == [a] and a.finish == d
    assert model.time_left() == math.inf
    model.add({"b": 10e9}, {}, d)
    e = 10.0 - 5e-13                   # 5e-14 left: not done, one more (tiny) step
    assert model.step(d + e, e) == []
    assert 0 < model.time_left() < 1e-12


LINKED = """<?xml version='1.0'?>
<platform version="4.1"><zone id="z" routing="Full">
  <host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
  <link id="ab" bandwidth="125MBps" latency="0"/><link id="bm" bandwidth="125MBps" latency="0"/>
  <route src="a" dst="master_host"><link_ctn id="ab"/><link_ctn id="bm"/></route>
  <route src="a" dst="b"><link_ctn id="ab"/></route>
  <route src="b" dst="master_host"><link_ctn id="bm"/></route>
</zone></platform>
"""


def test_a_message_shares_a_task_link_equally(tmp_path):
    """SimGrid's fair bottleneck splits a link's capacity equally per variable, whatever its
    weight: a 1-byte message crossing a link a 1.25e9-byte transfer uses takes half of it,
    and the transfer runs at half its rate until the message arrived (docs/DESIGN.md,
    "Message contention"). A message crossing no busy link stays out of the model."""
    path = tmp_path / "p.xml"
    path.write_text(LINKED)
    model = PtaskModel(load_platform(str(path)), stepped=True)
    bw = 125e6
    task = model.add({}, {("a", "b"): 1.25e9}, 0.0)           # 10 s alone on link ab
    assert model.time_left() == 10.0
    assert model.add_message("b", "master_host", 1.0, 1.0, 0.0) is None   # bm is free
    msg = model.add_message("a", "master_host", 1.0, 1.0, 0.0)   # crosses ab
    assert msg is not None and msg.latency_left == 0.0
    left = model.time_left()
    assert left == 1.0 / (bw / 2)                  # the message at half of ab
    assert model.step(left, left) == [msg]
    assert task.remaining == 1.0 - (bw / 2 / 1.25e9) * left   # the task at half its rate
    assert model.time_left() == task.remaining / (bw / 1.25e9)  # alone again: full rate
