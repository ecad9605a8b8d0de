"""dpfast.compat.diffprivlib: class surface, patching, random_state, and the laws drawn.

diffprivlib's own suite (tests/integration/run_diffprivlib_suite.py) checks
compatibility; it cannot see a Laplace scale 10 % too small.  The distribution tests here
can, and the negative controls below prove it.  Needs ``dpfast[diffprivlib]``.
"""

import inspect
import math
import os
import secrets
import sys
import threading
import warnings

import numpy as np
import pytest
from scipy import stats

from stat_helpers import ALPHA, chi2_pvalue

if os.environ.get("DPFAST_BACKENDS_CI"):  # CI integration step: never skip
    import diffprivlib  # noqa: F401
dpl = pytest.importorskip("diffprivlib", reason="needs the dpfast[diffprivlib] extra")
import diffprivlib.mechanisms as dm  # noqa: E402

import dpfast  # noqa: E402
from dpfast import _core  # noqa: E402
from dpfast.compat import diffprivlib as shim  # noqa: E402
from dpfast.random import ChaCha20  # noqa: E402

NAMES = [
    "Binary",
    "Bingham",
    "Exponential",
    "ExponentialCategorical",
    "ExponentialHierarchical",
    "PermuteAndFlip",
    "Gaussian",
    "GaussianAnalytic",
    "GaussianDiscrete",
    "Geometric",
    "GeometricFolded",
    "GeometricTruncated",
    "Laplace",
    "LaplaceBoundedDomain",
    "LaplaceBoundedNoise",
    "LaplaceFolded",
    "LaplaceTruncated",
    "Snapping",
    "Staircase",
    "Uniform",
    "Vector",
]
_DUNDER = {
    "__module__",
    "__doc__",
    "__qualname__",
    "__firstlineno__",
    "__static_attributes__",
    "__dict__",
    "__weakref__",
    "__abstractmethods__",
    "_abc_impl",
}
# the originals, whatever the patch state when this module is imported
ORIGINALS = {name: shim.MECHANISMS[name].__mro__[1] for name in NAMES}


# ------------------------------------------------------------------ class surface


def test_the_21_classes():
    assert sorted(shim.MECHANISMS) == sorted(NAMES)
    for name in NAMES:
        cls, orig = getattr(shim, name), ORIGINALS[name]
        assert orig.__module__.startswith("diffprivlib.")
        assert cls.__name__ == name and issubclass(cls, orig)
        assert (
            inspect.getfullargspec(cls).kwonlyargs
            == inspect.getfullargspec(orig).kwonlyargs
        )
        own = set(vars(cls)) - _DUNDER
        assert "randomise" in own
        # nothing else of diffprivlib's is overridden (new private helpers only)
        for attr in own - {"randomise"}:
            assert not hasattr(orig, attr), (name, attr)


def test_shim_hierarchy_mirrors_diffprivlib():
    assert issubclass(shim.LaplaceBoundedDomain, shim.LaplaceTruncated)
    assert issubclass(shim.GaussianAnalytic, shim.Gaussian)
    assert issubclass(shim.PermuteAndFlip, shim.Exponential)
    assert issubclass(shim.GeometricFolded, shim.Geometric)
    assert ".Laplace(" in repr(shim.Laplace(epsilon=1, sensitivity=1))


def test_validation_is_diffprivlib_s():
    with pytest.raises(ValueError):
        shim.Laplace(epsilon=-1, sensitivity=1)
    with pytest.raises(TypeError):
        shim.Laplace(epsilon=1, sensitivity=1).randomise("a")
    with pytest.raises(TypeError):
        shim.GaussianDiscrete(epsilon=0.5, delta=0.1).randomise(1.5)
    with pytest.raises(ValueError):
        shim.bernoulli_neg_exp(-1)
    assert shim.bernoulli_neg_exp(math.inf) == 0


# ------------------------------------------------------------------ patching


