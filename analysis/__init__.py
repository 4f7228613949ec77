"""analysis — per-job tables, metrics, campaign statistics, plots and the HTML report.

Public API (imported lazily so that ``mrsched --help`` does not load pandas):
``load_run(run_dir) -> Run``, ``job_table(jobs_csv, workload=None) -> DataFrame``,
``run_metrics(jobs_df, *, tau=600.0, capacities=None) -> dict``,
``campaign_metrics(campaign_dir) -> DataFrame``,
``write_report(dir, out=None, baseline=None) -> Path``.
"""

from __future__ import annotations

_EXPORTS = {
    "load_run": "mrsched.analysis.runs",
    "Run": "mrsched.analysis.runs",
    "job_table": "mrsched.analysis.jobs",
    "run_metrics": "mrsched.analysis.metrics",
    "campaign_metrics": "mrsched.analysis.campaign",
    "write_report": "mrsched.analysis.report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'mrsched.analysis' has no attribute {name!r}")
