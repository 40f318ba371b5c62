"""The package drawn from its imports: no circles, and no import back up its layers.

Every module under src/nqprof is parsed with ``ast``; every import counts, at module level,
inside functions and under ``TYPE_CHECKING`` alike (relative imports resolved, ``from x
import y`` pointing at the submodule ``x.y`` when there is one). Data flows one way:
parameters -> subproblems -> build -> limits -> launch -> counters -> verify -> record ->
plugin, history, report; the layers below say so, lowest first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: Lowest first. A module belongs to the layer of its longest matching entry: ``"a.b"``
#: matches ``a.b`` and everything under it, ``"=a.b"`` the module ``a.b`` alone. A module
#: may import its own layer or a lower one, never a higher one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundation",
        (
            "=nqprof",
            "nqprof.errors",
            "nqprof.numeric",
            "nqprof.textfmt",
            "nqprof.progress",
            "nqprof.problem",
            "nqprof.files",
            "nqprof.machinediff",
            "nqprof.worker",
            "nqprof.spare",
            "nqprof.cpuprobe",
        ),
    ),
    (
        "data",
        (
            "nqprof.subproblems",
            "nqprof.result",
            "nqprof.rounds",
            "nqprof.spread",
            "nqprof.gpuconditions",
            "nqprof.conditions",
            "nqprof.analysis.trace",
        ),
    ),
    ("cuda", ("nqprof.cuda",)),
    (
        "strategy interface",
        ("nqprof.strategies.base", "nqprof.strategies.counters", "nqprof.strategies.rotation"),
    ),
    (
        "strategy machinery",
        (
            "nqprof.strategies.gpu_common",
            "nqprof.strategies.cpu_common",
            "nqprof.strategies.placement",
            "nqprof.strategies.cdp",
        ),
    ),
    ("strategies", ("nqprof.strategies",)),
    ("strategy registry", ("=nqprof.strategies",)),
    (
        "run",
        (
            "nqprof.runners",
            "nqprof.series",
            "nqprof.runner",
            "nqprof.options",
            "nqprof.machine",
            "nqprof.instructions",
        ),
    ),
    ("history", ("nqprof.analysis",)),
    (
        "measurements",
        (
            "nqprof.queuebench",
            "nqprof.characterize",
            "nqprof.papers",
            "nqprof.cluster",
            "nqprof.benchadapter",
            "nqprof.nqbench",
            "nqprof.benchopts",
            "nqprof.benchtrace",
            "nqprof.interleave",
            "nqprof.benchinstr",
            "nqprof.benchab",
        ),
    ),
    ("kernel catalog", ("nqprof.catalog",)),
    (
        "front",
        ("nqprof.plugin", "nqprof.benchgate", "nqprof.benchab", "nqprof.cli", "nqprof.__main__"),
    ),
]


def modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package)."""
    out = {}
    for path in sorted((SRC / "nqprof").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts.pop()
        out[".".join(parts)] = (path, package)
    return out


def _owner(name: str, known) -> str | None:
    """The module ``name`` refers to: itself, or its longest known prefix."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in known:
            return ".".join(parts)
        parts.pop()
    return None


def imports_of(module: str, path: Path, package: bool, known) -> set[str]:
    here = module if package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # ``from pkg import sub`` imports the submodule when there is one, else pkg itself
            targets = [f"{stem}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "nqprof" or target.startswith("nqprof."):
                owner = _owner(target, known)
                if owner and owner != module:
                    found.add(owner)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, package, mods) for name, (path, package) in mods.items()}


def layer_of(module: str) -> int:
    best, best_key = None, (-1, False)
    for index, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            exact = pattern.startswith("=")
            name = pattern.lstrip("=")
            hit = module == name or (not exact and module.startswith(name + "."))
            if hit and (len(name), exact) > best_key:  # the longest match; an exact one wins a tie
                best, best_key = index, (len(name), exact)
    assert best is not None, f"{module} is in no layer: add it to LAYERS in tests/test_layers.py"
    return best


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _describe(component: list[str], edges) -> str:
    inside = set(component)
    return "; ".join(f"{a} -> {b}" for a in component for b in sorted(edges[a] & inside))


def test_the_graph_sees_function_level_and_relative_imports():
    edges = graph()
    # relative imports, at module level
    assert "nqprof.cuda.nvtx" in edges["nqprof.strategies.gpu_common"]
    assert "nqprof.strategies.base" in edges["nqprof.strategies.dp1"]
    # `from ..cuda.build import build` inside GpuSession.build, a method
    assert "nqprof.cuda.build" in edges["nqprof.strategies.gpu_common"]


def test_cycle_finder_reports_a_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.slow
def test_no_import_cycles():
    edges = graph()
    found = cycles(edges)
    assert not found, "import cycles: " + " | ".join(_describe(c, edges) for c in found)


@pytest.mark.slow
def test_every_module_has_a_layer():
    for module in graph():
        layer_of(module)


def test_no_import_back_up_the_layers():
    edges = graph()
    upward = sorted(
        (a, b) for a, targets in edges.items() for b in targets if layer_of(b) > layer_of(a)
    )
    assert not upward, "imports back up the layers: " + "; ".join(
        f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})" for a, b in upward
    )


def package_of(module: str, mods) -> str:
    """The unit a module belongs to for :func:`package_graph`: the subpackage of nqprof it is
    in (``nqprof.analysis`` for ``nqprof.analysis.trace.reader``), else itself."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and mods.get(module, (None, False))[1]):
        return ".".join(parts[:2])
    return module


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph with every subpackage of nqprof drawn as one node."""
    mods = modules()
    out: dict[str, set[str]] = {}
    for a, targets in edges.items():
        pa = package_of(a, mods)
        out.setdefault(pa, set())
        for b in targets:
            pb = package_of(b, mods)
            out.setdefault(pb, set())
            if pa != pb:
                out[pa].add(pb)
    return out


@pytest.mark.slow
def test_no_package_is_left_and_reentered():
    """A subpackage is one unit: nothing in it imports a module outside it that imports back
    into it (analysis.history -> machine -> analysis.trace was one: the layers allowed each
    step, but the package went up to `run` and came back down into itself)."""
    edges = package_graph(graph())
    found = cycles(edges)
    assert not found, "package circles: " + " | ".join(_describe(c, edges) for c in found)


@pytest.mark.slow
def test_package_graph_draws_subpackages_as_one():
    old = dict(graph())
    old["nqprof.analysis.history"] = old["nqprof.analysis.history"] | {"nqprof.machine"}
    edges = package_graph(old)
    assert "nqprof.analysis.trace.reader" not in edges
    assert cycles(edges) == [["nqprof.analysis", "nqprof.machine"]]