def _bindings():
    """(module, attr, obj) for every diffprivlib attribute that is an original or a shim."""
    originals = {id(orig) for orig, _ in shim._ORIGINALS.values()}
    shims = {id(c) for c in shim.MECHANISMS.values()} | {id(shim.bernoulli_neg_exp)}
    out = {"orig": 0, "shim": 0}
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "diffprivlib" or name.startswith("diffprivlib.")):
            continue
        for obj in vars(mod).values():
            if id(obj) in originals:
                out["orig"] += 1
            elif id(obj) in shims:
                out["shim"] += 1
    return out


@pytest.fixture
def clean():
    shim.unpatch()
    yield
    shim.unpatch()


def test_patch_reaches_every_binding(clean):
    before = _bindings()
    assert before["shim"] == 0 and before["orig"] >= 67
    n = shim.patch()
    assert n == before["orig"]
    assert _bindings() == {"orig": 0, "shim": n}
    assert shim.patch() == 0  # idempotent
    import diffprivlib.models.utils as mu
    import diffprivlib.tools.utils as tu

    assert tu.LaplaceTruncated is shim.LaplaceTruncated
    assert mu.Bingham is shim.Bingham
    assert dm.gaussian.bernoulli_neg_exp is shim.bernoulli_neg_exp
    assert dm.Laplace is shim.Laplace
    shim.unpatch()
    assert _bindings() == before
    shim.unpatch()  # idempotent
    assert _bindings() == before


