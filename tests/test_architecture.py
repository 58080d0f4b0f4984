"""The architecture as a test: packages import downward only, and inside a package modules form floors (no circle).

Imports are read with ``ast`` from every module of ``patches`` (function-level imports included: a deferred
import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "patches"
ORDER = ["layouts", "staging", "autodiff", "lower"]  # each may import only those before it


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ("patches",) + path.relative_to(ROOT).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of patches it imports (relative and absolute imports, at any depth)."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, (path, is_pkg) in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = m.split(".") if is_pkg else m.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    base = ".".join(base + (node.module.split(".") if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges[m].update(t for t in targets if t in mods and t != m)
    return edges


def _package(m: str) -> str:
    return m.split(".")[1] if m.count(".") >= 1 else ""


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one module (Tarjan), each an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _within_packages(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Edges between modules of one package of patches (a package face importing its own modules is its job)."""
    mods = _modules()
    out = {}
    for m, ts in edges.items():
        if mods[m][1]:
            out[m] = set()
            continue
        out[m] = {t for t in ts if _package(t) == _package(m) and not mods[t][1]}
    return out


def test_no_import_circle_inside_a_package():
    found = circles(_within_packages(import_graph()))
    assert not found, "import circles: " + "; ".join(", ".join(sorted(c)) for c in found)


def test_packages_import_downward_only():
    bad = []
    for m, ts in import_graph().items():
        p = _package(m)
        if p not in ORDER:
            continue
        allowed = set(ORDER[: ORDER.index(p) + 1])
        bad += [f"{m} -> {t}" for t in ts if _package(t) in ORDER and _package(t) not in allowed]
    assert not bad, "upward imports: " + ", ".join(sorted(bad))


def test_the_checker_finds_a_circle():
    """The test can fail: a made-up circle a -> b -> c -> a (and a self-contained pair) is found."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": set(), "x": {"y"}, "y": {"x"}}
    assert sorted(sorted(c) for c in circles(edges)) == [["a", "b", "c"], ["x", "y"]]


def test_the_graph_sees_deferred_and_relative_imports():
    edges = import_graph()
    assert "patches.layouts.layout" in edges["patches.layouts.composition"]       # from .layout import Layout
    assert "patches.staging.ir" in edges["patches.staging.printer"]               # from .ir import ...
    assert any(t.startswith("patches.staging") for t in edges["patches.autodiff.api"])
