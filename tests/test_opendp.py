"""dpfast.opendp: OpenDP user measurements on dpfast samplers.  Needs dpfast[opendp]."""

import math
import os

import numpy as np
import pytest
from scipy import stats

from stat_helpers import ALPHA, chi2_pvalue

if os.environ.get("DPFAST_BACKENDS_CI"):  # CI integration step: never skip
    import opendp  # noqa: F401
pytest.importorskip("opendp", reason="needs the dpfast[opendp] extra")
import opendp.mod as dp_mod  # noqa: E402
import opendp.prelude as dp  # noqa: E402

import dpfast  # noqa: E402
from dpfast import opendp as dpo  # noqa: E402

D_INS = (0.5, 1, 2, 10)
FLOAT = dict(T=float, nan=False)


@pytest.fixture
def features(monkeypatch):
    """The two flags enabled for this test only (OpenDP keeps them in a global set)."""
    monkeypatch.setattr(dp_mod, "GLOBAL_FEATURES", {"contrib", "honest-but-curious"})


def _rel(a, b):
    return abs(a - b) / abs(b)


def test_clear_error_without_the_flag(monkeypatch):
    monkeypatch.setattr(dp_mod, "GLOBAL_FEATURES", {"contrib"})
    space = dp.atom_domain(**FLOAT), dp.absolute_distance(T=float)
    for ctor in (dpo.make_laplace, dpo.make_gaussian):
        with pytest.raises(dpfast.DPFastError, match="honest-but-curious"):
            ctor(*space, 1.0)
    with pytest.raises(dpfast.DPFastError, match="honest-but-curious"):
        dpo.make_randomized_response_bool(
            dp.atom_domain(T=bool), dp.discrete_distance(), 0.7
        )
    assert dp_mod.GLOBAL_FEATURES == {"contrib"}  # never enabled for the user


@pytest.mark.parametrize("scale", [1.0, 2.0, 3.0])
@pytest.mark.parametrize(
    "space",
    [
        (dp.atom_domain(**FLOAT), dp.absolute_distance(T=float)),
        (dp.vector_domain(dp.atom_domain(**FLOAT), size=4), dp.l1_distance(T=float)),
        (dp.atom_domain(T=int), dp.absolute_distance(T=int)),
        (dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)),
    ],
    ids=["float", "float-vec4", "int", "int-vec"],
)
def test_laplace_map_equals_builtin(features, space, scale):
    ours, theirs = dpo.make_laplace(*space, scale), dp.m.make_laplace(*space, scale)
    d_ins = D_INS if "f64" in str(space[0]) else (1, 2, 10)
    for d in d_ins:
        assert ours.map(d) >= theirs.map(d)
        assert _rel(ours.map(d), theirs.map(d)) <= 1e-12
    assert ours.map(0) == 0.0


@pytest.mark.parametrize(
    "space",
    [
        (dp.atom_domain(T=int), dp.absolute_distance(T=int)),
        (dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)),
    ],
    ids=["int", "int-vec"],
)
def test_gaussian_map_equals_builtin_on_integers(features, space):
    ours, theirs = dpo.make_gaussian(*space, 2.5), dp.m.make_gaussian(*space, 2.5)
    for d in (1, 2, 10):
        assert _rel(ours.map(d), theirs.map(d)) <= 1e-12 and ours.map(d) >= theirs.map(d)


def test_gaussian_map_on_floats_charges_the_grid(features):
    space = dp.atom_domain(**FLOAT), dp.absolute_distance(T=float)
    ours, theirs = dpo.make_gaussian(*space, 2.0), dp.m.make_gaussian(*space, 2.0)
    for d in D_INS:
        # (d + g)^2 / (2 s^2) with g = 2^-30 s: relative excess about 2 g / d
        excess = _rel(ours.map(d), theirs.map(d))
        assert ours.map(d) >= theirs.map(d) and excess <= 4 * 2.0**-29 / d


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("measure", ["max", "zcdp"])
@pytest.mark.parametrize("T", [float, int])
def test_noisy_max_map_equals_builtin(features, T, measure, monotonic):
    atom = dp.atom_domain(**FLOAT) if T is float else dp.atom_domain(T=int)
    space = dp.vector_domain(atom), dp.linf_distance(T=T, monotonic=monotonic)
    mo = dp.max_divergence() if measure == "max" else dp.zero_concentrated_divergence()
    ours, theirs = dpo.make_noisy_max(*space, mo, 2.0), dp.m.make_noisy_max(*space, mo, 2.0)
    for d in D_INS if T is float else (1, 2, 10):
        assert _rel(ours.map(d), theirs.map(d)) <= 1e-12


@pytest.mark.parametrize("prob", [0.5, 0.6, 0.75, 0.9, 0.999])
def test_randomized_response_map_equals_builtin(features, prob):
    ours = dpo.make_randomized_response_bool(
        dp.atom_domain(T=bool), dp.discrete_distance(), prob
    )
    theirs = dp.m.make_randomized_response_bool(prob)
    for d in (1, 2):
        if theirs.map(d) == 0.0:
            assert ours.map(d) == 0.0
        else:
            assert _rel(ours.map(d), theirs.map(d)) <= 1e-12
    assert ours.map(0) == 0.0


