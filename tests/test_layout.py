"""The house's shape, read from the code (docs/DESIGN.md "Layout"): imports run one way, no
cycle, no module over 1,000 lines, a thin ``schedulers/`` root, one interval-set parser, no
``__dict__`` probing and no change to a submitted job outside the runtime."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the repository's folders -> the package they install as (pyproject.toml's package-dir)
AREAS = {"mrsched": "mrsched", "schedulers": "mrsched.schedulers", "simulator": "mrsched.simulator",
         "platforms": "mrsched.platforms", "workloads": "mrsched.workloads", "expe": "mrsched.expe",
         "analysis": "mrsched.analysis", "studies": "mrsched.studies"}
MAX_LINES = 1000


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in AREAS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports, anywhere in it (functions too), except under
    ``if TYPE_CHECKING:`` (annotations only, never run)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for n in ast.walk(block)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _part(module: str) -> str:
    """The part of ``mrsched.schedulers`` a module belongs to (``root`` for its top modules)."""
    rest = module.split(".")[2:]
    return rest[0] if len(rest) > 1 or MODULES[module].name == "__init__.py" else "root"


#: what each part of schedulers/ may import of the others (docs/DESIGN.md "Layout")
MAY_IMPORT = {
    "batsim": set(),
    "model": set(),
    "profile": {"model"},
    "optim": {"model", "profile"},
    "execution": {"batsim", "model", "profile"},
    "policies": {"batsim", "model", "profile", "optim", "execution"},
    "root": {"batsim", "model", "profile", "optim", "execution", "policies"},
}


def test_schedulers_imports_run_one_way():
    wrong = []
    for module, targets in GRAPH.items():
        if not module.startswith("mrsched.schedulers."):
            continue
        src = _part(module)
        for target in targets:
            if not target.startswith("mrsched.schedulers."):
                continue
            dst = _part(target)
            if dst != src and dst not in MAY_IMPORT[src] and target != "mrsched.schedulers":
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against the layout:\n" + "\n".join(sorted(wrong))


def test_nothing_below_the_root_imports_the_registry_or_a_policy():
    for module, targets in GRAPH.items():
        if module.startswith("mrsched.schedulers.") and _part(module) not in ("root", "policies"):
            assert not any(t.startswith("mrsched.schedulers.policies") for t in targets), module
        if module.startswith("mrsched.schedulers.") and _part(module) != "root":
            assert "mrsched.schedulers.registry" not in targets, module


def test_no_import_cycle():
    """Tarjan's strongly connected components over every module of the package."""
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not cycles, cycles


#: the library's facade (docs/API.md): on top of every area, imported by none
TOP = ("mrsched.api", "mrsched.stepping", "mrsched.gym")


def test_no_cycle_between_areas():
    area = {m: "top" if m.startswith(TOP) else m.split(".")[1] if m.count(".") >= 1 and m.split(".")[1] in
            ("schedulers", "simulator", "platforms", "workloads", "expe", "analysis", "studies")
            else "core"
            for m in GRAPH}
    assert "top" not in {area[b] for a, targets in GRAPH.items() if area[a] != "top" for b in targets}
    edges = defaultdict(set)
    for a, targets in GRAPH.items():
        for b in targets:
            if area[a] != area[b]:
                edges[area[a]].add(area[b])
    for a in list(edges):
        seen, todo = set(), list(edges[a])
        while todo:
            b = todo.pop()
            assert b != a, f"areas import each other in a circle through {a}: {dict(edges)}"
            if b not in seen:
                seen.add(b)
                todo.extend(edges.get(b, ()))


def test_no_module_over_a_thousand_lines():
    files = [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and ".git" not in p.parts]
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_no_c_source_of_the_package_over_a_thousand_lines():
    """The compiled extensions' sources (``.c`` and the headers they include), in every folder
    the package installs from, at most 1,000 lines each as the Python modules."""
    files = [p for folder in AREAS for ext in ("*.c", "*.h") for p in sorted((ROOT / folder).rglob(ext))]
    names = {p.name for p in files}
    assert {"_mintree.c", "_profile.c", "_shares.c", "_steps.c"} <= names, names   # the sources were found
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_a_thin_schedulers_root():
    top = sorted(p.name for p in (ROOT / "schedulers").glob("*.py"))
    assert len(top) <= 5, top


#: names of interval-set parsers and writers: they belong to schedulers/batsim/intervals.py
INTERVAL_NAMES = re.compile(r"^_?(parse|format|read|write)_(alloc|intervals?|interval_set)$|^_?canonical_runs$")


def test_one_interval_set_parser():
    owner = ROOT / "schedulers" / "batsim" / "intervals.py"
    found = []
    for module, path in MODULES.items():
        if path == owner:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and INTERVAL_NAMES.match(node.name):
                found.append(f"{module}.{node.name}")
    assert not found, f"interval sets parsed or written outside batsim/intervals.py: {found}"


def test_only_batsim_writes_protocol_events():
    """No module outside schedulers/batsim/ spells an event of the scheduler's side."""
    decisions = re.compile(r"""["'](EXECUTE_JOB|REJECT_JOB|CALL_ME_LATER|REGISTER_JOB|SET_JOB_METADATA)["']""")
    for module, path in MODULES.items():
        if module.startswith("mrsched.schedulers.") and not module.startswith("mrsched.schedulers.batsim"):
            assert not decisions.search(path.read_text()), module


def test_no_dict_probing_in_schedulers():
    for module, path in MODULES.items():
        if module.startswith("mrsched.schedulers"):
            assert "__dict__" not in path.read_text(), module


def test_no_job_is_changed_outside_the_runtime():
    """A submitted job's request, times and fields are set once; only the runtime replaces a
    waiting job by its estimated view (a new Job)."""
    runtime = ROOT / "schedulers" / "execution" / "runtime.py"
    for module, path in MODULES.items():
        if not module.startswith("mrsched.schedulers") or path == runtime:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                while isinstance(t, ast.Subscript):
                    t = t.value
                if isinstance(t, ast.Attribute) and t.attr in ("request", "subtime", "fields", "profile_data") \
                        and not (isinstance(t.value, ast.Name) and t.value.id == "self"):
                    pytest.fail(f"{module}:{node.lineno} changes a job's '{t.attr}'")


def test_nothing_imports_a_study():
    """Studies sit on the machinery, never under it: only a study imports a study."""
    for a, targets in GRAPH.items():
        if not a.startswith("mrsched.studies"):
            assert not [t for t in targets if t.startswith("mrsched.studies")], a


#: run-time attributes (``self.<name>_``) that would count what is in use a second time
LEDGER_NAMES = re.compile(r"(free|busy|running|held|used|state)")


def test_what_is_in_use_is_counted_once():
    """The runtime's ``MachineState`` (schedulers/model/machine.py) is the one count of busy
    resources, cores and GPUs per node and burst-buffer bytes: only the runtime makes one, and
    no policy or search keeps its own (``state_``, ``bb_free_``, ``running_`` ...)."""
    runtime = ROOT / "schedulers" / "execution" / "runtime.py"
    for module, path in MODULES.items():
        if not module.startswith("mrsched.schedulers"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and path != runtime:
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                assert name != "MachineState", f"{module}:{node.lineno} makes a MachineState of its own"
            if module.startswith(("mrsched.schedulers.policies", "mrsched.schedulers.optim")) and \
                    isinstance(node, (ast.Assign, ast.AnnAssign)):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" \
                            and t.attr.endswith("_") and LEDGER_NAMES.search(t.attr):
                        pytest.fail(f"{module}:{node.lineno} keeps 'self.{t.attr}': read ctx.machine instead")
