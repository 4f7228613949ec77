"""Executors run a list of runs: local worker threads (each run is its own child process)
or an existing dask.distributed scheduler.

Local runs need no process pool of their own: ``execute_run`` already puts every simulation
in a child process group, so N threads that each supervise one child give N parallel runs
and keep interruption simple (kill the live groups, let the threads return).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from mrsched.errors import ConfigError
from mrsched.expe import processes
from mrsched.expe.runner import execute_run
from mrsched.expe.spec import RunSpec

Callback = Callable[[RunSpec, dict], None]
WAKE = 0.2  # seconds between the main thread's looks at signals while runs go on


class LocalExecutor:
    """``jobs`` runs at a time on this machine."""

    def __init__(self, *, jobs: int = 1):
        self.jobs = jobs

    def describe(self) -> str:
        return f"local ({self.jobs} at a time)"

    def run(self, specs: Iterable[RunSpec], on_start: Callable[[RunSpec], None],
            on_done: Callback) -> None:
        """Run every spec; ``on_start``/``on_done`` are called from worker threads."""
        def one(spec: RunSpec) -> None:
            on_start(spec)
            on_done(spec, execute_run(spec))  # here, so that "running" counts are exact

        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="mrsched-run")
        try:
            pending = {pool.submit(one, spec) for spec in specs}
            while pending:
                # a bounded wait: a SIGTERM the kernel delivered to a worker thread is only
                # acted on when the main thread runs again (an unbounded wait could last a run)
                done, pending = wait(pending, timeout=WAKE, return_when=FIRST_COMPLETED)
                for fut in done:
                    fut.result()
        except BaseException:
            processes.kill_all()  # before waiting for the threads that supervise them
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """Submits each run to an existing dask.distributed scheduler (``dask://HOST:PORT``).

    Workers must see the campaign directory at the same path (a shared file system).
    ``client`` may be given directly (tests use a LocalCluster's client).
    """

    def __init__(self, *, address: str | None = None, client=None):
        self.address = address
        self.client = client

    def describe(self) -> str:
        return f"dask ({self.address or 'client'})"

    def _client(self):
        if self.client is not None:
            return self.client, False
        try:
            from distributed import Client
        except ImportError as exc:
            raise ConfigError("the dask executor needs 'distributed' (pip install mrsched[dask])",
                              field="executor") from exc
        try:
            return Client(self.address, timeout="10s"), True
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"cannot reach the dask scheduler at {self.address}: {exc}",
                              field="executor") from exc

    def run(self, specs: Iterable[RunSpec], on_start: Callable[[RunSpec], None],
            on_done: Callback) -> None:
        from distributed import as_completed as dask_completed

        client, owned = self._client()
        try:
            futures = {}
            for spec in specs:
                on_start(spec)
                fut = client.submit(execute_run, spec.to_dict(), pure=False,
                                    key=f"mrsched-run-{spec.run_id}-{uuid.uuid4().hex[:8]}")
                futures[fut] = spec
            for fut in dask_completed(list(futures)):
                try:
                    manifest = fut.result()
                except Exception as exc:  # a lost worker: this run failed, the others go on
                    manifest = {"status": "failed", "error": f"dask worker: {type(exc).__name__}: {exc}"}
                on_done(futures[fut], manifest)
        except BaseException:
            client.cancel(list(futures))
            processes.kill_all()  # runs of an in-process worker
            raise
        finally:
            if owned:
                client.close()


def make_executor(text: str | None, *, jobs: int) -> LocalExecutor | DaskExecutor:
    """``local`` (default) or ``dask://HOST:PORT`` (also ``tcp://HOST:PORT``)."""
    if text in (None, "", "local"):
        return LocalExecutor(jobs=jobs)
    for prefix in ("dask://", "tcp://"):
        if text.startswith(prefix):
            host = text[len(prefix):]
            if not host:
                break
            return DaskExecutor(address=f"tcp://{host}")
    raise ConfigError(f"unknown executor '{text}'", field="executor",
                      hint="local or dask://HOST:PORT")
