"""Campaign files: load, validate (before anything runs), generate inputs, expand into runs.

A campaign YAML names platforms, workloads, policies with option grids, seeds, the engine,
parallelism, timeout and the output directory (see ``studies/quickstart.yaml``)::

    name: quickstart
    engine: embedded          # embedded | batsim | docker
    timeout: 120              # seconds per run
    parallelism: 2
    seeds: [1, 2]             # or "1-2"
    platforms:
      - {generate: dragonfly, name: dragonfly}     # flags of `mrsched platform dragonfly`
      - path/to/platform.xml                        # relative to this file
      - {path: dragonfly96.xml, roles: ["node_8,node_17:storage"], bb_capacity: 40GB}
    workloads:
      - {generate: synthetic, jobs: 300}            # flags of `mrsched workload synthetic`
      - {swf: trace.swf, jobs: 1000, part: [1/16, 2/16], model: burst-buffer}  # 2 workloads
      - path/to/workload.json
    policies:
      - fcfs
      - {policy: sjf-bb, options: {depth: [1, 2]}}  # a list is a grid axis

Generator specs are the generator's own command-line flags (``groups: 3`` is ``--groups 3``),
checked against that command's parser before anything runs. A generated workload without a
``seed`` gets each campaign seed; a policy with a ``seed`` parameter gets it too; a
combination that uses no seed runs once. Generated inputs are written once into
``<campaign dir>/inputs/``, named by the hash of what produced them, and reused.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from mrsched.errors import ConfigError, suggest
from mrsched.atomic import sha256_file, stable_hash, write_atomic
from mrsched.expe.spec import ENGINES, RunSpec
from mrsched.expe.validation import check_policy, check_values, read_workload, with_seed

TOP_KEYS = {"name", "description", "output", "engine", "batsim", "timeout", "parallelism",
            "seeds", "platforms", "workloads", "policies", "report"}
POLICY_KEYS = {"policy", "options", "name"}
DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class InputSpec:
    """A platform or workload: a file, or the generator command that writes it."""

    kind: str  # platform | workload
    name: str
    path: str | None = None  # an existing file
    command: tuple[str, ...] = ()  # `mrsched` argv (without -o) for a generated one
    seeded: bool = False  # takes the campaign seed (generator has --seed, spec has none)
    needs_platform: bool = False  # generator takes --platform
    key: str = ""  # stable hash of what produces it
    part: str | None = None  # a trace part such as "3/16" (recorded in run manifests)
    roles: tuple[str, ...] = ()  # a platform's Batsim -r specs
    bb_capacity: int | None = None  # a platform's capacity for storage hosts without one
    compute_sharing: bool = False  # the platform is run with Batsim's --enable-compute-sharing
    energy: bool = False  # the platform is run with Batsim's -E (energy model)


@dataclass(frozen=True)
class PolicySpec:
    policy: str
    options: dict
    label: str
    takes_seed: bool


@dataclass
class Campaign:
    file: str
    name: str
    output: Path
    engine: str
    batsim: str | None
    timeout: float | None
    parallelism: int
    seeds: list[int]
    platforms: list[InputSpec]
    workloads: list[InputSpec]
    policies: list[PolicySpec]
    report: bool = True
    raw: dict = field(default_factory=dict)

    @property
    def runs_dir(self) -> Path:
        return self.output / "runs"

    @property
    def inputs_dir(self) -> Path:
        return self.output / "inputs"


# ---------------------------------------------------------------- loading and validation

def _err(message: str, file: str, key: str | None = None, hint: str | None = None):
    return ConfigError(message, file=file, field=key, hint=hint)


def _check_keys(data: dict, valid: set[str], file: str, where: str) -> None:
    for key in data:
        if key not in valid:
            raise _err(f"unknown key '{key}'", file, f"{where}{key}", suggest(str(key), valid))


def parse_seeds(value, file: str) -> list[int]:
    """``1``, ``[1, 2]``, ``"1-3"`` or ``"1,2,5"`` -> a list of ints."""
    if value is None:
        return [0]
    if isinstance(value, bool):
        raise _err("seeds must be integers", file, "seeds")
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        seeds: list[int] = []
        for part in value.replace(" ", "").split(","):
            m = re.fullmatch(r"(-?\d+)(?:-(-?\d+))?", part)
            if not m:
                raise _err(f"cannot read seeds '{value}'", file, "seeds", "e.g. 1-3 or 1,2,5")
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            if hi < lo:
                raise _err(f"seeds '{value}': the range {lo}-{hi} is empty", file, "seeds",
                           f"write {hi}-{lo}")
            seeds.extend(range(lo, hi + 1))
        return seeds
    if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool)
                                                  for s in value):
        return list(value)
    raise _err("seeds must be an int, a list of ints or a range such as '1-3'", file, "seeds")


def _subcommand_options(command: list[str]) -> set[str] | None:
    """Long option names (without --) of an ``mrsched`` subcommand, None if it is absent."""
    import argparse

    from mrsched.cli import build_parser

    parser = build_parser()
    for word in command:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            return None
        parser = subs[0].choices[word]
    return {opt[2:] for a in parser._actions for opt in a.option_strings if opt.startswith("--")}


def _generator_choices(group: str) -> list[str]:
    import argparse

    from mrsched.cli import build_parser

    parser = build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs or group not in subs[0].choices:
        return []
    inner = [a for a in subs[0].choices[group]._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(inner[0].choices) if inner else []


def missing_file_hint(path: Path) -> str:
    """A suggestion for a file that is not there: close names beside it, or the folder."""
    import difflib

    parent = path.parent
    if not parent.is_dir():
        return f"the folder {parent} does not exist either"
    names = [p.name for p in parent.iterdir() if p.is_file()]
    close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.5)
    if close:
        return f"did you mean {parent / close[0]}?"
    if path.suffix in (".swf", ".gz"):
        return "`mrsched workload fetch NAME` downloads a trace and prints its path"
    return "paths are relative to the campaign file's folder"


def _flag_args(params: dict, valid: set[str], file: str, where: str,
               base: Path) -> list[str]:
    """Spec keys -> command-line flags, each checked against the generator's parser."""
    argv: list[str] = []
    for key, value in params.items():
        flag = str(key).replace("_", "-")
        if flag not in valid:
            raise _err(f"unknown generator option '{key}'", file, f"{where}{key}",
                       suggest(flag, valid - {"help", "output", "out", "describe"}))
        if flag == "platform":
            raise _err("the platform of a generated workload is the campaign's", file,
                       f"{where}{key}")
        if isinstance(value, bool):
            if value:
                argv.append(f"--{flag}")
            continue
        if isinstance(value, list):  # a multi-valued flag (argparse nargs)
            argv += [f"--{flag}", *(str(v) for v in value)]
            continue
        if isinstance(value, dict):
            raise _err(f"generator option '{key}' must be a value or a list", file, f"{where}{key}")
        text = str(value)
        if flag in {"swf", "trace", "source", "input"}:
            path = (base / text).resolve()
            if not path.is_file():
                raise _err(f"{flag} file not found: {path}", file, f"{where}{key}",
                           missing_file_hint(path))
            text = str(path)
        argv += [f"--{flag}", text]
    return argv


