"""dpfast._draw (issue 23 item 3): the Laplace plan and draw that laplace_mechanism is the
face of and that composites call after charging once; gaussian_release likewise."""

import ast
import os
import warnings

import numpy as np
import pytest

import dpfast
import dpfast.random as dr
from dpfast import _draw
from dpfast import mechanisms as M
from dpfast.accounting import PrivacyBudget
from dpfast.selection import exponential_mechanism, exponential_release

SRC = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir, "src", "dpfast"))

VALUES = [3, 2.5, [1, 2, 3], [0.5, -1.25, 7.0], np.arange(5, dtype=np.int64)]


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_laplace_release_is_the_mechanism_without_its_charge(value, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfast.InsecureRandomnessWarning)
        a = M.laplace_mechanism(
            value, epsilon=0.7, sensitivity=2.0, rng=dr.ChaCha20(4), mode=mode
        )
        b = _draw.laplace_release(value, 0.7, 2.0, dr.ChaCha20(4), mode)
    np.testing.assert_array_equal(a, b)
    assert type(a) is type(b)


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_gaussian_release_is_the_mechanism_without_its_charge(value, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfast.InsecureRandomnessWarning)
        a = M.gaussian_mechanism(
            value,
            epsilon=0.7,
            delta=1e-6,
            l2_sensitivity=2.0,
            rng=dr.ChaCha20(4),
            mode=mode,
        )
        b = M.gaussian_release(
            value,
            epsilon=0.7,
            delta=1e-6,
            l2_sensitivity=2.0,
            rng=dr.ChaCha20(4),
            mode=mode,
        )
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize("scores", [[1.0, 3.5, 2.0], np.array([4, 1, 9], dtype=np.int64)])
def test_exponential_release_is_the_mechanism_without_its_charge(scores, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfast.InsecureRandomnessWarning)
        g1, g2 = dr.ChaCha20(9), dr.ChaCha20(9)
        a = [
            exponential_mechanism(scores, epsilon=0.3, rng=g1, mode=mode) for _ in range(50)
        ]
        b = [exponential_release(scores, epsilon=0.3, rng=g2, mode=mode) for _ in range(50)]
    assert a == b


def test_the_draws_charge_nothing_even_inside_an_active_budget():
    b = PrivacyBudget(1.0)
    with b.active():
        _draw.laplace_release(1.0, 0.5, 1.0, dr.ChaCha20(1))
        M.gaussian_release(
            1.0, epsilon=0.5, delta=1e-6, l2_sensitivity=1.0, rng=dr.ChaCha20(1)
        )
        exponential_release([1.0, 2.0], epsilon=0.5, rng=dr.ChaCha20(1))
    assert b.ledger == []


def test_the_plan_refuses_before_anything_is_drawn():
    with pytest.raises(dpfast.PrivacyParameterError):
        _draw.laplace_plan(1e-300, 1.0, False, 1)
    with pytest.raises(dpfast.PrivacyParameterError):
        _draw.laplace_plan(1e-310, 1e300, False, 1, "fast")
    with pytest.raises(TypeError):
        _draw.geometric_release(1.5, 1.0, 1.0, dr.ChaCha20(1))


# the composites moved to plan -> charge once -> draw: no public face called with
# budget=NO_BUDGET (query_release/, learn/, compat/, opendp and _axes: not yet)
MOVED = [
    "selection.py",
    "stats.py",
    "_stat_releases.py",
    "grouped.py",
    "randomized_response.py",
    "sparse.py",
    "objects.py",
    "query_release/baselines.py",
]


@pytest.mark.parametrize("path", MOVED)
def test_moved_composites_call_no_face_with_no_budget(path):
    with open(os.path.join(SRC, path), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    calls = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        for kw in n.keywords
        if kw.arg == "budget"
        and isinstance(kw.value, ast.Name)
        and kw.value.id == "NO_BUDGET"
    ]
    assert calls == []
