#!/usr/bin/env python3
"""The runtime's services on drawn cases, in process (a developer tool: no Batsim needed; the
tests do not run it).

    python tests/simulator/cases/stress_services.py [--cases 600] [--seed 40]
        [--generated | --cpugpu]

Each case is ``diff_batsim.py``'s platform and workload of its seed (``draw`` with ``-E``,
``draw_generated`` with ``-E``, or ``draw_cpugpu``), run by ``mrsched.simulate`` with a policy
and runtime services drawn from a stream of their own: ``idle_sleep``, a power cap, a decision
cost, a period (the per-core policies take the last two). A run must end with every job run
or rejected: a stall (Batsim would deadlock), a decision the runtime refuses, a wake-up Batsim
would abort on or any other failure is printed. A refused combination (ConfigError) or a cap
below every job (all rejected, with their reason) is no failure. The engine is Batsim's twin,
so what fails here fails under Batsim; ``diff_batsim.py`` then checks the twin itself.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WHOLE_NODES = ["fcfs", "filler", "fcfs-easy", "fcfs-bb", "sjf-bb", "easy-bf", "conservative-bb",
               "plan-1", "plan-2", "bbsched", "naive", "weighted", "constrained-cpu",
               "bin-packing", "multisched"]
PER_CORE = ["slurm-bf", "ipsched", "aucsched"]
COSTS = ["per_event=0.5,per_job=2,per_start=1", "per_job=0.01", "per_start=5"]


def services(rng: random.Random, per_core: bool, policy: str) -> dict:
    options = {}
    if not per_core and rng.random() < 0.5:
        options["idle_sleep"] = rng.choice([1, 5, 60])
    if not per_core and rng.random() < 0.3 and policy != "filler":
        options["power_cap_share"] = rng.choice([0.5, 0.8])
    if rng.random() < 0.3:
        options["decision_cost"] = rng.choice(COSTS)
    if rng.random() < 0.2:
        options["period"] = rng.choice([10, 30, 60])
    return options


def main() -> int:
    import diff_batsim

    import mrsched
    from mrsched.errors import ConfigError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=600)
    ap.add_argument("--seed", type=int, default=40, help="first case's seed")
    kind = ap.add_mutually_exclusive_group()
    kind.add_argument("--generated", action="store_true", help="diff_batsim.draw_generated cases")
    kind.add_argument("--cpugpu", action="store_true", help="diff_batsim.draw_cpugpu cases")
    args = ap.parse_args()
    failed = 0
    for seed in range(args.seed, args.seed + args.cases):
        rng = random.Random(seed * 31 + 7)
        if args.cpugpu:
            case = diff_batsim.draw_cpugpu(seed, rng.random() < 0.5)
            policy = rng.choice(PER_CORE)
        else:
            case = (diff_batsim.draw_generated(seed, True) if args.generated
                    else diff_batsim.draw(seed, True))
            policy = rng.choice(WHOLE_NODES)
        options = services(rng, args.cpugpu, policy)
        with tempfile.TemporaryDirectory() as tmp:
            platform, workload = Path(tmp) / "platform.xml", Path(tmp) / "workload.json"
            platform.write_text(case["platform"])
            workload.write_text(json.dumps(case["workload"]))
            try:
                mrsched.simulate(platform, workload, policy, options, energy=case["energy"])
            except ConfigError:
                continue                      # the combination refused, with its reason
            except Exception as exc:          # noqa: BLE001 (every failure is reported)
                if "was rejected;" in str(exc):
                    continue                  # a cap below every job: all rejected, said so
                failed += 1
                print(f"s{seed} {policy} {options}: {type(exc).__name__}: {str(exc)[:300]}",
                      flush=True)
    print(f"{args.cases} cases, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
