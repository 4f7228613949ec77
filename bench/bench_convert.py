"""Peak memory of converting a million-job SWF trace (run on demand).

    .venv/bin/python bench/bench_convert.py [--jobs 1000000] [--keep DIR]

Writes a synthetic SWF of ``--jobs`` records (8-core nodes, requests 8..1,024 processors),
then converts it in a fresh process each way and reports the peak resident memory
(``ru_maxrss`` of the child) and its CPU seconds (user + system; wall time swings with the
shared machine's load):

- ``stream``: ``mrsched workload swf`` as shipped (columns, then one job at a time to the file);
- ``dict``: the same conversion written from the full workload dict (``conv.workload``).

Both files must have the same bytes (checked). Measured on the 2-core shared machine
(1,000,000 jobs, 68 MB trace, 153 MB workload); "before" is the code before this change
(list-of-floats reader, full dict, checked whole, written from one string), run by hand with
the same steps as ``mrsched workload swf``:

=======================================  ============  =============
path                                     peak RSS      CPU s
=======================================  ============  =============
before: reader, dict, check, dumps        1,912 MB      15.5 (user)
dict: array reader, dict, streamed write    828 MB      13.0
stream (shipped)                            325 MB      15.0
=======================================  ============  =============

The reader alone went from 1,039 MB to 175 MB on this trace (a flat array of doubles instead
of a list of 18 floats per record).
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

DICT_PATH = """
import sys
from mrsched.workloads.batsim_json import write_workload
from mrsched.workloads.convert import convert_swf
write_workload(sys.argv[2], convert_swf(sys.argv[1]).workload)
"""


def write_trace(path: Path, jobs: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    cols = np.full((jobs, 18), -1, dtype=np.int64)
    cols[:, 0] = np.arange(1, jobs + 1)
    cols[:, 1] = np.cumsum(rng.integers(0, 60, jobs))
    cols[:, 2] = 0
    cols[:, 3] = rng.integers(1, 20000, jobs)
    cols[:, 7] = cols[:, 4] = rng.choice([8, 16, 32, 64, 128, 256, 512, 1024], jobs)
    cols[:, 8] = cols[:, 3] + rng.integers(0, 5000, jobs)
    cols[:, 10] = 1
    with open(path, "w") as out:
        out.write("; MaxNodes: 1152\n; MaxProcs: 9216\n")
        np.savetxt(out, cols, fmt="%d")


def measure(argv: list[str]) -> tuple[float, float]:
    """Peak RSS (MB) and CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if after.ru_maxrss <= before.ru_maxrss:  # the max over all children so far: run the larger last
        print("  (peak not above an earlier child's: reported as <=)", file=sys.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return after.ru_maxrss / 1024, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--keep", help="directory for the trace and outputs (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        trace = where / "big.swf"
        write_trace(trace, args.jobs)
        streamed, whole = where / "stream.json", where / "dict.json"
        # the smaller peak first: ru_maxrss of RUSAGE_CHILDREN only ever grows
        s_peak, s_cpu = measure([sys.executable, "-m", "mrsched.cli", "workload", "swf", str(trace),
                                  "-o", str(streamed)])
        d_peak, d_cpu = measure([sys.executable, "-c", DICT_PATH, str(trace), str(whole)])
        same = hashlib.sha256(streamed.read_bytes()).digest() == hashlib.sha256(whole.read_bytes()).digest()
        print(f"{args.jobs} jobs, trace {trace.stat().st_size / 1e6:.0f} MB, workload "
              f"{streamed.stat().st_size / 1e6:.0f} MB, same bytes: {same}")
        print(f"stream  peak {s_peak:7.0f} MB  {s_cpu:6.1f} cpu s")
        print(f"dict    peak {d_peak:7.0f} MB  {d_cpu:6.1f} cpu s")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