def test_tools_and_models_draw_from_dpfast_when_patched(clean, monkeypatch):
    calls = []
    real = shim._laplace_release

    def counting(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(shim, "_laplace_release", counting)
    x = np.linspace(0, 1, 100)
    dpl.tools.mean(x, bounds=(0, 1), epsilon=1.0)
    assert not calls
    with shim.patched():
        dpl.tools.mean(x, bounds=(0, 1), epsilon=1.0)
    assert len(calls) == 1
    assert not shim.is_patched()


def test_patched_nests_and_respects_explicit_patch(clean):
    with shim.patched():
        with shim.patched():
            assert shim.is_patched()
        assert shim.is_patched()
    assert not shim.is_patched()
    shim.patch()
    with shim.patched():
        pass
    assert shim.is_patched()


def test_patching_is_thread_safe(clean):
    before = _bindings()
    errors = []

    def worker():
        try:
            for _ in range(50):
                with shim.patched():
                    assert _bindings()["orig"] == 0
        except BaseException as exc:  # collected and reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _bindings() == before and not shim.is_patched()


# ------------------------------------------------------------------ random_state contract


def test_int_seed_is_reproducible_and_equals_randomstate():
    a = [
        shim.Laplace(epsilon=1, sensitivity=1, random_state=5).randomise(0.0)
        for _ in range(3)
    ]
    b = shim.Laplace(epsilon=1, sensitivity=1, random_state=np.random.RandomState(5))
    assert a[0] == a[1] == a[2] == b.randomise(0.0)
    c = shim.Laplace(epsilon=1, sensitivity=1, random_state=6).randomise(0.0)
    assert c != a[0]


def test_shared_randomstate_gives_independent_reproducible_streams():
    def run():
        rs = np.random.RandomState(11)
        m1 = shim.Laplace(epsilon=1, sensitivity=1, random_state=rs)
        m2 = shim.Laplace(epsilon=1, sensitivity=1, random_state=rs)
        return [m1.randomise(0.0) for _ in range(3)], [m2.randomise(0.0) for _ in range(3)]

    r1, r2 = run(), run()
    assert r1 == r2 and r1[0] != r1[1]


def test_none_global_and_systemrandom_use_the_csprng():
    for rs in (None, np.random.mtrand._rand, secrets.SystemRandom()):
        m = shim.Laplace(epsilon=1, sensitivity=1, random_state=rs)
        assert shim._rng(m) is None  # dpfast's per-thread OS-keyed ChaCha20
    m = shim.Laplace(epsilon=1, sensitivity=1)
    assert len({m.randomise(0.0) for _ in range(20)}) == 20


def test_copy_shares_the_stream():
    m = shim.Laplace(epsilon=1, sensitivity=1, random_state=3)
    m.randomise(0.0)
    c = m.copy()
    assert shim._rng(c) is shim._rng(m)


def test_bernoulli_neg_exp_random_state():
    assert shim.bernoulli_neg_exp(1, np.random.RandomState(42)) == shim.bernoulli_neg_exp(
        1, 42
    )
    draws = [shim.bernoulli_neg_exp(0.5, s) for s in range(4000)]
    assert stats.binomtest(sum(draws), 4000, math.exp(-0.5)).pvalue > ALPHA


# ------------------------------------------------------------------ laws (seeded, tiny alpha)


def _draw(mech, value, n):
    return np.array([mech.randomise(value) for _ in range(n)])


def _ks(sample, cdf):
    return stats.kstest(sample, cdf).pvalue


# two-sided normal quantile at ALPHA: |z| beyond it rejects
Z_CRIT = stats.norm.isf(ALPHA / 2)


def _scale_z(noise, scale):
    """z statistic of the Laplace scale: mean |Y| estimates it with sd scale/sqrt(n)."""
    return (np.abs(noise).mean() - scale) / (scale / math.sqrt(noise.size))


def test_laplace_law_and_negative_control(monkeypatch):
    """10 % too little noise passes diffprivlib's suite; this test rejects it."""
    mech = shim.Laplace(epsilon=0.5, sensitivity=2.0, random_state=1)
    y = _draw(mech, 0.0, 20_000)
    assert _ks(y, stats.laplace(scale=4.0).cdf) > ALPHA
    assert abs(_scale_z(y, 4.0)) < Z_CRIT
    real = shim._laplace_release
    monkeypatch.setattr(shim, "_laplace_release", lambda m, v, s, d: real(m, v, 0.9 * s, d))
    broken = _draw(shim.Laplace(epsilon=0.5, sensitivity=2.0, random_state=1), 0.0, 20_000)
    assert abs(_scale_z(broken, 4.0)) > Z_CRIT


def test_laplace_plan_detects_one_percent():
    """The sampler behind every Laplace-family randomise, at n = 10^6: a 1 % scale error
    is rejected (about 10 standard errors), the correct scale is not."""
    k, sampler = shim._laplace_plan(4.0, 2.0)
    z = _core.grid_release(sampler, np.zeros(1_000_000), k, ChaCha20(7))
    scale = 4.0 * (1 + 2.0**k / 2.0)
    assert _ks(z, stats.laplace(scale=scale).cdf) > ALPHA
    assert abs(_scale_z(z, scale)) < Z_CRIT
    assert abs(_scale_z(z, 0.99 * scale)) > Z_CRIT
    assert abs(_scale_z(z, 1.01 * scale)) > Z_CRIT


def test_laplace_grid_and_rounding():
    mech = shim.Laplace(epsilon=1.0, sensitivity=1.0, random_state=2)
    y = _draw(mech, 0.3, 1000)
    g = 2.0 ** (math.frexp(1.0)[1] - 1 - 40)
    assert np.all(y / g == np.round(y / g))
    a = shim.Laplace(epsilon=1.0, sensitivity=1.0, random_state=9).randomise(0.3)
    b = shim.Laplace(epsilon=1.0, sensitivity=1.0, random_state=9).randomise(0.3 + 2**-45)
    assert a == b
    assert shim.Laplace(epsilon=1.0, sensitivity=0.0).randomise(2.5) == 2.5
    assert isinstance(mech.randomise(1), float)


def test_truncated_and_folded_stay_in_bounds():
    t = shim.LaplaceTruncated(epsilon=0.1, sensitivity=1, lower=0, upper=1, random_state=0)
    f = shim.LaplaceFolded(epsilon=0.1, sensitivity=1, lower=0, upper=1, random_state=0)
    for m in (t, f):
        y = _draw(m, 0.5, 2000)
        assert y.min() >= 0 and y.max() <= 1
    assert np.mean(_draw(t, 0.5, 2000) == 0.0) > 0.2  # truncation piles mass on bounds


def test_laplace_bounded_domain_law():
    mech = shim.LaplaceBoundedDomain(
        epsilon=1.0, sensitivity=1.0, lower=0.0, upper=2.0, random_state=4
    )
    y = _draw(mech, 0.5, 20_000)
    scale = shim._bounded_domain_scale(mech)[0]
    base = stats.laplace(loc=0.5, scale=scale)
    lo, hi = base.cdf(0.0), base.cdf(2.0)
    assert _ks(y, lambda v: (base.cdf(np.clip(v, 0, 2)) - lo) / (hi - lo)) > ALPHA
    # the scale is diffprivlib's search at sensitivity + grid: a hair above its own
    assert mech._scale <= scale <= mech._scale * (1 + 1e-9)


def test_laplace_bounded_noise_law():
    mech = shim.LaplaceBoundedNoise(epsilon=1.0, delta=0.1, sensitivity=1.0, random_state=5)
    y = _draw(mech, 10.0, 20_000) - 10.0
    mech.randomise(0.0)
    bound = mech._noise_bound
    assert np.abs(y).max() <= bound * (1 + 1e-9)
    base = stats.laplace(scale=1.0)
    lo, hi = base.cdf(-bound), base.cdf(bound)
    assert _ks(y, lambda v: (base.cdf(np.clip(v, -bound, bound)) - lo) / (hi - lo)) > ALPHA


@pytest.mark.parametrize("cls", ["Gaussian", "GaussianAnalytic"])
def test_gaussian_law(cls):
    mech = getattr(shim, cls)(epsilon=0.5, delta=1e-5, sensitivity=1.0, random_state=6)
    y = _draw(mech, 0.0, 20_000)
    assert _ks(y, stats.norm(scale=mech._scale).cdf) > ALPHA
    assert _ks(y, stats.norm(scale=0.9 * mech._scale).cdf) < ALPHA


def test_gaussian_discrete_law():
    mech = shim.GaussianDiscrete(epsilon=1.0, delta=1e-3, sensitivity=1, random_state=7)
    y = _draw(mech, 3, 20_000) - 3
    assert y.dtype.kind == "i"
    s = mech._scale
    support = np.arange(-int(12 * s) - 1, int(12 * s) + 2)
    p = np.exp(-(support.astype(float) ** 2) / (2 * s * s))
    p /= p.sum()
    counts = np.array([(y == v).sum() for v in support])
    assert chi2_pvalue(counts, p) > ALPHA


@pytest.mark.parametrize("cls", ["Geometric", "GeometricTruncated", "GeometricFolded"])
def test_geometric_law(cls):
    extra = {} if cls == "Geometric" else {"lower": -100, "upper": 100}
    mech = getattr(shim, cls)(epsilon=0.7, sensitivity=2, random_state=8, **extra)
    y = _draw(mech, 0, 20_000 if cls == "Geometric" else 5_000)
    q = math.exp(-0.7 / 2)
    support = np.arange(-60, 61)
    p = (1 - q) / (1 + q) * q ** np.abs(support)
    p /= p.sum()
    counts = np.array([(y == v).sum() for v in support])
    assert chi2_pvalue(counts, p) > ALPHA
    assert all(type(v) is int for v in y[:5].tolist())


def test_binary_flip_probability():
    mech = shim.Binary(epsilon=1.0, value0="a", value1="b", random_state=9)
    flips = sum(mech.randomise("a") == "b" for _ in range(40_000))
    assert stats.binomtest(flips, 40_000, 1 / (math.e + 1)).pvalue > ALPHA


def test_exponential_law():
    u = [0.0, 1.0, 2.0, 2.5]
    mech = shim.Exponential(epsilon=1.0, sensitivity=1.0, utility=u, random_state=10)
    y = _draw(mech, None, 20_000)
    p = np.exp(np.array(u) / 2)
    assert chi2_pvalue(np.bincount(y, minlength=4), p / p.sum()) > ALPHA
    cand = shim.Exponential(
        epsilon=1.0,
        sensitivity=1.0,
        utility=u,
        candidates=list("wxyz"),
        measure=[1, 0, 2, 1],
        random_state=10,
    )
    yc = _draw(cand, None, 20_000)
    assert "x" not in set(yc)
    p = np.exp(np.array(u) / 2) * np.array([1, 0, 2, 1])
    counts = [(yc == c).sum() for c in "wyz"]
    assert chi2_pvalue(counts, p[[0, 2, 3]] / p.sum()) > ALPHA


def test_permute_and_flip_law():
    mech = shim.PermuteAndFlip(
        epsilon=1.0, sensitivity=1.0, utility=[0.0, 2.0], random_state=11
    )
    y = _draw(mech, None, 20_000)
    p_worse = math.exp(-1.0) / 2  # McKenna & Sheldon: two candidates, gap 2, eps/2D
    assert stats.binomtest(int((y == 0).sum()), 20_000, p_worse).pvalue > ALPHA


def test_exponential_categorical_law():
    util = [["A", "B", 1], ["A", "C", 2], ["B", "C", 2]]
    mech = shim.ExponentialCategorical(epsilon=1.0, utility_list=util, random_state=12)
    y = _draw(mech, "A", 20_000)
    targets = ["A", "B", "C"]
    p = np.array([mech._get_prob("A", t) for t in targets])
    assert chi2_pvalue([(y == t).sum() for t in targets], p / p.sum()) > ALPHA


def test_snapping_and_vector():
    snap = shim.Snapping(
        epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0, random_state=13
    )
    y = _draw(snap, 5.0, 2000)
    # snapping to the power of two lambda >= 1/epsilon' = 1 here: integers in the bounds
    assert y.min() >= 0.0 and y.max() <= 10.0 and len(set(y)) > 5
    assert np.all(y == np.round(y))
    vec = shim.Vector(epsilon=1.0, function_sensitivity=0.25, dimension=3, random_state=13)
    f = vec.randomise(lambda w: float(np.sum(w**2)))
    assert np.isfinite(f(np.ones(3)))


# ------------------------------------------------------------------ Staircase, Uniform: grid


def _staircase_cdf(eps, sens, gamma):
    """CDF of diffprivlib's continuous staircase noise (Geng et al. 2015)."""
    q = math.exp(-eps)
    p1 = gamma / (gamma + (1 - gamma) * q)

    def one_sided(t):
        u = np.asarray(t, dtype=float) / sens
        j = np.floor(u)
        f = u - j
        inside = p1 * np.minimum(f / gamma, 1) + (1 - p1) * np.maximum(
            (f - gamma) / (1 - gamma), 0
        )
        return 1 - q**j + q**j * (1 - q) * inside

    return lambda y: 0.5 + np.sign(y) * one_sided(np.abs(y)) / 2


@pytest.mark.parametrize(
    "eps,sens,gamma", [(1.0, 1.0, 0.5), (0.5, 2.0, 0.3), (3.0, 1.0, None)]
)
def test_staircase_law(eps, sens, gamma):
    mech = shim.Staircase(epsilon=eps, sensitivity=sens, gamma=gamma, random_state=13)
    y = _draw(mech, 0.0, 20_000)
    assert _ks(y, _staircase_cdf(eps, sens, mech.gamma)) > ALPHA
    assert _ks(y, _staircase_cdf(0.8 * eps, sens, mech.gamma)) < ALPHA  # 20 % less epsilon
    # the split inside each stair: P[first part] = gamma / (gamma + (1 - gamma) e^-eps),
    # which a sampler ignoring the lower second level (P = gamma) does not match
    first = int((np.mod(np.abs(y) / sens, 1.0) < mech.gamma).sum())
    g = mech.gamma
    assert stats.binomtest(first, y.size, g / (g + (1 - g) * math.exp(-eps))).pvalue > ALPHA
    assert stats.binomtest(first, y.size, g).pvalue < ALPHA


def test_uniform_law():
    mech = shim.Uniform(delta=0.25, sensitivity=1.0, random_state=13)
    u = _draw(mech, 0.0, 20_000)
    assert _ks(u, stats.uniform(loc=-2.0, scale=4.0).cdf) > ALPHA
    assert _ks(u, stats.uniform(loc=-1.8, scale=3.6).cdf) < ALPHA
    assert np.abs(u).max() <= 2.0 * (1 + 2**-39)


@pytest.mark.parametrize(
    "cls,kw", [("Staircase", dict(epsilon=1.0, gamma=0.4)), ("Uniform", dict(delta=0.1))]
)
def test_staircase_and_uniform_release_on_a_grid(cls, kw):
    """Floating-point safe (issue 22 item 8): the output is a grid point, and the private
    value's bits below the grid never reach it (main added float noise to the value)."""

    def make(seed):
        return getattr(shim, cls)(sensitivity=1.0, random_state=seed, **kw)

    y = _draw(make(2), 0.3, 1000)
    g = 2.0**-40
    assert np.all(y / g == np.round(y / g))
    for seed in range(20):
        assert make(seed).randomise(0.3) == make(seed).randomise(0.3 + 2**-45)
    assert isinstance(make(3).randomise(1), float)


def test_staircase_plan_is_exactly_private():
    """The discrete staircase's pmf is non-increasing in |t| with f(t + W) = q f(t) and a
    second-part level B in [q, 1] (in units of the first part's): at most a factor
    1/q <= e^eps between neighbours whose rounded values differ by <= W steps."""
    from fractions import Fraction

    from dpfast.compat import _plans

    for eps, sens, gamma in [
        (1.0, 1.0, 0.5),
        (0.01, 3.0, 0.0),
        (40.0, 1e-300, 1.0),
        (700.0, 1e300, 1 / (1 + math.exp(350))),
        (1e-16, 1.0, 0.5),
    ]:
        k, width, first, (num, den), (pn, pd) = _plans.staircase(eps, sens, gamma)
        g = Fraction(2) ** k
        assert (width - 1) * g <= Fraction(sens) < width * g  # W = floor(s/g) + 1
        assert Fraction(den, num) <= Fraction(eps)  # q >= e^-eps
        p = Fraction(pn, pd)
        if 0 < first < width:
            level = (1 - p) * first / (p * (width - first))  # B
            lo, hi = _core.exp_neg_interval(den, num, 3)
            assert Fraction(lo, 2**128) <= level <= 1  # q <= B <= 1
        else:
            assert p == (first == width)


def test_uniform_plan_is_exactly_private():
    """Total variation between neighbours: at most W of the 2M + 1 points move."""
    from fractions import Fraction

    from dpfast.compat import _plans

    for delta in (0.5, 0.1, 1e-3, 1e-12, 5e-324):
        for sens in (1.0, 3.0, 1e-300, 1e300):
            k, half = _plans.uniform(delta, sens)
            width = _plans._step_grid(sens)[1]
            assert Fraction(width, 2 * half + 1) <= Fraction(delta)
            # and no more noise than needed: one point fewer would not do
            assert Fraction(width, 2 * half - 1) > Fraction(delta)


# ------------------------------------------------------------------ InsecureRandomnessWarning


def _recorded(call):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        call()
    return [r for r in rec if issubclass(r.category, dpfast.InsecureRandomnessWarning)]


def test_vector_and_bingham_warn_as_the_fast_paths_do():
    """Continuous by design, simulation samplers: an InsecureRandomnessWarning naming the
    mechanism, at the caller's line (main: silent)."""
    vec = shim.Vector(epsilon=1.0, function_sensitivity=0.25, dimension=3)
    rec = _recorded(lambda: vec.randomise(lambda w: float(np.sum(w**2))))
    assert len(rec) == 1 and "Vector" in str(rec[0].message)
    assert rec[0].filename == __file__
    bing = shim.Bingham(epsilon=1.0, sensitivity=1.0)
    rec = _recorded(lambda: bing.randomise(np.array([[3.0, 1.0], [1.0, 1.0]])))
    assert len(rec) == 1 and "Bingham" in str(rec[0].message)


def test_the_secure_classes_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpfast.InsecureRandomnessWarning)
        shim.Staircase(epsilon=1.0, sensitivity=1.0).randomise(0.5)
        shim.Uniform(delta=0.1, sensitivity=1.0).randomise(0.5)
        shim.Laplace(epsilon=1.0, sensitivity=1.0).randomise(0.5)
        shim.Gaussian(epsilon=0.5, delta=1e-5, sensitivity=1.0).randomise(0.5)
        shim.Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=1.0).randomise(0.5)


