"""Knowledge sources (seed 004 Ch. 4): requested / perfect / noisy / learned estimates of a job's
run time and I/O rate, as the backfilling policies see them, on hand-made jobs."""

from __future__ import annotations

import heapq
import random

import pytest

from mrsched.errors import ConfigError, WorkloadError
from mrsched.schedulers.model.cluster import Cluster
from mrsched.schedulers.model.decisions import Start
from mrsched.schedulers.model.job import job_from_batsim
from mrsched.schedulers.execution.knowledge import Learned, Noisy, Perfect, Requested, true_rate
from mrsched.schedulers.registry import make_policy, make_runtime
from mrsched.schedulers.execution.runtime import PolicyRuntime
from test_bandwidth import tree_cluster

MB = 1e6
KNOWLEDGE_POLICIES = ["fcfs", "fcfs-easy", "conservative-bb"]


def job(res, walltime, runtime, rate=0.0, true=None, user="u", subtime=0.0):
    out = {"subtime": subtime, "walltime": walltime, "res": res, "profile": "p", "true_runtime": runtime,
           "user": user}
    if rate:
        out["io_bandwidth_per_node"] = rate
    if true is not None:
        out["true_io_bandwidth_per_node"] = true
    return out


def starts(decisions):
    return {d.job_id: list(d.nodes) for d in decisions if isinstance(d, Start)}


def easy_case(knowledge):
    """2 nodes. A (1 node, walltime 100, really 10 s) runs; B (2 nodes) is blocked until A
    ends; C (1 node, walltime 50, really 50 s) can backfill only if it ends before B's
    reservation: at 100 with the walltime (it does), at 10 with the true run time (it does not)."""
    rt = make_runtime("fcfs-easy", knowledge=knowledge)
    rt.begin(Cluster.simple(2), 0.0)
    rt.submit(0.0, "w!A", job(1, 100, 10))
    assert starts(rt.step(0.0)) == {"w!A": [0]}
    rt.submit(1.0, "w!B", job(2, 100, 100))
    rt.submit(1.0, "w!C", job(1, 50, 50))
    return starts(rt.step(1.0))


def test_requested_backfills_by_walltime_perfect_by_true_runtime():
    assert easy_case("requested") == {"w!C": [1]}
    assert easy_case("perfect") == {}


def test_requested_leaves_the_request_untouched():
    rt = make_runtime("fcfs-easy", knowledge="requested", io_aware=True)
    rt.begin(tree_cluster(2, 2, 1000 * MB, 1000 * MB, 1000 * MB), 0.0)
    parsed = rt.submit(0.0, "w!1", job(1, 100, 10, rate=100 * MB, true=300 * MB))
    before = parsed.request
    rt.step(0.0)
    assert rt.running["w!1"].job.request is before
    assert rt.knowledge is None                 # no tracker at all on the default path


@pytest.mark.parametrize("policy", KNOWLEDGE_POLICIES)
def test_perfect_io_rate_holds_the_job_that_would_contend(policy):
    """PFS 500 MB/s. Job 1 states 100 MB/s but drains 400; job 2 states 100, drains 200:
    on their word both start (200 <= 500); knowing the truth, job 2 waits for job 1."""
    cl = tree_cluster(2, 2, 10_000 * MB, 10_000 * MB, 500 * MB)
    got = {}
    for knowledge in ("requested", "perfect"):
        rt = make_runtime(policy, io_aware=True, knowledge=knowledge)
        rt.begin(cl, 0.0)
        rt.submit(0.0, "w!1", job(1, 100, 100, rate=100 * MB, true=400 * MB))
        rt.submit(0.0, "w!2", job(1, 100, 100, rate=100 * MB, true=200 * MB))
        got[knowledge] = sorted(starts(rt.step(0.0)))
    assert got == {"requested": ["w!1", "w!2"], "perfect": ["w!1"]}


def test_perfect_estimate_too_high_for_the_tree_is_clamped_not_rejected():
    """A job whose true total exceeds the PFS is not refused for a prediction: its rate is
    clamped to what the tree can carry, so it runs (alone)."""
    cl = tree_cluster(2, 2, 10_000 * MB, 10_000 * MB, 500 * MB)
    rt = make_runtime("fcfs-easy", io_aware=True, knowledge="perfect")
    rt.begin(cl, 0.0)
    rt.submit(0.0, "w!1", job(2, 100, 100, rate=100 * MB, true=400 * MB))
    assert starts(rt.step(0.0)) == {"w!1": [0, 1]}
    assert rt.running["w!1"].job.request.io_bandwidth_per_node == 250 * MB