def _input(kind: str, item, index: int, file: str, base: Path) -> InputSpec:
    where = f"{kind}s[{index}]."
    if isinstance(item, str):
        item = {"path": item}
    if not isinstance(item, dict):
        raise _err(f"a {kind} is a path or a mapping", file, f"{kind}s[{index}]")
    item = dict(item)
    name = item.pop("name", None)
    energy = item.pop("energy", False) if kind == "platform" else False
    if not isinstance(energy, bool):
        raise _err(f"energy must be true or false, got {energy!r}", file, f"{where}energy")
    if "path" in item:
        allowed = {"path", "roles", "bb_capacity", "compute_sharing"} if kind == "platform" else {"path"}
        extra = set(item) - allowed
        if extra:
            key = sorted(extra)[0]
            raise _err(f"unknown key '{key}' beside 'path'", file, f"{where}{key}",
                       suggest(key, allowed | {"name"} | ({"energy"} if kind == "platform"
                                                          else set())))
        roles, bb_capacity = _storage_keys(item, file, where)
        path = (base / str(item["path"])).resolve()
        if not path.is_file():
            raise _err(f"{kind} file not found: {path}", file, f"{where}path",
                       missing_file_hint(path))
        if kind == "workload":  # parsed now: a bad workload is found before anything runs
            read_workload(path, file=file, key=f"{where}path", engine="any")   # engine's own: at launch
        sharing = item.get("compute_sharing", False)
        if not isinstance(sharing, bool):
            raise _err(f"compute_sharing must be true or false, got {sharing!r}", file,
                       f"{where}compute_sharing")
        return InputSpec(kind, str(name or path.stem), path=str(path), key=sha256_file(path)[:12],
                         roles=roles, bb_capacity=bb_capacity, compute_sharing=sharing,
                         energy=energy)
    if kind == "workload" and "swf" in item:
        trace = (base / str(item.pop("swf"))).resolve()
        if not trace.is_file():
            raise _err(f"SWF trace not found: {trace}", file, f"{where}swf",
                       missing_file_hint(trace))
        command = ["workload", "swf"]
        options = _subcommand_options(command)
        if options is None:
            raise _err("the SWF converter (`mrsched workload swf`) is not installed", file,
                       f"{where}swf")
        argv = command + [str(trace)] + _flag_args(item, options, file, where, base)
        label = name or f"{trace.stem}" + (f"-p{str(item.get('part')).split('/')[0]}"
                                           if "part" in item else "")
    elif "generate" in item:
        gen = str(item.pop("generate"))
        group = "platform" if kind == "platform" else "workload"
        choices = [c for c in _generator_choices(group) if c not in {"check", "swf", "bundled"}]
        options = _subcommand_options([group, gen]) if gen in choices else None
        if options is None:
            raise _err(f"unknown {kind} generator '{gen}'", file, f"{where}generate",
                       suggest(gen, choices) if choices else
                       f"`mrsched {group}` is not installed")
        argv = [group, gen] + _flag_args(item, options, file, where, base)
        label = name or gen
    else:
        raise _err(f"a {kind} needs 'path', 'generate'" + (" or 'swf'" if kind == "workload" else ""),
                   file, f"{kind}s[{index}]", suggest(next(iter(item), ""), {"path", "generate", "swf", "name"}))
    seeded = kind == "workload" and "seed" in options and "seed" not in item
    needs_platform = kind == "workload" and "platform" in options
    _check_generator_values(argv, seeded=seeded, needs_platform=needs_platform, file=file,
                            key=f"{kind}s[{index}]")
    return InputSpec(kind, str(label), command=tuple(argv), seeded=seeded,
                     needs_platform=needs_platform, key=stable_hash(argv),
                     part=str(item["part"]) if "part" in item else None, energy=energy)


