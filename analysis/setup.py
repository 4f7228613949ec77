"""The report's Setup section: what was run, on what, with which code (issue 41 item 7).

Read from what a campaign leaves (``campaign.yaml``: the file as given plus every run), the
runs' manifests (engine, seeds, options, provenance, dates), the platforms (``capacities.
describe_platform``) and the workloads' headers (their generator and its parameters, or the
trace and part they were cut from). Each row is ``(label, HTML)``; nothing here computes a
metric.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

from mrsched.analysis.timeaxis import number_text

#: engine name -> what it is
ENGINE_TEXT = {"embedded": "embedded Batsim-4.2.1-compatible simulator (mrsched.simulator)",
               "batsim": "Batsim", "docker": "Batsim in docker compose"}


def read_campaign_file(directory: Path) -> dict | None:
    """``campaign.yaml`` of a campaign directory (as ``mrsched campaign run`` expands it), or
    None (a run directory, or a directory of runs made otherwise)."""
    import yaml

    path = Path(directory) / "campaign.yaml"
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def policy_order(campaign: dict | None, variants) -> list[str]:
    """The variants in the campaign's order (the order of its runs, which follows its
    ``policies`` list), then any other in name order."""
    order: list[str] = []
    for run in (campaign or {}).get("runs") or []:
        label = ((run or {}).get("labels") or {}).get("policy_label") if isinstance(run, dict) else None
        if label and label not in order:
            order.append(str(label))
    present = list(dict.fromkeys(str(v) for v in variants))
    return [v for v in order if v in present] + sorted(v for v in present if v not in order)


def _bytes(v: float) -> str:
    for unit, f in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= f:
            return f"{number_text(v / f)} {unit}"
    return f"{number_text(v)} B"


def _rate(v: float) -> str:
    return _bytes(v) + "/s"


def _list(values, fmt) -> str:
    return " / ".join(fmt(v) for v in values)


def platform_text(info: dict) -> str:
    """One line of a platform's resources: nodes, cores, GPUs, burst buffer, bandwidths."""
    parts = []
    if info.get("per_core"):
        parts.append(f"{info['nodes']:,} nodes, {info['cores']:,} cores "
                     f"(one Batsim resource per core)")
    else:
        cores = info.get("cores", info["nodes"])
        each = "1 core each" if cores == info["nodes"] else f"{cores:,} cores"
        parts.append(f"{info['nodes']:,} compute nodes ({each})")
    parts.append(f"{info['gpus']:,} GPUs" if info.get("gpus") else "no GPUs")
    if info.get("storage"):
        per = _list(info["bb_per_node"], _bytes)
        parts.append(f"burst buffer: {info['storage']:,} storage nodes x {per} = "
                     f"{_bytes(info['bb_total'])}")
    else:
        parts.append("no burst buffer")
    if info.get("pfs_bw"):
        parts.append(f"PFS {_rate(info['pfs_bw'])}")
    if info.get("edge_bw"):
        parts.append(f"{info['edges']:,} edge switches of {_list(info['edge_bw'], _rate)}")
    if info.get("core_bw"):
        parts.append(f"core {_rate(info['core_bw'])}")
    if info.get("node_bw"):
        parts.append(f"node links {_list(info['node_bw'], _rate)}")
    return "; ".join(parts)


def _generator_text(gen: dict) -> str:
    """A workload generator's parameters, the seed aside (a row of its own): "jobs 300, mean
    interarrival 120, ..."."""
    skip = {"command", "seed", "cleaning"}
    parts = []
    for key, value in gen.items():
        if key in skip or value is None:
            continue
        if isinstance(value, list):
            value = "/".join(str(v) for v in value) if key == "part" else ", ".join(str(v) for v in value)
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        unit = " s" if key.endswith(("interarrival", "runtime", "walltime")) and \
            isinstance(value, (int, float)) else ""
        parts.append(f"{key.replace('_', ' ')} {value}{unit}")
    return ", ".join(parts)


def _spec_text(entry) -> str:
    """A campaign's platform / workload entry as the user wrote it: ``generate: synthetic,
    jobs: 300`` -> "mrsched workload synthetic --jobs 300"."""
    if isinstance(entry, str):
        return entry
    if not isinstance(entry, dict):
        return ""
    entry = dict(entry)
    entry.pop("name", None)
    if "path" in entry:
        return str(entry.pop("path"))
    if "generate" in entry:
        head = f"{entry.pop('generate')}"
    elif "swf" in entry:
        head = f"swf {Path(str(entry.pop('swf'))).name}"
    else:
        head = ""
    flags = " ".join(f"--{str(k).replace('_', '-')} {v}" for k, v in entry.items())
    return f"{head} {flags}".strip()


