"""dpfast.random follows numpy's conventions (issue 14, item 4): argument order, shapes,
laws, broadcasting, scale 0, refusals by type, the deprecated ``gaussian``, and a scan of
the repository for calls written for the old ``laplace(scale, size)`` order."""

import ast
import math
import pathlib
import warnings

import numpy as np
import pytest
from scipy import stats

import dpfast
import dpfast.random as dr
from stat_helpers import ALPHA

N = 100_000


# ------------------------------------------------------------------ numpy's positional calls

NUMPY_CALLS = [
    # (name, args, kwargs, the law of one draw)
    ("laplace", (0, 1, 5), {}, stats.laplace(0, 1)),
    ("normal", (2, 3), {"size": (2, 2)}, stats.norm(2, 3)),
    ("uniform", (-1, 1, 10), {}, stats.uniform(-1, 2)),
    ("gumbel", (1.5, 2.0, 7), {}, stats.gumbel_r(1.5, 2.0)),
    ("exponential", (3.0, (2, 3)), {}, stats.expon(scale=3.0)),
]


@pytest.mark.parametrize("name, args, kwargs, law", NUMPY_CALLS)
def test_positional_calls_match_numpy_shapes_and_laws(name, args, kwargs, law):
    ours = getattr(dr, name)(*args, **kwargs, rng=dr.ChaCha20(1))
    theirs = getattr(np.random.default_rng(1), name)(*args, **kwargs)
    assert isinstance(ours, np.ndarray) and ours.dtype == np.float64
    assert ours.shape == theirs.shape
    # the same call with a large size: the same law as numpy's (one-sample KS against the
    # exact law, and two-sample KS against numpy's own draws)
    params = args[:-1] if "size" not in kwargs else args
    big = getattr(dr, name)(*params, size=N, rng=dr.ChaCha20(2))
    ref = getattr(np.random.default_rng(2), name)(*params, size=N)
    assert stats.kstest(big, law.cdf).pvalue > ALPHA
    assert stats.ks_2samp(big, ref).pvalue > ALPHA


def test_laplace_0_1_is_one_standard_draw_not_zero():
    # the bug of the old order: laplace(0, 1) was scale 0, size 1, i.e. array([0.])
    assert type(dr.laplace(0, 1, rng=dr.ChaCha20(3))) is float
    g = dr.ChaCha20(4)
    draws = np.array([dr.laplace(0, 1, rng=g) for _ in range(20_000)])
    assert stats.kstest(draws, stats.laplace().cdf).pvalue > ALPHA


def test_defaults_are_numpys():
    g = dr.ChaCha20(5)
    assert type(dr.laplace(rng=g)) is float and type(dr.normal(rng=g)) is float
    assert type(dr.gumbel(rng=g)) is float and type(dr.exponential(rng=g)) is float
    u = dr.uniform(size=N, rng=g)
    assert 0.0 <= u.min() and u.max() < 1.0
    assert stats.kstest(dr.normal(size=N, rng=g), stats.norm().cdf).pvalue > ALPHA


@pytest.mark.parametrize(
    "name, law",
    [
        ("laplace", stats.laplace(7.0, 0.5)),
        ("normal", stats.norm(7.0, 0.5)),
        ("gumbel", stats.gumbel_r(7.0, 0.5)),
    ],
)
def test_loc_shifts_the_same_stream(name, law):
    f = getattr(dr, name)
    shifted = f(7.0, 0.5, N, rng=dr.ChaCha20(6))
    centred = f(0.0, 0.5, N, rng=dr.ChaCha20(6))
    np.testing.assert_array_equal(shifted, centred + 7.0)
    assert stats.kstest(shifted, law.cdf).pvalue > ALPHA
    out = np.empty(N)
    assert f(7.0, 0.5, out=out, rng=dr.ChaCha20(6)) is out
    np.testing.assert_array_equal(out, shifted)
    assert f(7.0, 0.5, rng=dr.ChaCha20(6)) == shifted[0]


# ------------------------------------------------------------------ scale 0 (numpy allows it)


def test_scale_zero_returns_loc_like_numpy():
    npg = np.random.default_rng(0)
    assert dr.laplace(5.0, 0.0) == npg.laplace(5.0, 0.0) == 5.0
    assert dr.laplace(5, 0) == 5.0 and type(dr.laplace(5, 0)) is float
    np.testing.assert_array_equal(dr.normal(-2.0, 0.0, 3), npg.normal(-2.0, 0.0, 3))
    assert dr.gumbel(1.0, 0.0) == npg.gumbel(1.0, 0.0) == 1.0
    np.testing.assert_array_equal(dr.exponential(0.0, 4), np.zeros(4))
    np.testing.assert_array_equal(dr.laplace([1.0, 2.0], [0.0, 0.0]), [1.0, 2.0])
    np.testing.assert_array_equal(dr.uniform(3.0, 3.0, 2), [3.0, 3.0])