class _parsing:
    """``with _parsing(argv):`` -- the command line the dispatcher's 'did you mean' hints
    look at is this generator's, not the campaign command's."""

    def __init__(self, argv: list[str]):
        self.argv = list(argv)

    def __enter__(self):
        from mrsched.cli import Parser

        self.saved, Parser.argv = Parser.argv, self.argv

    def __exit__(self, *exc):
        from mrsched.cli import Parser

        Parser.argv = self.saved


def _check_generator_values(argv: list[str], *, seeded: bool, needs_platform: bool, file: str,
                            key: str) -> None:
    """Parse a generator's command line now (values, choices, types), so that a bad value
    stops the campaign before its first input is written, not after."""
    import contextlib
    import io

    from mrsched.cli import build_parser

    full = [*argv, "-o", os.devnull]
    if seeded:
        full += ["--seed", "0"]
    if needs_platform:
        full += ["--platform", os.devnull]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                _parsing(full):
            build_parser().parse_args(full)
    except SystemExit:
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        problem = lines[-1].split(": error: ", 1)[-1] if lines else "invalid generator options"
        raise _err(f"bad generator options: {problem}", file, key,
                   f"command: mrsched {shlex.join(argv)}") from None


def _storage_keys(item: dict, file: str, where: str) -> tuple[tuple[str, ...], int | None]:
    """A platform file's ``roles`` (Batsim ``-r`` specs) and ``bb_capacity`` (a size), as
    ``mrsched run -r ... --bb-capacity ...`` takes them."""
    from mrsched.errors import MrschedError
    from mrsched.units import parse_size

    roles = item.get("roles") or []
    if isinstance(roles, str):
        roles = [roles]
    if not isinstance(roles, list) or not all(
            isinstance(r, str) and r.count(":") == 1 and all(r.split(":")) for r in roles):
        raise _err("roles must be Batsim -r specs such as 'node_8,node_17:storage'", file,
                   f"{where}roles")
    cap = item.get("bb_capacity")
    if cap is not None:
        try:
            cap = parse_size(cap)
        except MrschedError as exc:
            raise _err(exc.message, file, f"{where}bb_capacity", exc.hint) from None
        if not 0 < cap < float("inf"):
            raise _err("bb_capacity must be a positive size such as 40GB", file, f"{where}bb_capacity")
        cap = int(cap)
    return tuple(roles), cap