def test_laplace_laws(features):
    n = 100_000
    f = dpo.make_laplace(
        dp.vector_domain(dp.atom_domain(**FLOAT), size=n), dp.l1_distance(T=float), 2.0
    )
    y = np.asarray(f([1.5] * n)) - 1.5
    assert stats.kstest(y, stats.laplace(scale=2.0).cdf).pvalue > ALPHA
    assert stats.kstest(y, stats.laplace(scale=1.8).cdf).pvalue < ALPHA  # 10 % off: seen
    g = 2.0 ** (math.frexp(2.0)[1] - 1 - 44)
    assert np.all(y / g == np.round(y / g))
    i = dpo.make_laplace(
        dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), 2.0
    )
    z = np.asarray(i([0] * n))
    q = math.exp(-0.5)
    support = np.arange(-40, 41)
    p = (1 - q) / (1 + q) * q ** np.abs(support)
    assert chi2_pvalue([(z == v).sum() for v in support], p / p.sum()) > ALPHA


def test_gaussian_laws(features):
    n = 50_000
    f = dpo.make_gaussian(
        dp.vector_domain(dp.atom_domain(**FLOAT), size=n), dp.l2_distance(T=float), 3.0
    )
    y = np.asarray(f([0.0] * n))
    assert stats.kstest(y, stats.norm(scale=3.0).cdf).pvalue > ALPHA
    i = dpo.make_discrete_gaussian(
        dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), 3.0
    )
    z = np.asarray(i([0] * n))
    support = np.arange(-30, 31)
    p = np.exp(-(support.astype(float) ** 2) / 18.0)
    assert chi2_pvalue([(z == v).sum() for v in support], p / p.sum()) > ALPHA


def test_noisy_max_and_rr_laws(features):
    space = dp.vector_domain(dp.atom_domain(**FLOAT)), dp.linf_distance(T=float)
    pf = dpo.make_noisy_max(*space, dp.max_divergence(), 2.0)
    picks = np.array([pf([0.0, 2.0]) for _ in range(4000)])
    # exponential noise of scale 2 (permute-and-flip): P[worse] = exp(-2/2)/2
    assert stats.binomtest(int((picks == 0).sum()), 4000, math.exp(-1) / 2).pvalue > ALPHA
    em = dpo.make_noisy_max(*space, dp.zero_concentrated_divergence(), 2.0, negate=True)
    picks = np.array([em([0.0, 2.0]) for _ in range(4000)])
    # Gumbel noise of scale 2 on the negated scores: logistic, P[pick 1] = 1/(1+e)
    assert stats.binomtest(int((picks == 1).sum()), 4000, 1 / (1 + math.e)).pvalue > ALPHA
    rr = dpo.make_randomized_response_bool(
        dp.atom_domain(T=bool), dp.discrete_distance(), 0.75
    )
    kept = sum(rr(True) for _ in range(4000))
    assert stats.binomtest(kept, 4000, 0.75).pvalue > ALPHA


def test_chaining_composition_and_context(features):
    space = dp.vector_domain(dp.atom_domain(**FLOAT)), dp.symmetric_distance()
    chain = space >> dp.t.then_clamp((0.0, 10.0)) >> dp.t.then_sum()
    meas = chain >> dpo.make_laplace(chain.output_domain, chain.output_metric, 20.0)
    assert _rel(meas.map(1), (chain >> dp.m.then_laplace(20.0)).map(1)) <= 1e-12
    data = [float(v) for v in np.linspace(0, 10, 1000)]
    assert abs(meas(data) - sum(data)) < 20.0 * 30
    builtin = chain >> dp.m.then_laplace(20.0)
    both = dp.c.make_composition([meas, builtin])
    assert _rel(both.map(1), 2 * builtin.map(1)) <= 1e-12
    dpo.register()
    ctx = dp.Context.compositor(
        data=data,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=3,
        domain=dp.vector_domain(dp.atom_domain(**FLOAT)),
    )
    query = ctx.query().clamp((0.0, 10.0)).sum().dpfast_laplace()  # scale searched
    assert _rel(query.param(), 30.0) <= 1e-6
    assert abs(query.release() - sum(data)) < 30.0 * 30


def test_bad_arguments(features):
    with pytest.raises(dpfast.PrivacyParameterError, match="size"):
        dpo.make_laplace(
            dp.vector_domain(dp.atom_domain(**FLOAT)), dp.l1_distance(T=float), 1.0
        )
    with pytest.raises(dpfast.PrivacyParameterError):
        dpo.make_laplace(dp.atom_domain(**FLOAT), dp.absolute_distance(T=float), -1.0)
    with pytest.raises(TypeError):
        dpo.make_laplace(dp.atom_domain(**FLOAT), dp.absolute_distance(T=float), 1.0, k=-10)
    with pytest.raises(TypeError):
        dpo.make_discrete_gaussian(
            dp.atom_domain(**FLOAT), dp.absolute_distance(T=float), 1.0
        )
    with pytest.raises(dpfast.PrivacyParameterError):
        dpo.make_randomized_response_bool(
            dp.atom_domain(T=bool), dp.discrete_distance(), 1.0
        )
    with pytest.raises(dp_mod.OpenDPException):  # OpenDP's own domain rules
        dpo.make_laplace(dp.atom_domain(T=float), dp.absolute_distance(T=float), 1.0)
