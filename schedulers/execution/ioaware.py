"""I/O-awareness applied by the runtime to a round (seed 004 Sect. 3.2.4): the new jobs whose
bandwidth can never be given are rejected with the reason, and the round's profile is
bandwidth-aware, holding the running jobs' bandwidth and that of the reservations the policy
keeps across rounds."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from mrsched.schedulers.model.job import Job
from mrsched.schedulers.profile.availability import AvailabilityProfile, Reservation
from mrsched.schedulers.profile.bandwidth import BandwidthProfile, BandwidthTree, IoAwareProfile


def running_bandwidth(tree: BandwidthTree, now: float, running: Mapping[str, Any], hold: float = 1.0):
    """``(nodes, rate, end)`` of the runtime's running jobs; a job at or past its reservation's
    end (walltime reached, not reported ended yet) is held ``hold`` seconds more, as the runtime does."""
    for run in running.values():
        rate = run.job.request.io_bandwidth_per_node
        if rate:
            yield run.allocation.nodes, rate, max(run.reservation.end, now + hold)


def unrunnable(tree: BandwidthTree, jobs: Iterable[Job]) -> Iterator[tuple[Job, str]]:
    """The jobs whose bandwidth can never be given, even on the empty tree, with the reason."""
    for job in jobs:
        if job.request.io_bandwidth_per_node:
            reason = tree.infeasible_reason(job.request)
            if reason is not None:
                yield job, reason


def io_profile(profile: AvailabilityProfile, tree: BandwidthTree, now: float, running: Mapping[str, Any],
               jobs: Mapping[str, Job], kept: Iterable[Reservation], hold: float) -> IoAwareProfile:
    """This round's bandwidth-aware view of ``profile``: the running jobs' bandwidth (each held
    ``hold`` s past its reservation when it overruns), then that of the ``kept`` reservations
    (a policy's plan), in their order; ``jobs`` (waiting, by id) give a reservation's rate."""
    bandwidth = BandwidthProfile.of_running(tree, now, running_bandwidth(tree, now, running, hold))
    io = IoAwareProfile(profile, tree, bandwidth, jobs)
    for reservation in kept:
        io.hold(reservation)
    return io