def _split_parts(item):
    """``{swf: T, part: [1/16, 2/16]}`` -> one workload per part (seed 001's 16 parts)."""
    if not (isinstance(item, dict) and isinstance(item.get("part"), list)):
        return [item]
    name = item.get("name")
    return [dict(item, part=p, **({"name": f"{name}-p{str(p).split('/')[0]}"} if name else {}))
            for p in item["part"]]


def _policy(item, index: int, file: str) -> list[PolicySpec]:
    where = f"policies[{index}]"
    if isinstance(item, str):
        item = {"policy": item}
    if not isinstance(item, dict):
        raise _err("a policy is a name or a mapping with 'policy' and 'options'", file, where)
    _check_keys(item, POLICY_KEYS, file, f"{where}.")
    if "policy" not in item:
        raise _err("a policy mapping needs 'policy': a registered name (mrsched policies) or "
                   "module:Class; 'name' only labels it in the report", file, f"{where}.policy")
    name = item.get("policy")
    options = item.get("options") or {}
    if not isinstance(options, dict):
        raise _err("options must be a mapping", file, f"{where}.options")
    params = check_policy(name, options, file=file, key=where)
    grid_keys = [k for k, v in options.items() if isinstance(v, list)]
    for k in grid_keys:
        if not options[k]:
            raise _err(f"option '{k}' has an empty list of values", file, f"{where}.options.{k}")
    axes = [options[k] if isinstance(options[k], list) else [options[k]] for k in options]
    specs = []
    for values in itertools.product(*axes):
        opts = dict(zip(options, values))
        check_values(name, opts, file=file, key=where)
        shown = "".join(f"_{k}={opts[k]}" for k in sorted(opts) if k in grid_keys)
        label = f"{item.get('name') or name.split(':')[-1]}{shown}"
        specs.append(PolicySpec(name, opts, label, takes_seed="seed" in params))
    return specs


