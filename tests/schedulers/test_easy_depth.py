"""EASY backfilling (``easy-bf``) in every order, with both reservations and depth 1 to 3,
round by round against a plain scan of its queue: the same jobs start on the same nodes and
storage, however the ordered queue and its early stop ("may any later job start?",
``OrderedQueue.skip``) find them. batsched's references cover depth 1 in ``fcfs`` order only."""

from __future__ import annotations

import numpy as np
import pytest

from mrsched.schedulers.profile.availability import AvailabilityProfile
from mrsched.schedulers.model.params import ORDERS
from mrsched.schedulers.model.contract import SchedulingContext, WaitingQueue, order_queue
from mrsched.schedulers.registry import make_policy

from test_fast_paths import dragonfly, next_instant, submit_feasible

# every test twice: with the compiled queue tree and with the pure-Python one (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("queue_tree")


def scan_easy(profile: AvailabilityProfile, waiting, order: str, depth: int, with_bb: bool,
              now: float) -> list[tuple[str, object]]:
    """Seed 001 Alg. 1 over the sorted queue, every job read: jobs start in order while they
    fit; the first ``depth`` blocked jobs with a walltime reserve their earliest start; every
    later job starts if it fits beside those reservations."""
    started, held = [], 0
    for job in order_queue(list(waiting), order):
        alloc = profile.fits_now(job.request)
        if alloc is not None:
            profile.reserve(now, now + job.request.walltime, alloc)
            started.append((job.id, alloc))
        elif held < depth and job.request.has_walltime:
            found = profile.earliest_start(job.request, None, now, with_bb=with_bb)
            if found is not None:
                profile.reserve(found[0], found[0] + job.request.walltime, found[1])
                held += 1
    return started


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("reserve", ["nodes", "all"])
@pytest.mark.parametrize("order", ORDERS)
def test_easy_starts_what_a_scan_of_its_queue_starts(order, reserve, depth):
    rng = np.random.default_rng(100 * depth + len(order) + len(reserve))
    cluster = dragonfly()
    policy = make_policy("easy-bf", order=order, reserve=reserve, depth=depth)
    policy.setup(cluster)
    profile = AvailabilityProfile(cluster, 0.0)
    waiting, running, now, seq = {}, {}, 0.0, 0
    blocked_rounds = starts = 0
    for _ in range(200):
        now = next_instant(rng, profile, running, now, early=0.15)
        before = set(waiting)
        seq = submit_feasible(rng, cluster, waiting, now, seq, most=4)
        reference = profile.copy()
        ctx = SchedulingContext(now, cluster, profile, WaitingQueue(waiting), {},
                                [j for j in waiting if j not in before], [])
        got = [(d.job_id, d.allocation) for d in policy.schedule(ctx)]
        assert got == scan_easy(reference, waiting.values(), order, depth, reserve == "all", now), now
        for job_id, _ in got:
            running[job_id] = ctx.reservations[job_id]
            del waiting[job_id]
        starts += len(got)
        blocked_rounds += len(waiting) > depth
    assert starts > 40 and blocked_rounds > 50     # a busy machine, with jobs left to backfill
