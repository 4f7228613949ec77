"""Fuzz: every registered policy on generated small workloads run by the embedded engine
(walltime kills, jobs without walltime, equal submission times) on three kinds of generated
machine: clusters with burst-buffer storage, per-core CPU+GPU machines and I/O trees.
Invariant (tests/fuzzing.py ``fuzz_run``): a clean error that is not the scheduler's own bug,
or a run that ends with every job completed, killed at its walltime or rejected with its
reason; no resource running two jobs at once, no start before submission."""

from __future__ import annotations

from hypothesis import event, given, strategies as st

from fuzzing import budget, fuzz_run
from mrsched.platforms.cluster import generate_cluster
from mrsched.platforms.iotree import generate_iotree
from mrsched.schedulers import registry

POLICIES = sorted(registry.POLICIES)


@st.composite
def cases(draw):
    nodes = draw(st.integers(1, 6))
    storage = draw(st.integers(0, 2))
    jobs, profiles, t = [], {}, 0.0
    for i in range(draw(st.integers(1, 10))):
        t += draw(st.sampled_from([0.0, 0.0, 1.0, 7.5, 60.0]))
        run = draw(st.sampled_from([1, 5, 30, 100]))
        loaded = draw(st.booleans())
        name = f"{'c' if loaded else 'd'}{run}"
        profiles[name] = ({"type": "parallel_homogeneous", "cpu": run * 1e9, "com": 0} if loaded
                          else {"type": "delay", "delay": run})
        job = {"id": i, "subtime": t, "res": draw(st.integers(1, nodes)), "profile": name,
               "walltime": draw(st.sampled_from([-1, run, run + 20, max(1, run // 3), 1000]))}
        if storage and draw(st.booleans()):
            job["burst_buffer"] = draw(st.sampled_from([1, 10**9, 2 * 10**10, 10**11]))
        jobs.append(job)
    workload = {"nb_res": nodes, "jobs": jobs, "profiles": profiles}
    policy = draw(st.sampled_from(POLICIES))
    declared = registry.scheduler_parameters(policy)
    options = {}
    for name, values in OPTIONS.items():
        if name in declared and draw(st.booleans()):
            options[name] = draw(st.sampled_from(values))
    return nodes, storage, workload, policy, options


#: runtime services and common knobs, drawn where the policy declares them
OPTIONS = {"period": ["0", "5", "60"], "decision_cost": ["none", "per_event=0.5", "per_job=3"],
           "knowledge": ["requested", "perfect", "noisy", "learned"], "order": ["sjf", "largest"],
           "compression": ["rebuild"], "depth": ["1", "2"], "window": ["2", "10"],
           "leaf_policy": ["fcfs-easy", "conservative-bb", "sjf-bb"]}


@budget(40)
@given(cases())
def test_fuzz_every_policy(case):
    nodes, storage, workload, policy, options = case
    platform = generate_cluster(nodes=nodes, storage=storage, bb_capacity="20GB", pfs=False)
    finished = fuzz_run(platform, workload, policy, options)
    event("ran" if finished else f"refused: {policy}")


@st.composite
def core_cases(draw):
    """A per-core CPU+GPU machine (one host a core: seed 002's platforms) and jobs asking
    cores, whole nodes' cores or GPUs (the fields of ``workloads/cpugpu.py``)."""
    nodes, cores, gpus = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(0, 2))
    jobs, t = [], 0.0
    for i in range(draw(st.integers(1, 8))):
        t += draw(st.sampled_from([0.0, 0.0, 2.0, 30.0]))
        run = draw(st.sampled_from([1, 10, 50]))
        n = draw(st.integers(1, nodes * cores))
        job = {"id": i, "subtime": t, "res": n, "profile": f"d{run}",
               "walltime": draw(st.sampled_from([-1, run, run + 10, max(1, run // 2)]))}
        shape = draw(st.sampled_from(["cores", "per_node", "gpus"]))
        if shape == "per_node" and n <= cores:
            job.update(nodes=1, cores_per_node=n)
        elif shape == "gpus" and gpus and n <= cores:
            job.update(nodes=1, cores_per_node=n, gpus_per_node=draw(st.integers(1, gpus)))
        jobs.append(job)
    profiles = {f"d{r}": {"type": "delay", "delay": r} for r in (1, 10, 50)}
    return (nodes, cores, gpus, {"nb_res": nodes * cores, "jobs": jobs, "profiles": profiles},
            draw(st.sampled_from(POLICIES)))


@budget(30)
@given(core_cases())
def test_fuzz_every_policy_per_core(case):
    nodes, cores, gpus, workload, policy = case
    platform = generate_cluster(nodes=nodes, cores=cores, gpus=gpus, pfs=False)
    finished = fuzz_run(platform, workload, policy, {})
    event("ran" if finished else f"refused: {policy}")


@st.composite
def io_cases(draw):
    """A small I/O tree (seed 004's CTS-1 shape) and jobs stating an I/O rate per node, run
    with the runtime's I/O-awareness, its knowledge sources and the contention model where
    the policy takes them."""
    units, per_unit = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    nodes = units * per_unit
    jobs, t = [], 0.0
    for i in range(draw(st.integers(1, 8))):
        t += draw(st.sampled_from([0.0, 0.0, 3.0, 40.0]))
        run = draw(st.sampled_from([2, 20, 90]))
        job = {"id": i, "subtime": t, "res": draw(st.integers(1, nodes)), "profile": f"d{run}",
               "walltime": draw(st.sampled_from([-1, run, run + 30, max(1, run // 2)]))}
        if draw(st.booleans()):
            job["io_bandwidth_per_node"] = draw(st.sampled_from([0.0, 1e6, 5e8, 3e9, 5e10]))
        jobs.append(job)
    profiles = {f"d{r}": {"type": "delay", "delay": r} for r in (2, 20, 90)}
    policy = draw(st.sampled_from(POLICIES))
    declared = registry.scheduler_parameters(policy)
    options = {}
    for name, values in {"io_aware": ["true", "false"], "io_model": ["none", "contention"],
                         "knowledge": ["requested", "perfect", "noisy"]}.items():
        if name in declared and draw(st.booleans()):
            options[name] = draw(st.sampled_from(values))
    return (units, per_unit, {"nb_res": nodes, "jobs": jobs, "profiles": profiles}, policy,
            options)


@budget(30)
@given(io_cases())
def test_fuzz_every_policy_on_an_io_tree(case):
    units, per_unit, workload, policy, options = case
    platform = generate_iotree(units=units, nodes_per_unit=per_unit, edge_bandwidth="2GBps",
                               core_bandwidth="3GBps", pfs_bandwidth="4GBps")
    finished = fuzz_run(platform, workload, policy, options)
    event("ran" if finished else f"refused: {policy}")