def _unique_key_loader():
    """yaml's SafeLoader, refusing a key given twice in one mapping (YAML keeps the last one
    silently: a campaign would lose an entry without a word)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                continue            # the default constructor reports unhashable keys
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"key {key!r} is given twice (first on line {seen[key] + 1})", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Loader


def load_campaign(path: str | Path, *, output: str | Path | None = None) -> Campaign:
    """Read and validate a campaign file; nothing is generated or run yet."""
    import yaml

    path = Path(path)
    file = str(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise _err(f"cannot read campaign file: {exc.strerror}", file) from exc
    try:
        raw = yaml.load(text, Loader=_unique_key_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"bad YAML: {problem}", file=file,
                          line=mark.line + 1 if mark else None) from exc
    if not isinstance(raw, dict):
        raise _err("a campaign file is a YAML mapping", file)
    _check_keys(raw, TOP_KEYS, file, "")
    base = path.resolve().parent
    for key in ("platforms", "workloads", "policies"):
        if not raw.get(key) or not isinstance(raw[key], list):
            raise _err(f"'{key}' must be a non-empty list", file, key)
    name = str(raw.get("name") or path.stem)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise _err(f"campaign name '{name}' must be letters, digits, '.', '_' or '-'", file, "name")
    engine = raw.get("engine", "embedded")
    if engine not in ENGINES:
        raise _err(f"unknown engine '{engine}'", file, "engine", suggest(str(engine), ENGINES))
    batsim = raw.get("batsim")
    if engine == "batsim":
        from mrsched.expe.engines import batsim_argv

        batsim = batsim or "batsim"
        try:
            batsim_argv(batsim)
        except ConfigError as exc:
            raise _err(exc.message, file, "batsim", exc.hint) from exc
    timeout = raw.get("timeout", DEFAULT_TIMEOUT)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or timeout <= 0):
        raise _err("timeout must be a positive number of seconds", file, "timeout")
    parallelism = raw.get("parallelism", 1)
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise _err("parallelism must be a positive integer", file, "parallelism")
    report = raw.get("report", True)
    if not isinstance(report, bool):
        raise _err(f"report must be true or false, got {report!r}", file, "report")
    out = Path(output) if output is not None else (
        base / str(raw["output"]) if raw.get("output") else base / "results" / name)
    platforms = [_input("platform", it, i, file, base) for i, it in enumerate(raw["platforms"])]
    workloads = [_input("workload", one, i, file, base) for i, it in enumerate(raw["workloads"])
                 for one in _split_parts(it)]
    policies = [p for i, it in enumerate(raw["policies"]) for p in _policy(it, i, file)]
    for kind, items in (("platform", platforms), ("workload", workloads), ("policy", policies)):
        names = [getattr(x, "label", None) or x.name for x in items]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup:
            raise _err(f"two {kind} entries are named '{dup}'", file,
                       "policies" if kind == "policy" else f"{kind}s", "give each a distinct 'name'")
    return Campaign(file=file, name=name, output=out.resolve(), engine=engine, batsim=batsim,
                    timeout=None if timeout is None else float(timeout), parallelism=parallelism,
                    seeds=parse_seeds(raw.get("seeds"), file), platforms=platforms,
                    workloads=workloads, policies=policies, report=report,
                    raw=raw)


# ---------------------------------------------------------------- inputs and expansion

_SAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def _safe(text: str) -> str:
    return _SAFE.sub("-", text).strip("-") or "x"


def input_path(campaign: Campaign, spec: InputSpec, *, seed: int | None = None,
               platform: InputSpec | None = None) -> Path:
    """Where an input is (a given file) or will be (a generated one, by producer hash)."""
    if spec.path:
        return Path(spec.path)
    key = stable_hash([list(spec.command), seed if spec.seeded else None,
                       platform.key if (spec.needs_platform and platform) else None])
    suffix = ".xml" if spec.kind == "platform" else ".json"
    return campaign.inputs_dir / f"{spec.kind}-{_safe(spec.name)}-{key}{suffix}"


def generate_input(campaign: Campaign, spec: InputSpec, target: Path, *, seed: int | None,
                   platform_path: Path | None) -> Path:
    """Run the generator once into ``target`` (atomically); an existing target is reused."""
    if spec.path or target.is_file():
        return target
    argv = list(spec.command)
    if spec.seeded and seed is not None:
        argv += ["--seed", str(seed)]
    if spec.needs_platform and platform_path is not None:
        argv += ["--platform", str(platform_path)]
    target.parent.mkdir(parents=True, exist_ok=True)
    # unique per process: a temporary name shared by two processes lets one delete the other's
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{stable_hash(argv, 6)}.tmp")
    problem = _run_generator([*argv, "-o", str(tmp)])
    if problem is not None or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"generating {spec.kind} '{spec.name}' failed: {problem or 'no file written'}",
                          file=campaign.file, field=f"{spec.kind}s",
                          hint=f"command: mrsched {shlex.join(argv)}")
    write_atomic(target, tmp.read_bytes())
    tmp.unlink(missing_ok=True)
    return target


def _run_generator(argv: list[str]) -> str | None:
    """``mrsched ARGV`` in this process (generators are deterministic and quick; no
    interpreter start-up per input); returns None, or the line that explains the failure."""
    import contextlib
    import io

    from mrsched.cli import build_parser
    from mrsched.errors import MrschedError

    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), _parsing(argv):
            args = build_parser().parse_args(argv)
            code = args._run(args)
    except SystemExit as exc:  # argparse refused a value
        code = exc.code
    except MrschedError as exc:
        return str(exc)
    except Exception as exc:  # a generator's own bug or an unreadable input: one line
        return f"{type(exc).__name__}: {exc}"
    if code:
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        return lines[-1] if lines else f"exit code {code}"
    return None


@dataclass(frozen=True)
class PlannedRun:
    spec: RunSpec
    platform: InputSpec
    workload: InputSpec
    seed: int | None


def plan_runs(campaign: Campaign) -> list[PlannedRun]:
    """Every run of the campaign, in a stable order; ids do not depend on input contents."""
    runs: dict[str, PlannedRun] = {}
    for plat, wl, pol, seed in itertools.product(campaign.platforms, campaign.workloads,
                                                campaign.policies, campaign.seeds):
        uses_seed = wl.seeded or pol.takes_seed
        run_seed = seed if uses_seed else None
        run_id = _safe(f"{pol.label}-{plat.name}-{wl.name}" + (f"-s{seed}" if uses_seed else ""))
        if len(run_id) > 120:
            run_id = f"{run_id[:100]}-{stable_hash(run_id, 8)}"
        if run_id in runs:
            other = runs[run_id]
            if (other.platform, other.workload, other.spec.labels["policy_label"], other.seed) == \
                    (plat, wl, pol.label, run_seed):
                continue  # a seed that changes nothing in this combination: run it once
            raise ConfigError(f"two runs would share the id '{run_id}': policy "
                              f"'{other.spec.labels['policy_label']}' on {other.platform.name} / "
                              f"{other.workload.name} and policy '{pol.label}' on {plat.name} / {wl.name}",
                              file=campaign.file,
                              field="policies", hint="give one of them another name: {policy: ..., name: ...}")
        options = with_seed(pol.policy, pol.options, run_seed, {"seed": None} if pol.takes_seed else {})
        platform_path = input_path(campaign, plat)
        workload_path = input_path(campaign, wl, seed=run_seed, platform=plat)
        spec = RunSpec(run_id=run_id, out_dir=str(campaign.runs_dir / run_id),
                       platform=str(platform_path), workload=str(workload_path),
                       policy=pol.policy, options=options, seed=run_seed,
                       engine=campaign.engine, batsim=campaign.batsim, timeout=campaign.timeout,
                       roles=plat.roles, bb_capacity=plat.bb_capacity,
                       compute_sharing=plat.compute_sharing, energy=plat.energy,
                       labels={"campaign": campaign.name, "platform_name": plat.name,
                               "workload_name": wl.name, "policy_label": pol.label,
                               **({"part": wl.part} if wl.part else {})})
        runs[run_id] = PlannedRun(spec, plat, wl, run_seed)
    return list(runs.values())


def prepare_inputs(campaign: Campaign, runs: list[PlannedRun], progress=None) -> None:
    """Generate every missing input the runs need (platforms first: workloads may use them)."""
    done: set[str] = set()
    for run in runs:
        plat_path = Path(run.spec.platform)
        if str(plat_path) not in done:
            generate_input(campaign, run.platform, plat_path, seed=None, platform_path=None)
            done.add(str(plat_path))
        wl_path = Path(run.spec.workload)
        if str(wl_path) not in done:
            generate_input(campaign, run.workload, wl_path, seed=run.seed, platform_path=plat_path)
            done.add(str(wl_path))
            if progress:
                progress(wl_path)


def write_expanded(campaign: Campaign, runs: list[PlannedRun]) -> Path:
    """``campaign.yaml`` in the campaign directory: the file as given plus every run."""
    import yaml

    data = dict(campaign.raw)
    data["source"] = campaign.file
    data["runs"] = [r.spec.to_dict() for r in runs]
    return write_atomic(campaign.output / "campaign.yaml",
                        yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
