"""dpfast._plans: the one table of grid precisions (issue 23 item 2).  The values are
pinned here so that changing one is a deliberate act (it changes seeded outputs), and no
module may choose a grid precision of its own."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from dpfast import _plans
from dpfast._errors import PrivacyParameterError

SRC = Path(__file__).resolve().parents[1] / "src" / "dpfast"


def test_the_table_is_pinned() -> None:
    assert dataclasses.asdict(_plans.GRID_BITS) == {
        "laplace": 40,
        "gauss": 24,
        "gauss_vector": 12,
        "opendp_laplace": 44,
        "opendp_gauss": 30,
        "bounded_laplace": 40,
        "step": 40,
        "sparse": 20,
        "selection": 12,
        "sum_value": 30,
        "grouped_value": 30,
        "grouped_noise": 20,
        "variance": 15,
        "quantile_level": 16,
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        _plans.GRID_BITS.laplace = 41  # type: ignore[misc]


def test_every_entry_gives_its_reason() -> None:
    text = (SRC / "_plans.py").read_text(encoding="utf-8")
    for field in dataclasses.fields(_plans.GridBits):
        # the line before each field is the end of its comment
        before = text.split(f"    {field.name}: int =")[0].rstrip().splitlines()[-1]
        assert before.lstrip().startswith("#"), field.name


def test_no_module_chooses_a_grid_precision_of_its_own() -> None:
    pattern = re.compile(r"^\s*_?[A-Z_]*(GRID_BITS|_Q_BITS)\s*=", re.M)
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p.name != "_plans.py" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders


def test_grid_exponent() -> None:
    assert _plans.grid_exponent(1.0, 40, None) == -40
    assert _plans.grid_exponent(3.0, 40, None) == -39  # 2^k <= 2^-40 scale
    assert _plans.grid_exponent(1.0, 40, 0.3) == -2  # largest 2^k <= granularity
    assert _plans.grid_exponent(5e-324, 40, None) == -1000  # never finer than 2^-1000
    assert _plans.grid_exponent(0.0, 40, None) == -1000
    with pytest.raises(PrivacyParameterError, match="outside the range of doubles"):
        _plans.grid_exponent(float("inf"), 40, None)
    with pytest.raises(PrivacyParameterError, match="granularity"):
        _plans.grid_exponent(1.0, 40, float("nan"))
    with pytest.raises(PrivacyParameterError, match=r"\[2\^-1000, 2\^1000\]"):
        _plans.grid_exponent(1.0, 40, 2.0**1001)