def _job(jid, **kw):
    return job_from_batsim(jid, job(**{"res": 1, "walltime": 1000, "runtime": 100, **kw}))


def test_noisy_is_seeded_reproducible_and_order_free():
    a, b = Noisy(0.3, seed=7), Noisy(0.3, seed=7)
    jobs = [_job(f"w!{k}", rate=10 * MB) for k in range(20)]
    ea = [a.estimate(j) for j in jobs]
    eb = [b.estimate(j) for j in reversed(jobs)][::-1]
    assert ea == eb                                          # same seed, any order: same estimates
    assert ea != [Noisy(0.3, seed=8).estimate(j) for j in jobs]
    assert len({e.runtime for e in ea}) == 20                 # a draw per job
    assert Noisy(0.0, seed=7).estimate(jobs[0]) == Perfect().estimate(jobs[0])


def test_noisy_spread_is_the_log_sigma():
    noisy = Noisy(0.3, seed=1)
    import math
    logs = [math.log(noisy.estimate(_job(f"w!{k}")).runtime / 100) for k in range(4000)]
    mean = sum(logs) / len(logs)
    sd = (sum((x - mean) ** 2 for x in logs) / len(logs)) ** 0.5
    assert abs(mean) < 0.02 and abs(sd - 0.3) < 0.02


def test_perfect_needs_the_true_runtime():
    bare = job_from_batsim("w!9", {"subtime": 0, "walltime": 10, "res": 1, "profile": "p"})
    with pytest.raises(WorkloadError, match="true_runtime"):
        Perfect().estimate(bare)
    delay = job_from_batsim("w!9", {"subtime": 0, "walltime": 10, "res": 1, "profile": "p"},
                            {"p": {"type": "delay", "delay": 7}})
    assert Perfect().estimate(delay).runtime == 7.0
    assert true_rate(bare) == 0.0 and Requested().estimate(bare).runtime == 10.0


def test_learned_uses_the_users_history_by_walltime_then_user():
    src = Learned()
    j1 = _job("w!1", runtime=30, true=50 * MB, rate=10 * MB)
    assert src.estimate(j1).runtime == 1000 and src.estimate(j1).rate == 10 * MB   # no history
    src.observe(j1, 30.0)
    src.observe(_job("w!2", walltime=500, runtime=90, true=70 * MB, rate=10 * MB), 90.0)
    assert src.estimate(_job("w!3", rate=10 * MB)).runtime == 30.0       # same user, same walltime
    assert src.estimate(_job("w!4", walltime=200)).runtime == 60.0        # same user, new walltime
    assert src.estimate(_job("w!5", rate=10 * MB)).rate == 60 * MB       # the user's measured rates
    assert src.estimate(_job("w!6", user="v", rate=10 * MB)).rate == 10 * MB   # another user: stated


CLOCK = [0.0]


def drive(rt, jobs, cluster, source=None):
    """An event loop: submissions at their subtime, completions at start + true run time
    (``CLOCK[0]``: the time of the round being run); ``source`` replaces the runtime's
    knowledge source."""
    rt.begin(cluster, 0.0)
    if source is not None:
        rt.knowledge.source = source
    events = [(j["subtime"], 1, f"w!{k}") for k, j in enumerate(jobs)]
    heapq.heapify(events)
    by_id = {f"w!{k}": j for k, j in enumerate(jobs)}
    ends = {}
    while events:
        now = CLOCK[0] = events[0][0]
        while events and events[0][0] == now:
            _, kind, jid = heapq.heappop(events)
            if kind == 0:
                rt.complete(now, jid)
                ends[jid] = now
            else:
                rt.submit(now, jid, by_id[jid])
        for d in rt.step(now):
            if isinstance(d, Start):
                heapq.heappush(events, (now + by_id[d.job_id]["true_runtime"], 0, d.job_id))
    return rt, ends


