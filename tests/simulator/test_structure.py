"""The engine's layout (issue 40, "the engine in parts"): no source file of ``simulator/`` over
1,000 lines, and imports inside ``simulator/`` that run one way (no cycle), read from the code
with ``ast``: every import counts, inside a function or under ``TYPE_CHECKING`` too."""

from __future__ import annotations

import ast
from pathlib import Path

import mrsched.simulator

SIMULATOR = Path(mrsched.simulator.__path__[0])
PACKAGE = "mrsched.simulator"
MAX_LINES = 1000


def _modules() -> dict[str, Path]:
    return {p.stem: p for p in sorted(SIMULATOR.glob("*.py"))}


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The simulator modules that ``path`` imports (by name, without the package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                head, _, rest = alias.name.partition(PACKAGE + ".")
                if not head and rest:
                    found.add(rest.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:   # relative: inside the package
                base = node.module.split(".")[0] if node.module else None
            elif node.module == PACKAGE:
                base = None
            elif node.module and node.module.startswith(PACKAGE + "."):
                base = node.module[len(PACKAGE) + 1:].split(".")[0]
            else:
                continue
            if base is not None:
                found.add(base)
            else:   # from the package: the names that are its modules
                found.update(alias.name for alias in node.names)
    return found & modules


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, set(modules)) - {name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated at the end), or
    None."""
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for dep in sorted(graph.get(name, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name)
            if found:
                return found
    return None


def test_no_simulator_source_file_exceeds_a_thousand_lines():
    sizes = {p.name: len(p.read_text().splitlines())
             for p in sorted(SIMULATOR.glob("*.py")) + sorted(SIMULATOR.glob("*.c"))}
    assert "engine.py" in sizes and "_steps.c" in sizes   # the files this is about were found
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not over, f"over {MAX_LINES} lines: {over}"


def test_simulator_imports_run_one_way():
    graph = _graph()
    # the parts import each other as built (the reading is not empty)
    assert {"kernel", "server", "machines", "jobs", "executors"} <= graph["engine"]
    assert "workload" in graph["jobs"] and "usage_trace" in graph["workload"]
    cycle = _cycle(graph)
    assert cycle is None, "import cycle in simulator/: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles_and_reads_every_kind_of_import(tmp_path):
    """The checks above can fail: a cycle through a lazy import is found, and the import forms
    (absolute, from the package, relative, inside a function) all count."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    src = tmp_path / "x.py"
    src.write_text("import mrsched.simulator.kernel\n"
                   "from mrsched.simulator import jobs, _steps\n"
                   "from .server import Server\n"
                   "from mrsched.simulator.outputs import Recorder\n"
                   "def f():\n    from mrsched.simulator.workload import Job\n"
                   "import mrsched.schedulers.batsim.intervals\n")
    assert _imports(src, set(_modules())) == {"kernel", "jobs", "server", "outputs", "workload"}
