"""No import cycle among dpfast's modules (issue 23): module-level and deferred (in a
function body) imports both count."""

import ast
import os

import pytest

SRC = os.path.join(os.path.dirname(__file__), os.pardir, "src", "dpfast")
SRC = os.path.normpath(SRC)


def _modules():
    mods = {}
    for dirpath, _, files in os.walk(SRC):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.dirname(SRC))[:-3].replace(os.sep, ".")
                mods[rel[:-9] if rel.endswith(".__init__") else rel] = path
    return mods


def _graph():
    mods = _modules()
    graph = {}
    for m, path in mods.items():
        base = m.split(".") if path.endswith("__init__.py") else m.split(".")[:-1]
        deps = set()
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    up = base[: len(base) - (node.level - 1)]
                    name = ".".join(up + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                if not name.startswith("dpfast"):
                    continue
                for alias in node.names:
                    full = f"{name}.{alias.name}"
                    if full in mods:
                        deps.add(full)
                    elif not os.path.exists(
                        os.path.join(os.path.dirname(SRC), *full.split(".")) + ".pyx"
                    ):
                        deps.add(name)  # a name from a package's __init__
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("dpfast.")}
        # importing a submodule runs its packages' __init__ first
        for d in list(deps):
            parts = d.split(".")
            deps |= {".".join(parts[:i]) for i in range(2, len(parts))}
        graph[m] = {d for d in deps if d in mods and d != m and not m.startswith(d + ".")}
    return graph


def _cycles(graph):
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_anywhere():
    """The whole package, dpfast.ledger included (its cycle went with the budget/store
    split), module-level and deferred imports alike."""
    assert _cycles(_graph()) == []


@pytest.mark.parametrize("low", ["dpfast._draw", "dpfast._plans", "dpfast._privacy"])
def test_the_plan_and_draw_modules_import_no_mechanism(low):
    graph = _graph()
    seen, todo = set(), [low]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph[m]
    assert not seen & {
        "dpfast.mechanisms",
        "dpfast.selection",
        "dpfast.objects",
        "dpfast.stats",
        "dpfast.grouped",
    }


SHARED = {"dpfast._privacy", "dpfast._plans", "dpfast._draw", "dpfast._core"}
# the one private name still crossing top-level modules (issue 23, not yet moved): the
# selection faces' argument check, reused by stats.quantile's exponential mechanism
KNOWN_CROSSING = {("dpfast.stats", "dpfast.selection._common")}


def _private_crossings():
    """{(importer, module.name)}: a private name imported from another top-level module
    that is not one of the shared plan/privacy/draw modules."""
    mods, out = _modules(), set()
    for m, path in mods.items():
        base = m.split(".") if path.endswith("__init__.py") else m.split(".")[:-1]
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                up = base[: len(base) - (node.level - 1)]
                src = ".".join(up + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            if not src.startswith("dpfast") or src in SHARED:
                continue
            if src.split(".")[:2] == m.split(".")[:2]:
                continue  # within one top-level module or package
            for alias in node.names:
                name, full = alias.name, f"{src}.{alias.name}"
                is_module = full in mods or os.path.exists(
                    os.path.join(os.path.dirname(SRC), *full.split(".")) + ".pyx"
                )
                if name.startswith("_") and not name.startswith("__") and not is_module:
                    out.add((m, full))
    return out


def test_private_names_cross_top_level_modules_only_from_the_shared_ones():
    """Issue 23: no private name imported across top-level modules except from the
    plans/privacy modules.  The known leftover is listed exactly (nothing may be added)."""
    assert _private_crossings() == KNOWN_CROSSING  # moving the last one: empty the set