def _campaign_entries(campaign: dict | None, key: str) -> dict[str, str]:
    """Campaign entry name -> the entry as written (``_spec_text``), for platforms/workloads."""
    out = {}
    for entry in (campaign or {}).get(key) or []:
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(entry, dict) and not name:
            name = entry.get("generate") or (Path(str(entry.get("swf"))).stem if "swf" in entry
                                              else Path(str(entry.get("path", ""))).stem)
        elif isinstance(entry, str):
            name = Path(entry).stem
        if name:
            out[str(name)] = _spec_text(entry)
    return out


def _e(text) -> str:
    return html.escape(str(text))


def _code(text) -> str:
    return f"<code>{_e(text)}</code>"


def setup_rows(directory: Path, runs: list, campaign: dict | None, order: list[str], *,
               tau: float) -> list[tuple[str, str]]:
    """The Setup section's rows for the runs of ``directory`` (``runs``: loaded runs, tables
    dropped) and its ``campaign.yaml`` (or None)."""
    from mrsched.analysis.capacities import describe_platform
    from mrsched.analysis.jobs import workload_header
    from mrsched.analysis.runs import _paths, _resolve, _roles
    from mrsched.errors import MrschedError

    rows: list[tuple[str, str]] = []
    statuses = Counter(r.status for r in runs)
    count = ", ".join(f"{n:,} {s}" for s, n in sorted(statuses.items()))
    if campaign is not None:
        name = campaign.get("name") or Path(directory).name
        desc = campaign.get("description")
        source = campaign.get("source")
        rows.append(("Campaign", f"<b>{_e(name)}</b>" + (f": {_e(desc)}" if desc else "")
                     + (f"<br>file {_code(source)}" if source else "")
                     + f"; {len(runs):,} runs ({count}) in {_code(Path(directory).resolve())}"))
    else:
        what = "Run" if len(runs) == 1 else "Runs"
        ids = ", ".join(_code(r.run_id) for r in runs[:6]) + (f" and {len(runs) - 6:,} more" if len(runs) > 6 else "")
        rows.append((what, f"{ids} ({count}) in {_code(Path(directory).resolve())}"))

    # platforms: one line each, by campaign name (else file)
    plat_entries = _campaign_entries(campaign, "platforms")
    seen: dict[str, str] = {}
    for run in runs:
        m = run.manifest
        key = str(m.get("platform_name") or "") or ";".join(_paths(m.get("platform")))
        if key in seen or not key:
            continue
        paths = _paths(m.get("platform"))
        resolved = _resolve(paths[0], run.path) if paths else None
        if resolved is None:
            seen[key] = f"{_e(key)}: file not found"
            continue
        try:
            info = describe_platform(resolved, _roles(m), bb_capacity=m.get("bb_capacity"))
        except MrschedError as exc:
            seen[key] = f"{_e(key)}: not read ({_e(exc)})"
            continue
        text = f"<b>{_e(key)}</b>: {_e(platform_text(info))}"
        how = plat_entries.get(str(m.get("platform_name") or ""))
        if how and not how.endswith(".xml"):
            text += f"<br>made by {_code('mrsched platform ' + how)}"
        elif info.get("generated"):
            text += f"<br><span class=\"note\">{_e(info['generated'])}</span>"
        else:
            text += f" ({_code(resolved.name)})"
        seen[key] = text
    if seen:
        rows.append(("Platform" if len(seen) == 1 else "Platforms", "<br>".join(seen.values())))

    # workloads: by campaign name, the first file of each (its generator's parameters)
    wl_entries = _campaign_entries(campaign, "workloads")
    wl: dict[str, str] = {}
    for run in runs:
        m = run.manifest
        key = str(m.get("workload_name") or "") or ";".join(Path(p).name for p in _paths(m.get("workload")))
        if key in wl or not key:
            continue
        paths = _paths(m.get("workload") or m.get("workloads"))
        resolved = _resolve(paths[0], run.path) if paths else None
        head = {}
        if resolved is not None:
            try:
                head = workload_header(resolved)
            except MrschedError:
                head = {}
        gen = head.get("generator") if isinstance(head.get("generator"), dict) else {}
        text = f"<b>{_e(key)}</b>"
        if head.get("description"):
            text += f": {_e(head['description'])}"
        if gen:
            command = gen.get("command", "")
            params = _generator_text(gen)
            text += f"<br>generator {_code('mrsched workload ' + str(command))}" + (f": {_e(params)}" if params else "")
        how = wl_entries.get(str(m.get("workload_name") or ""))
        if how and not gen:
            text += f"<br>from {_code(how)}"
        if m.get("part"):
            text += f"; part {_e(m['part'])}"
        wl[key] = text
    if wl:
        shown = list(wl.values())
        more = len(shown) - 8
        rows.append(("Workload" if len(wl) == 1 else "Workloads",
                     "<br>".join(shown[:8]) + (f"<br>... and {more:,} more" if more > 0 else "")))

    seeds = sorted({int(r.manifest["seed"]) for r in runs
                    if isinstance(r.manifest.get("seed"), (int, float)) and not isinstance(r.manifest.get("seed"), bool)})
    if seeds:
        names = {str(r.manifest.get("workload_name") or "") for r in runs}
        files = {";".join(_paths(r.manifest.get("workload"))) for r in runs}
        own = "; each seed generates its own workload" if len(files) > len(names) else ""
        rows.append(("Seeds", f"{_seed_text(seeds)} ({len(seeds):,} seed{'s' if len(seeds) != 1 else ''}"
                     f"{own})"))
    else:
        rows.append(("Seeds", "none (no run takes a seed)"))

    rows.append(("Policies", _policies_text(runs, order)))

    engines = Counter(str(r.manifest.get("engine") or "") for r in runs)
    parts = []
    for engine, n in engines.items():
        if not engine:
            continue
        text = ENGINE_TEXT.get(engine, engine)
        versions = {str((r.manifest.get("versions") or {}).get("batsim")) for r in runs
                    if r.manifest.get("engine") == engine and (r.manifest.get("versions") or {}).get("batsim")}
        if versions:
            text += f" ({', '.join(sorted(versions))})"
        parts.append(_e(text) + (f" ({_runs(n)})" if len(engines) > 1 else ""))
    timeouts = {r.manifest.get("timeout") for r in runs if r.manifest.get("timeout")}
    if len(timeouts) == 1:
        parts.append(f"timeout {number_text(float(next(iter(timeouts))))} s per run")
    rows.append(("Engine", "; ".join(parts) or "not recorded"))
    rows.append(("mrsched", _provenance_text(runs)))
    rows.append(("Date", _dates_text(runs)))
    rows.append(("Metrics", f"over executed jobs (rejected jobs are only counted; Batsim's own "
                            f"mean_* in _schedule.csv include them); bounded slowdown threshold "
                            f"&tau; = {number_text(float(tau))} s"))
    return rows


