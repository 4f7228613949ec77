"""Experiments: one run (``mrsched run``) and campaigns of runs (``mrsched campaign``).

- ``spec.RunSpec`` — one run's inputs, policy and engine (a plain, picklable value);
- ``runner.execute_run(spec) -> manifest`` — the run directory, manifest written last;
- ``engines`` — embedded (child process), Batsim binary + ``mrsched serve``, docker compose;
- ``processes`` — process groups killed on timeout, failure or interruption;
- ``guard`` — the parent of every engine process: kills its group when mrsched dies;
- ``lock`` — one ``campaign run`` at a time per campaign directory;
- ``campaign`` — YAML loading, validation, input generation, expansion into runs;
- ``executors`` — local worker threads or an existing dask.distributed scheduler;
- ``launch.run_campaign`` / ``campaign_status`` — resume, progress, report.
"""