def test_logistic_regression_warns_when_patched(clean):
    """diffprivlib's LogisticRegression draws through Vector: with dpfast patched in, the
    warning names diffprivlib's line (the first frame outside dpfast)."""
    x = np.random.RandomState(0).uniform(-1, 1, size=(60, 2))
    y = (x[:, 0] > 0).astype(int)
    with shim.patched():
        model = dpl.models.LogisticRegression(epsilon=1.0, data_norm=1.5, random_state=0)
        rec = _recorded(lambda: model.fit(x, y))
    # Vector's continuous noise, and (random_state=0) the seeded stream's warning
    assert any("Vector" in str(r.message) for r in rec)
    assert all("Vector" in str(r.message) or "seeded" in str(r.message) for r in rec)
    assert all(os.sep + "diffprivlib" + os.sep in r.filename for r in rec)
    assert not _recorded(
        lambda: dpl.models.LogisticRegression(
            epsilon=1.0, data_norm=1.5, random_state=0
        ).fit(x, y)
    )  # unpatched: silent


def _bingham_theta_probs(a, bins):
    edges = np.linspace(0, np.pi, bins + 1)
    fine = np.linspace(0, np.pi, 200_001)
    u = np.stack([np.cos(fine), np.sin(fine)])
    dens = np.exp(-np.einsum("in,ij,jn->n", u, a, u))
    cdf = np.concatenate([[0], np.cumsum((dens[1:] + dens[:-1]) / 2)])
    return np.diff(np.interp(edges, fine, cdf)) / cdf[-1]


def test_bingham_is_exact():
    """chi^2 on theta mod pi against the exact Bingham law (diffprivlib's own sampler
    fails this: 3707 on 35 df in BACKENDS.md)."""
    m = np.array([[3.0, 1.0], [1.0, 1.0]])
    mech = shim.Bingham(epsilon=1.0, sensitivity=1.0, random_state=14)
    n = 10_000
    theta = np.array(
        [math.atan2(v[1], v[0]) % np.pi for v in (mech.randomise(m) for _ in range(n))]
    )
    lam = np.linalg.eigvalsh(m)
    a = 1.0 * (lam.max() * np.eye(2) - m) / 4
    probs = _bingham_theta_probs(a, 36)
    counts = np.histogram(theta, bins=36, range=(0, np.pi))[0]
    assert chi2_pvalue(counts, probs) > ALPHA
    # the same test rejects a sampler whose concentration is 50 % off
    wrong = _bingham_theta_probs(1.5 * a, 36)
    assert chi2_pvalue(counts, wrong) < ALPHA
