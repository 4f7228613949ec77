"""Seed 001 Sect. 3.1, Table 1 and Fig. 2: EASY with and without burst-buffer reservations.

4 nodes, 10 TB of shared burst buffer, walltime = runtime, the scheduler runs every minute
(period 60 s), the first round at t=0 includes the jobs submitted at 0.
"""

from __future__ import annotations

import pytest
from engine_run import begins_data, simulate

from mrsched.schedulers.registry import make_scheduler

TB = 10**12
# job, submit [min], runtime [min], CPUs, BB [TB]  (Table 1)
TABLE1 = [(1, 0, 10, 1, 4), (2, 0, 4, 1, 2), (3, 1, 1, 3, 8), (4, 2, 3, 2, 4),
          (5, 3, 1, 3, 4), (6, 3, 1, 2, 2), (7, 4, 5, 1, 2), (8, 4, 3, 2, 4)]


def run_table1(policy: str) -> dict[int, float]:
    jobs = [dict(id=j, subtime=s * 60, runtime=r * 60, walltime=r * 60, res=c, burst_buffer=b * TB)
            for j, s, r, c, b in TABLE1]
    res = simulate(make_scheduler(policy, {"period": "60"}), begins_data(4, storage=[{"bb_capacity": 10 * TB}]), jobs)
    assert not res["rejected"]
    return {int(k.split("!")[1]): v / 60 for k, v in res["start"].items()}


def test_fcfs_easy_job3_is_a_barrier_until_job1_ends():
    start = run_table1("fcfs-easy")
    # Fig. 2 (without BB reservations), as narrated in Sect. 3.1:
    assert start[1] == 0 and start[2] == 0            # started at once
    assert start[4] > 2                                # would delay job 3's CPU reservation at 4-5
    assert start[6] == 3                               # backfilled before job 3
    assert start[3] == 10                              # lacks burst buffer until job 1 completes
    assert start[7] == 10                              # backfilled ahead of jobs 4 and 5 at 10
    assert all(start[j] >= 10 for j in (4, 5, 7, 8))   # nothing starts during the barrier 4..10
    # the rest follows Alg. 1 (hand-derived): 4 when job 3 ends, 5 when job 4 ends, 8 after 5 and 7
    assert start == {1: 0, 2: 0, 3: 10, 4: 11, 5: 14, 6: 3, 7: 10, 8: 15}


def test_fcfs_bb_backfills_jobs_4_to_8_before_job3():
    start = run_table1("fcfs-bb")
    assert start[3] == 10                              # reserved after job 1 (BB), starts then
    assert start[4] == 2                               # starts when submitted: does not delay job 3
    assert all(start[j] < start[3] for j in (4, 5, 6, 7, 8))
    assert start == {1: 0, 2: 0, 3: 10, 4: 2, 5: 9, 6: 5, 7: 4, 8: 6}


def test_bb_reservation_beats_plain_easy_on_mean_wait():
    waits = {}
    for policy in ("fcfs-easy", "fcfs-bb"):
        start = run_table1(policy)
        waits[policy] = sum(start[j] - s for j, s, *_ in TABLE1) / len(TABLE1)
    assert waits["fcfs-bb"] < waits["fcfs-easy"]


@pytest.mark.parametrize("period", ["0", "60"])
def test_event_driven_and_periodic_agree_when_events_fall_on_minutes(period):
    jobs = [dict(id=j, subtime=s * 60, runtime=r * 60, walltime=r * 60, res=c, burst_buffer=b * TB)
            for j, s, r, c, b in TABLE1]
    res = simulate(make_scheduler("fcfs-bb", {"period": period}), begins_data(4, storage=[{"bb_capacity": 10 * TB}]),
                   jobs)
    assert {int(k.split("!")[1]): v / 60 for k, v in res["start"].items()} == \
        {1: 0, 2: 0, 3: 10, 4: 2, 5: 9, 6: 5, 7: 4, 8: 6}