def test_mechanisms_still_refuse_what_would_be_scale_zero():
    # a plain sampler may have no noise; a mechanism may not (epsilon = inf is refused)
    with pytest.raises(dpfast.PrivacyParameterError):
        dpfast.mechanisms.laplace_mechanism(1.0, epsilon=math.inf)
    with pytest.raises(dpfast.PrivacyParameterError):
        dr.discrete_laplace(0)


# ------------------------------------------------------------------ broadcasting


def test_array_parameters_broadcast_like_numpy():
    loc = np.array([[0.0], [100.0], [-50.0]])  # (3, 1)
    scale = np.array([1.0, 2.0, 4.0, 8.0])  # (4,)
    assert dr.laplace(loc, scale).shape == np.random.default_rng().laplace(loc, scale).shape
    assert dr.laplace(loc, scale, size=(2, 3, 4)).shape == (2, 3, 4)
    assert dr.normal([0.0, 1.0], 1.0).shape == (2,)
    assert dr.exponential([1.0, 2.0, 3.0]).shape == (3,)
    assert dr.uniform(0.0, [1.0, 2.0], size=(5, 2)).shape == (5, 2)
    out = np.empty((3, 4))
    assert dr.gumbel(loc, scale, out=out) is out
    with pytest.raises(ValueError, match="broadcast|shape"):
        dr.laplace([0.0, 1.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="broadcast"):
        dr.laplace(loc, scale, size=(4, 3))
    with pytest.raises(ValueError, match="broadcast|shape"):
        dr.normal([0.0, 1.0], 1.0, out=np.empty(3))


def test_array_parameters_give_each_column_its_law():
    loc = np.array([0.0, 10.0, -3.0])
    scale = np.array([1.0, 0.25, 5.0])
    x = dr.laplace(loc, scale, size=(N, 3), rng=dr.ChaCha20(7))
    for j in range(3):
        assert stats.kstest(x[:, j], stats.laplace(loc[j], scale[j]).cdf).pvalue > ALPHA
    u = dr.uniform([0.0, -1e308], [1.0, 1e308], size=(N, 2), rng=dr.ChaCha20(8))
    assert stats.kstest(u[:, 0], stats.uniform(0, 1).cdf).pvalue > ALPHA
    assert np.isfinite(u).all() and (u[:, 1] < 1e308).all() and (u[:, 1] >= -1e308).all()
    assert stats.kstest(u[:, 1] / 1e308, stats.uniform(-1, 2).cdf).pvalue > ALPHA


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda: dr.laplace(np.longdouble(1.0)), TypeError),
        (lambda: dr.normal(0.0, np.array(2.0, dtype=np.longdouble)), TypeError),
        (lambda: dr.laplace(np.array([1.0], dtype=np.longdouble)), TypeError),
        (lambda: dr.laplace(np.array([1.0], dtype=object)), TypeError),
        (lambda: dr.laplace(1 + 2j), TypeError),
        (lambda: dr.laplace(True), TypeError),
        (lambda: dr.laplace("0"), TypeError),
        (lambda: dr.laplace(0.0, None), TypeError),
        (lambda: dr.laplace(math.nan), dpfast.PrivacyParameterError),
        (lambda: dr.normal(math.inf, 1.0), dpfast.PrivacyParameterError),
        (lambda: dr.laplace(0.0, -1.0), dpfast.PrivacyParameterError),
        (lambda: dr.laplace(0.0, [1.0, -1.0]), dpfast.PrivacyParameterError),
        (lambda: dr.gumbel([0.0, math.nan], 1.0), dpfast.PrivacyParameterError),
        (lambda: dr.exponential([1.0, math.inf]), dpfast.PrivacyParameterError),
        (lambda: dr.uniform([0.0, 2.0], [1.0, 1.0]), dpfast.PrivacyParameterError),
        (lambda: dr.uniform(1.0, 0.0), dpfast.PrivacyParameterError),
    ],
)
def test_bad_parameters_are_refused(call, exc):
    with pytest.raises(exc, match="loc|scale|low|high|real number|dtype"):
        call()


def test_numpy_scalars_and_zero_d_arrays_are_accepted():
    g = dr.ChaCha20(9)
    assert type(dr.laplace(np.float32(1.5), np.int64(2), rng=g)) is float
    assert type(dr.normal(np.array(1.0), np.array(0.5), rng=g)) is float


# ------------------------------------------------------------------ gaussian: deprecated


