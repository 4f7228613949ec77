"""The kernel alone (``simulator/kernel.py``), without Batsim's server: its actors' calls and
its steps, the same from the Python kernel and the compiled one (``_steps.c``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mrsched.simulator import kernel as kernel_mod


def _net():
    # a message from the master takes no time (no link); from "far": 0.5 s latency, then one
    # byte at 2 bytes/s
    return SimpleNamespace(master="m", loopback=(0.0, 1.0, 0.0),
                           comm_spec=lambda src: (0.5, 2.0, 1.0), platform=None, names=[])


@pytest.fixture(params=["python", "compiled"])
def make_kernel(request, require):
    if request.param == "compiled":
        require(kernel_mod.CompiledKernel is not None,
                "the compiled kernel (simulator/_steps.c) was not built")
        return kernel_mod.CompiledKernel
    return kernel_mod.Kernel


def _scenario(k) -> list:
    """Actors that sleep, post from near and far, spawn one another, cancel a sleep; the
    server logs what it receives and stops the run at "end"."""
    log = []

    def receive(mtype, payload):
        log.append((k.now, mtype, payload, k.mailbox_empty()))
        if mtype == "end":
            k.stop()

    def sleeper():
        k.sleep(1.0, lambda: k.put("far", "woke", 1.0, lambda: log.append((k.now, "sent"))))

    def spawner():
        k.put("m", "first", None)
        k.put("m", "second", None)      # queued behind the first
        k.spawn(lambda: log.append((k.now, "spawned")))
        doomed = k.sleep(0.25, lambda: log.append((k.now, "cancelled sleep ran")))
        doomed.alive = False
        k.at(3.0, lambda: k.put("m", "end", None))

    k.spawn(sleeper)
    k.spawn(spawner)

    def stalled():
        raise RuntimeError("stalled")

    k.run(receive, stalled)
    return log


def test_actors_calls_and_steps(make_kernel):
    k = make_kernel(_net())
    log = _scenario(k)
    assert log == [(0.0, "first", None, False), (0.0, "spawned"),
                   (0.0, "second", None, True), (2.0, "woke", 1.0, True), (2.0, "sent"),
                   (3.0, "end", None, True)]
    assert k.now == 3.0


def test_both_kernels_alike(require):
    require(kernel_mod.CompiledKernel is not None, "the compiled kernel was not built")
    logs = [_scenario(cls(_net())) for cls in (kernel_mod.Kernel, kernel_mod.CompiledKernel)]
    assert logs[0] == logs[1]


def test_nothing_left_to_do_is_the_stall_callback(make_kernel):
    k = make_kernel(_net())

    def stalled():
        raise RuntimeError("nothing left")

    with pytest.raises(RuntimeError, match="nothing left"):
        k.run(lambda mtype, payload: None, stalled)