def _seed_text(seeds: list[int]) -> str:
    """1, 2, 3, 5 -> "1-3, 5"."""
    out, start = [], seeds[0]
    for a, b in zip(seeds, seeds[1:] + [None]):
        if b != a + 1:
            out.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return ", ".join(out)


def _policies_text(runs: list, order: list[str]) -> str:
    """The variants in campaign order, each with its policy and options (seed aside)."""
    by_variant: dict[str, object] = {}
    for run in runs:
        by_variant.setdefault(run.variant, run)
    if not any(r.policy for r in runs):
        return "not recorded (no manifest names a policy)"
    lines = []
    for variant in order:
        run = by_variant.get(variant)
        if run is None:
            continue
        opts = {k: v for k, v in run.options.items() if k != "seed"}
        text = _code(variant)
        if run.policy and run.policy != variant:
            text += f" = {_code(run.policy)}"
        if opts:
            text += " with " + ", ".join(f"{_e(k)}={_e(v)}" for k, v in sorted(opts.items()))
        lines.append(text)
    note = ("<br><span class=\"note\">other options at their defaults: "
            "<code>mrsched policies NAME</code> lists them</span>")
    return ", ".join(lines) + note


def _provenance_text(runs: list) -> str:
    """The code that made the runs: version and commit (tree modified or not), or the
    installed version; several when runs differ, each with its count."""
    seen: Counter = Counter()
    for run in runs:
        prov = run.manifest.get("provenance")
        version = (run.manifest.get("versions") or {}).get("mrsched", "?")
        if isinstance(prov, dict) and prov.get("source") == "git" and prov.get("commit"):
            text = (f"{prov.get('mrsched', version)}, commit {str(prov['commit'])[:12]}"
                    + (" (tree modified)" if prov.get("modified") else ""))
        elif isinstance(prov, dict):
            text = f"{prov.get('mrsched', version)} (installed, not a git checkout)"
        elif "versions" in run.manifest:
            text = f"{version} (commit not recorded)"
        else:
            text = "not recorded in the run's manifest"
        seen[text] += 1
    if len(seen) == 1:
        return _e(next(iter(seen)))
    return "; ".join(f"{_e(t)} ({_runs(n)})" for t, n in seen.most_common())


def _runs(n: int) -> str:
    return f"{n:,} run" + ("s" if n != 1 else "")


def _dates_text(runs: list) -> str:
    """First start to last finish of the runs (UTC, from their manifests)."""
    starts = sorted(str(r.manifest["started"]) for r in runs if r.manifest.get("started"))
    ends = sorted(str(r.manifest["finished"]) for r in runs if r.manifest.get("finished"))
    if not starts:
        return "not recorded"

    def short(stamp: str) -> tuple[str, str]:
        day, _, time = stamp.partition("T")
        return day, time[:5]

    d0, t0 = short(starts[0])
    d1, t1 = short(ends[-1] if ends else starts[-1])
    return f"runs made {d0} {t0} to {'' if d1 == d0 else d1 + ' '}{t1} UTC"
