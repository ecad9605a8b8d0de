"""docs/privacy-map.md names real code (issue 23 item 2): every Python symbol in its
tables imports (``module.attr``), and every C function it names is defined in csrc/ (any
file: C functions may move between files)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "privacy-map.md"
CSRC = ROOT / "csrc"
COLUMNS = ["Mechanism", "Parameter rule", "Python plan", "C kernel", "Proof"]
# optional peers: without them the module is checked in its source instead of imported
PEER_MODULES = {"dpfast.opendp", "dpfast.compat.diffprivlib", "dpfast.compat.pipeline_dp"}


def _rows() -> list[dict[str, str]]:
    rows = []
    header: list[str] | None = None
    for line in MAP.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            assert header == COLUMNS, header
        elif not set(line) <= set("|-: "):
            assert len(cells) == len(header), line
            rows.append(dict(zip(header, cells)))
    return rows


ROWS = _rows()


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _defined_in_source(module: str, attrs: list[str]) -> bool:
    spec = importlib.util.find_spec(module.rsplit(".", 1)[0])
    assert spec is not None and spec.submodule_search_locations, module
    path = Path(list(spec.submodule_search_locations)[0]) / (
        module.rsplit(".", 1)[1] + ".py"
    )
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = tree.body
    for attr in attrs:
        found = [
            n
            for n in body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == attr
        ]
        if not found:
            return False
        body = found[0].body if isinstance(found[0], ast.ClassDef) else []
    return True


def _resolve(name: str) -> None:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module)
        except ImportError as exc:  # a missing peer: ModuleNotFoundError, or the
            # ImportError naming the extra that dpfast's backends raise (_compat.require)
            if module in PEER_MODULES and (exc.name or "").split(".")[0] != "dpfast":
                assert _defined_in_source(module, parts[cut:]), name
                return
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)  # AttributeError: the map names a ghost
        return
    raise AssertionError(f"{name}: no importable module")


def _c_functions() -> set[str]:
    defined: set[str] = set()
    pattern = re.compile(r"^[A-Za-z_][\w \*]*?\b(dpf_\w+)\s*\([^;]*?\)\s*\{", re.M | re.S)
    for path in list(CSRC.rglob("*.c")) + list(CSRC.rglob("*.h")):
        text = path.read_text(encoding="utf-8", errors="replace")
        defined.update(pattern.findall(text))
        defined.update(re.findall(r"#define\s+(dpf_\w+)", text))
    return defined


def test_the_map_has_rows() -> None:
    assert len(ROWS) >= 25
    for row in ROWS:
        assert row["Parameter rule"] and row["Proof"], row["Mechanism"]
        assert _names(row["Python plan"]), row["Mechanism"]
        c = row["C kernel"]
        assert c == "—" or _names(c), row["Mechanism"]


@pytest.mark.parametrize(
    "name", sorted({n for r in ROWS for n in _names(r["Python plan"])})
)
def test_python_symbol_exists(name: str) -> None:
    assert name.startswith("dpfast."), name
    _resolve(name)


def test_c_functions_are_defined_in_csrc() -> None:
    defined = _c_functions()
    named = {n for r in ROWS for n in _names(r["C kernel"])}
    assert named, "the map names no C function"
    assert all(n.startswith("dpf_") for n in named), named
    assert not named - defined, sorted(named - defined)


def test_the_checker_sees_a_ghost() -> None:
    with pytest.raises((AttributeError, AssertionError)):
        _resolve("dpfast.mechanisms._no_such_plan")
    assert "dpf_no_such_kernel" not in _c_functions()
    assert "dpf_grid_add" in _c_functions()