def test_gaussian_is_deprecated_and_keeps_its_old_meaning():
    with pytest.warns(DeprecationWarning, match="normal"):
        x = dr.gaussian(2.0, N, rng=dr.ChaCha20(10))
    assert x.shape == (N,)
    assert stats.kstest(x, stats.norm(0.0, 2.0).cdf).pvalue > ALPHA
    with pytest.warns(DeprecationWarning):
        assert type(dr.gaussian(rng=dr.ChaCha20(10))) is float
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(dpfast.PrivacyParameterError, match="sigma"),
    ):
        dr.gaussian(-1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dr.normal(0.0, 2.0, 3)  # the new name does not warn


# ------------------------------------------------------------------ no caller left behind

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHANGED = {"laplace", "gumbel", "normal"}  # first positional argument is now loc


def _old_order_calls(path):
    """Calls of dpfast.random.laplace/gumbel/normal that read like the old order
    ``f(scale)`` / ``f(scale, size)``: one positional argument (unless ``scale=`` is also
    given), or two whose second is not a float literal and with no ``size=``.  In the old
    order the second positional was a size, never a float literal."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules, functions = {"dpfast.random"}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "dpfast.random" and a.asname:
                    modules.add(a.asname)
        elif isinstance(node, ast.ImportFrom):
            src = ("." * node.level) + (node.module or "")
            for a in node.names:
                if a.name == "random" and src in ("dpfast", ".", ".."):
                    modules.add(a.asname or "random")
                elif src in ("dpfast.random", ".random", "..random") and a.name in CHANGED:
                    functions[a.asname or a.name] = a.name
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr in CHANGED
            and ast.unparse(f.value) in modules
        ):
            pass
        elif isinstance(f, ast.Name) and f.id in functions:
            pass
        else:
            continue
        kws = {k.arg for k in node.keywords}
        pos = node.args
        if any(isinstance(a, ast.Starred) for a in pos):
            continue
        second_is_float = (
            len(pos) == 2
            and isinstance(pos[1], ast.Constant)
            and isinstance(pos[1].value, float)
        )
        if (len(pos) == 1 and "scale" not in kws) or (
            len(pos) == 2 and "size" not in kws and not second_is_float
        ):
            bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return bad


def test_no_call_in_the_repository_uses_the_old_argument_order():
    files = [
        p
        for d in ("src", "tests", "bench", "examples", "fuzz")
        if (ROOT / d).is_dir()
        for p in (ROOT / d).rglob("*.py")
    ]
    assert any(p.name == "random.py" for p in files)  # the source tree is there
    bad = [
        b
        for p in files
        if p.name != "test_numpy_conventions.py"
        for b in _old_order_calls(p)
    ]
    assert not bad, "calls in the old laplace(scale, size) order:\n" + "\n".join(bad)


def test_the_scan_finds_old_order_calls(tmp_path):
    p = tmp_path / "old.py"
    p.write_text(
        "import dpfast.random as dr\nfrom dpfast import random as R\n"
        "from dpfast.random import gumbel as G\n"
        "dr.laplace(2.0, 10)\nR.normal(s, n, rng=g)\nG(1.0, out=o)\n"
        "dr.laplace(0.0, 1.0)\ndr.laplace(0.0, 2.0, size=5)\ndr.laplace(scale=1.0)\n"
        "dr.laplace(0, 1, 5)\ndr.uniform(0.0, 1.0)\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        bad = _old_order_calls(p)
    finally:
        ROOT = saved
    assert [b.split(":")[1] for b in bad] == ["4", "5", "6"]


# ------------------------------------------------------------------ documented twins


def test_geometric_and_discrete_laplace_are_the_documented_scipy_laws():
    from stat_helpers import chi2_pvalue

    scale = 2.0
    q = math.exp(-1.0 / scale)
    # dpfast's geometric counts failures: 1 + geometric(scale) is numpy's geometric(1 - q)
    x = dr.geometric(scale, N, rng=dr.ChaCha20(20)) + 1
    top = 40
    counts = np.bincount(np.minimum(x, top), minlength=top + 1)[1:]
    law = stats.geom(1.0 - q)
    probs = np.append(law.pmf(np.arange(1, top)), law.sf(top - 1))
    assert chi2_pvalue(counts, probs) > ALPHA
    # discrete_laplace(scale) is scipy's dlaplace(a = 1/scale)
    y = dr.discrete_laplace(scale, N, rng=dr.ChaCha20(21))
    ks = np.arange(-30, 31)
    law = stats.dlaplace(1.0 / scale)
    counts = np.array(
        [np.count_nonzero(y <= -30)]
        + [np.count_nonzero(y == k) for k in ks[1:-1]]
        + [np.count_nonzero(y >= 30)]
    )
    probs = np.concatenate([[law.cdf(-30)], law.pmf(ks[1:-1]), [law.sf(29)]])
    assert chi2_pvalue(counts, probs) > ALPHA
