"""Scheduler CPU of the plan-based policies against an older revision, in one process.

Run on demand (not a test):

    .venv/bin/python bench/bench_plan.py                          # plan-2, 300 jobs of part 1/16
    .venv/bin/python bench/bench_plan.py --policies plan-1 plan-2 --jobs 400 --part 7
    .venv/bin/python bench/bench_plan.py --workload W.json --baseline 40c244b --repeat 2

The baseline revision's ``mrsched`` (scheduler, simulator, platforms, workloads) is exported
with ``git archive`` into a temporary directory under another package name, so both versions
run in this process, interleaved (baseline, current, baseline, current...): on a shared
machine only CPU times measured side by side compare. Each row gives the scheduler CPU
(``time.process_time`` inside ``handle_message``) of both, their ratio, and whether the two
``_jobs.csv`` are byte-identical (the speed work must not change any decision). The I/O-phased
KTH-SP2 workload on dragonfly96 (seed 001's setting) as in ``bench_europar.py``; the default
baseline is the revision before the plan search's fast paths (``earliest_fit``, ``Fit``).
"""

from __future__ import annotations

import argparse
import filecmp
import importlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from bench_europar import TimedScheduler  # noqa: E402  (this folder is on sys.path when run)

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("mrsched", "schedulers", "simulator", "platforms", "workloads", "analysis")
BASE_PKG = "mrsched_baseline"


def export_revision(rev: str, dest: Path, name: str = BASE_PKG) -> None:
    """``git archive`` of ``rev`` laid out as package ``name`` (imports renamed) under ``dest``."""
    tmp = dest / "_export"
    tmp.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, *FOLDERS], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    root = dest / name
    for folder in FOLDERS:
        shutil.copytree(tmp / folder, root if folder == "mrsched" else root / folder, dirs_exist_ok=True)
    pattern = re.compile(r"\bmrsched(?=\.[A-Za-z_])|(?<=from )mrsched(?= import)|(?<=import )mrsched\b")
    for path in root.rglob("*.py"):
        path.write_text(pattern.sub(name, path.read_text()))
    shutil.rmtree(tmp)
    build_compiled(root, rev)


_EXTENSION = re.compile(r'Extension\(\s*"mrsched\.([\w.]+)"\s*,\s*\[([^\]]*)\]')


def extensions(rev: str, root: Path) -> list[tuple[Path, list[Path]]]:
    """The compiled extensions ``rev`` declares in its ``setup.py``: (module file stem under
    ``root``, its sources under ``root``); every ``schedulers/*.c`` alone when it has none."""
    setup = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:setup.py"], capture_output=True, text=True)
    found = []
    for name, sources in _EXTENSION.findall(setup.stdout if setup.returncode == 0 else ""):
        parts = name.split(".")
        files = [root / src for src in re.findall(r'"([^"]+)"', sources)]
        files = [root / f.relative_to(root / "mrsched") if f.is_relative_to(root / "mrsched") else f
                 for f in files]
        found.append((root.joinpath(*parts), files))
    return found or [(src.with_suffix(""), [src]) for src in sorted((root / "schedulers").glob("*.c"))]


def build_compiled(root: Path, rev: str = "HEAD") -> bool:
    """Compile an exported revision's C extensions (as its ``setup.py`` declares them, each
    one optional: an extension of several sources is one module) in place, with this
    Python's compiler and flags, so that the baseline runs as ``pip install`` would have
    built it; whether all it has were built (False: none in that revision, or no compiler,
    and the revision runs its pure-Python twins)."""
    cfg = sysconfig.get_config_vars()
    results = []
    for stem, sources in extensions(rev, root):
        out = stem.with_name(stem.name + cfg["EXT_SUFFIX"])
        cmd = [*(cfg.get("CC") or "cc").split(), *(cfg.get("CFLAGS") or "").split(), "-O2", "-fPIC", "-shared",
               f"-I{sysconfig.get_paths()['include']}", *map(str, sources), "-o", str(out)]
        built = subprocess.run(cmd, capture_output=True, text=True)
        if built.returncode != 0:
            print(f"bench: {stem.name} not compiled, the baseline runs its pure-Python twin:\n"
                  f"{built.stderr[-500:]}", file=sys.stderr)
        results.append(built.returncode == 0)
    return bool(results) and all(results)


def run(pkg: str, policy: str, workload: Path, prefix: Path) -> float:
    registry = importlib.import_module(pkg + ".schedulers.registry")
    engine = importlib.import_module(pkg + ".simulator.engine")
    bundled = importlib.import_module(pkg + ".platforms.bundled")
    sched = TimedScheduler(registry.make_scheduler(policy, {"job_model": "io-phased"}))
    engine.simulate(bundled.bundled_path("dragonfly96"), [str(workload)], sched, export_prefix=str(prefix),
                    dynamic_jobs=True)
    return sched.cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="40c244b", help="git revision to compare with")
    ap.add_argument("--policies", nargs="+", default=["plan-2"])
    ap.add_argument("--workload", type=Path, default=None, help="a Batsim workload (default: made from the trace)")
    ap.add_argument("--trace", type=Path, default=REPO.parent / "shared" / "data" / "KTH-SP2-1996-2.1-cln.swf")
    ap.add_argument("--part", type=int, default=1, help="part of 16 of the trace (default 1)")
    ap.add_argument("--jobs", type=int, default=300, help="first jobs of the part (0: all)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved pairs per policy")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "mrsched-bench-plan")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    workload = args.workload
    if workload is None:
        sys.path.insert(0, str(REPO / "bench"))
        from bench_europar import make_workload
        if not args.trace.exists():
            print(f"trace not found: {args.trace} (give --trace or --workload)", file=sys.stderr)
            return 2
        workload = make_workload(args.trace, args.out, jobs=args.jobs or None, part=(args.part, 16))
    with tempfile.TemporaryDirectory() as tmp:
        export_revision(args.baseline, Path(tmp))
        sys.path.insert(0, tmp)
        print(f"workload {workload}  baseline {args.baseline}")
        print(f"{'policy':>8} | {'baseline cpu s':>14} | {'current cpu s':>13} | {'ratio':>6} | identical _jobs.csv")
        for policy in args.policies:
            for r in range(args.repeat):
                base_prefix = args.out / f"{workload.stem}-{policy}-baseline"
                cur_prefix = args.out / f"{workload.stem}-{policy}-current"
                base = run(BASE_PKG, policy, workload, base_prefix)
                cur = run("mrsched", policy, workload, cur_prefix)
                same = filecmp.cmp(f"{base_prefix}_jobs.csv", f"{cur_prefix}_jobs.csv", shallow=False)
                print(f"{policy:>8} | {base:14.2f} | {cur:13.2f} | {base / cur:6.2f} | {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