@pytest.mark.parametrize("policy", KNOWLEDGE_POLICIES)
def test_learned_never_sees_the_future(policy):
    """Every estimate is made from jobs that had ended by then (randomised workload; with
    conservative, a round can come after the submission: a job outliving its estimate holds
    nodes a kept reservation counts on, and the runtime skips rounds until it ends)."""
    rnd = random.Random(3)
    jobs = [job(rnd.randint(1, 4), wall := rnd.choice([50, 100, 200]), rnd.randint(1, wall),
                rate=10 * MB, true=rnd.choice([5, 10, 40]) * MB, user=rnd.choice("abc"), subtime=rnd.randint(0, 400))
            for _ in range(60)]
    seen_at = {}

    class Spy(Learned):
        def estimate(self, j):
            seen_at[j.id] = (CLOCK[0], set(self.seen))
            return super().estimate(j)

    rt, ends = drive(make_runtime(policy, knowledge="learned"), jobs, Cluster.simple(6), Spy())
    assert len(ends) == 60 and len(seen_at) == 60
    for jid, (when, seen) in seen_at.items():
        assert when >= jobs[int(jid[2:])]["subtime"]
        assert all(ends[s] <= when for s in seen), jid
        assert not seen & {s for s, t in ends.items() if t > when}
    assert sum(len(seen) for _, seen in seen_at.values()) > 100     # it did learn


def test_knowledge_needs_alloc_only():
    rt = make_runtime("fcfs", knowledge="perfect", job_model="io-phased")
    with pytest.raises(ConfigError, match="alloc-only"):
        rt.begin(Cluster.simple(2), 0.0)


def test_knowledge_options_are_checked():
    with pytest.raises(ConfigError, match="knowledge"):
        make_runtime("fcfs-easy", knowledge="oracle")
    with pytest.raises(ConfigError, match="knowledge_noise"):
        make_runtime("conservative-bb", knowledge_noise=-1.0)
    with pytest.raises(ConfigError, match="knowledge_noise"):
        make_runtime("conservative-bb", knowledge_noise=1e308)
    with pytest.raises(ConfigError, match="'knowledge' is an option of the runtime"):
        make_policy("fcfs-easy", knowledge="perfect")


@pytest.mark.parametrize("policy", KNOWLEDGE_POLICIES)
@pytest.mark.parametrize("knowledge", ["noisy", "learned"])
def test_every_job_runs_when_jobs_outlive_their_estimates(policy, knowledge):
    """Estimates below the truth leave jobs running past their reservations; every job must
    still run (conservative once kept a stale plan whose first start no event triggered)."""
    cl = tree_cluster(2, 4, 10_000 * MB, 10_000 * MB, 120 * MB)
    for seed in range(4):
        rnd = random.Random(seed)
        jobs = []
        for _ in range(80):
            wall = rnd.choice([100, 400, 2000])
            user = rnd.choice("abcd")
            jobs.append(job(rnd.randint(1, 6), wall, rnd.randint(1, wall), rate=10 * MB,
                            true=rnd.choice([5, 10, 20]) * MB, user=user, subtime=rnd.randint(0, 3000)))
        rt, ends = drive(make_runtime(policy, io_aware=True, knowledge=knowledge, knowledge_noise=1.0), jobs, cl)
        assert len(ends) == 80 and not rt.queue, (seed, len(ends))


@pytest.mark.parametrize("field, raw, message", [
    ("true_io_bandwidth_per_node", "fast", "expected a number, got 'fast'"),
    ("true_io_bandwidth_per_node", -1.0, "expected a non-negative number, got -1.0"),
    ("true_runtime", [1], "expected a number, got [1]"),
    ("true_runtime", -5, "expected a non-negative number, got -5"),
])
def test_a_bad_truth_field_is_one_error_naming_the_job_and_field(field, raw, message):
    from mrsched.schedulers.execution.knowledge import true_runtime
    fields = {"subtime": 0, "walltime": 10, "res": 1, "profile": "p", field: raw}
    j = job_from_batsim("w!7", fields)
    read = true_rate if field == "true_io_bandwidth_per_node" else true_runtime
    with pytest.raises(WorkloadError) as err:
        read(j)
    text = str(err.value)
    assert message in text and "w!7" in text and field in text
