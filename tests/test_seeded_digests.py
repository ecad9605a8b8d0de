"""Stream stability: the seeded outputs of every sampler, mechanism, release, query-release
and learning path, pinned as SHA-256 digests (the habit of randomgen's test_stability.py).

A change that moves any seeded output, or any amount charged to a budget, fails here.  The
pinned file is ``tests/data/seeded_digests.json``; a deliberate change of law (a new sampler,
a corrected calibration) regenerates it with

    python tests/test_seeded_digests.py --write

and says in its commit message which digests moved and why.  Refactorings (issue 23) must
leave every digest unchanged.
"""

import hashlib
import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dpfast.mechanisms as M
import dpfast.random as dr
import dpfast.randomized_response as RR
import dpfast.selection as S
import dpfast.sparse as SP
import dpfast.stats as R
from dpfast import objects as O
from dpfast import query_release as Q
from dpfast.accounting import PrivacyBudget

PINNED = Path(__file__).parent / "data" / "seeded_digests.json"


def _g(seed=20261128):
    return dr.ChaCha20(seed)


def _canon(x, out):
    """Feed a canonical byte form of a result into ``out`` (type-tagged, exact)."""
    if isinstance(x, np.ndarray):
        out.update(b"nd" + x.dtype.str.encode() + repr(x.shape).encode())
        if x.dtype == object:
            for v in x.ravel():
                _canon(v, out)
        else:
            out.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, (bool, np.bool_)):
        out.update(b"b" + repr(bool(x)).encode())
    elif isinstance(x, (int, np.integer)):
        out.update(b"i" + repr(int(x)).encode())
    elif isinstance(x, (float, np.floating)):
        out.update(b"f" + float(x).hex().encode())
    elif isinstance(x, Fraction):
        out.update(b"q" + repr(x).encode())
    elif isinstance(x, str):
        out.update(b"s" + x.encode())
    elif x is None:
        out.update(b"N")
    elif isinstance(x, dict):
        out.update(b"d")
        for k in sorted(x, key=repr):
            _canon(k, out)
            _canon(x[k], out)
    elif isinstance(x, (tuple, list)):
        out.update(b"t" + repr(len(x)).encode())
        for v in x:
            _canon(v, out)
    elif hasattr(x, "to_dict") and hasattr(x, "columns"):  # a pandas DataFrame
        _canon({str(c): x[c].to_numpy() for c in x.columns}, out)
    else:
        raise TypeError(f"no canonical form for {type(x).__name__}")


def _digest(result, budget=None):
    h = hashlib.sha256()
    _canon(result, h)
    if budget is not None:  # the charge is part of the behaviour
        spent = budget.spent
        _canon((spent.epsilon, spent.delta, getattr(spent, "rho", None)), h)
    return h.hexdigest()


def _with_budget(fn, **budget_kw):
    b = PrivacyBudget(**(budget_kw or {"epsilon": 100.0, "delta": 0.5}))
    return _digest(fn(b), b)


X_F = np.linspace(-3.0, 7.5, 257)
X_I = np.arange(-50, 207, dtype=np.int64)
SCORES = np.sin(np.arange(300) * 0.37) * 40.0
SCORES_I = (np.arange(300) * 7919 % 101).astype(np.int64)
DATA = np.abs(np.cos(np.arange(5000) * 0.11)) * 90.0


def _samplers():
    c = {}
    c["chacha_raw"] = lambda: _digest(_g().random_raw(1000))
    c["generator_random"] = lambda: _digest(np.random.Generator(_g()).random(1000))
    for name, call in [
        ("uniform", lambda g: dr.uniform(size=999, rng=g)),
        ("laplace", lambda g: dr.laplace(0.5, 2.0, size=999, rng=g)),
        ("normal", lambda g: dr.normal(0.5, 2.0, size=999, rng=g)),
        ("gaussian", lambda g: dr.gaussian(3.0, size=999, rng=g)),
        ("exponential", lambda g: dr.exponential(2.0, size=999, rng=g)),
        ("gumbel", lambda g: dr.gumbel(0.0, 1.0, size=999, rng=g)),
        ("bernoulli", lambda g: dr.bernoulli(Fraction(1, 3), size=999, rng=g)),
        ("bernoulli_exp", lambda g: dr.bernoulli_exp(Fraction(3, 2), size=999, rng=g)),
        ("geometric", lambda g: dr.geometric(Fraction(7, 2), size=999, rng=g)),
        (
            "geometric_ct",
            lambda g: dr.geometric(Fraction(7, 2), size=99, rng=g, constant_time=True),
        ),
        (
            "discrete_laplace",
            lambda g: dr.discrete_laplace(Fraction(10, 3), size=999, rng=g),
        ),
        ("discrete_laplace_big", lambda g: dr.discrete_laplace(2**40, size=999, rng=g)),
        (
            "discrete_laplace_ct",
            lambda g: dr.discrete_laplace(3, size=99, rng=g, constant_time=True),
        ),
        (
            "discrete_gaussian_small",
            lambda g: dr.discrete_gaussian(Fraction(1, 2), size=999, rng=g),
        ),
        ("discrete_gaussian", lambda g: dr.discrete_gaussian(30, size=999, rng=g)),
        ("discrete_gaussian_big", lambda g: dr.discrete_gaussian(10**6, size=999, rng=g)),
        (
            "discrete_gaussian_scalar",
            lambda g: [dr.discrete_gaussian(7, rng=g) for _ in range(50)],
        ),
        (
            "discrete_gaussian_ct",
            lambda g: dr.discrete_gaussian(3, size=50, rng=g, constant_time=True),
        ),
        (
            "laplace_truncated",
            lambda g: dr.laplace_truncated(np.zeros(99), 1.5, -2.0, 2.0, rng=g),
        ),
        ("gamma", lambda g: dr.gamma(2.5, 1.0, size=999, rng=g)),
        ("uniform_full_precision", lambda g: dr.uniform_full_precision(size=999, rng=g)),
    ]:
        c["random." + name] = lambda call=call: _digest(call(_g()))
    return c


def _mechanisms():
    c = {}
    cases = [
        (
            "laplace_float",
            lambda g, b: M.laplace_mechanism(
                X_F, epsilon=0.7, sensitivity=2.0, rng=g, budget=b
            ),
        ),
        (
            "laplace_scalar",
            lambda g, b: M.laplace_mechanism(3.25, epsilon=0.7, rng=g, budget=b),
        ),
        (
            "laplace_int",
            lambda g, b: M.laplace_mechanism(X_I, epsilon=0.7, rng=g, budget=b),
        ),
        (
            "laplace_fast",
            lambda g, b: M.laplace_mechanism(
                X_F, epsilon=0.7, mode="fast", rng=g, budget=b
            ),
        ),
        (
            "geometric",
            lambda g, b: M.geometric_mechanism(X_I, epsilon=0.3, rng=g, budget=b),
        ),
        (
            "gaussian_float",
            lambda g, b: M.gaussian_mechanism(
                X_F, epsilon=0.5, delta=1e-6, rng=g, budget=b
            ),
        ),
        (
            "gaussian_scalar",
            lambda g, b: M.gaussian_mechanism(
                1.5, epsilon=0.5, delta=1e-6, rng=g, budget=b
            ),
        ),
        (
            "gaussian_int",
            lambda g, b: M.gaussian_mechanism(
                X_I, epsilon=0.5, delta=1e-6, rng=g, budget=b
            ),
        ),
        (
            "gaussian_fast",
            lambda g, b: M.gaussian_mechanism(
                X_F, epsilon=0.5, delta=1e-6, mode="fast", rng=g, budget=b
            ),
        ),
        (
            "discrete_gaussian",
            lambda g, b: M.discrete_gaussian_mechanism(
                X_I, epsilon=0.5, delta=1e-6, rng=g, budget=b
            ),
        ),
        ("gaussian_sigma", lambda g, b: M.gaussian_sigma(0.5, 1e-6)),
        (
            "exponential",
            lambda g, b: [
                S.exponential_mechanism(SCORES, epsilon=0.9, rng=g, budget=b)
                for _ in range(20)
            ],
        ),
        (
            "exponential_int",
            lambda g, b: [
                S.exponential_mechanism(SCORES_I, epsilon=0.9, rng=g, budget=b)
                for _ in range(20)
            ],
        ),
        (
            "exponential_fast",
            lambda g, b: [
                S.exponential_mechanism(SCORES, epsilon=0.9, rng=g, mode="fast", budget=b)
                for _ in range(20)
            ],
        ),
        (
            "report_noisy_max",
            lambda g, b: [
                S.report_noisy_max(SCORES, epsilon=0.9, rng=g, budget=b) for _ in range(20)
            ],
        ),
        (
            "permute_and_flip",
            lambda g, b: [
                S.permute_and_flip(SCORES, epsilon=0.9, rng=g, budget=b) for _ in range(20)
            ],
        ),
        ("top_k", lambda g, b: S.top_k(SCORES, 5, epsilon=0.9, rng=g, budget=b)),
        ("coin_response", lambda g, b: RR.coin_response(X_I % 2 == 0, rng=g, budget=b)),
        (
            "randomized_response",
            lambda g, b: RR.randomized_response(X_I % 3 == 0, epsilon=1.2, rng=g, budget=b),
        ),
        (
            "kary_response",
            lambda g, b: RR.kary_response(X_I % 7, 7, epsilon=1.2, rng=g, budget=b),
        ),
    ]
    for name, call in cases:
        c["mechanisms." + name] = lambda call=call: _with_budget(lambda b: call(_g(), b))
    return c


def _objects():
    c = {}
    cases = [
        ("Laplace", lambda: O.Laplace(0.7, 2.0), X_F),
        ("DiscreteLaplace", lambda: O.DiscreteLaplace(0.7), X_I),
        ("Gaussian_eps", lambda: O.Gaussian(epsilon=0.5, delta=1e-6), X_F),
        ("RandomizedResponse", lambda: O.RandomizedResponse(1.1, k=5), X_I % 5),
    ]
    for name, make, x in cases:

        def run(make=make, x=x):
            obj = make()
            cost = obj.privacy_cost
            return _with_budget(
                lambda b: (
                    obj.release(x, rng=_g(), budget=b),
                    cost.epsilon,
                    cost.delta,
                    cost.rho,
                )
            )

        c["objects." + name] = run

    def em():
        obj = O.ExponentialMechanism(0.9)
        cost = obj.privacy_cost
        return _with_budget(
            lambda b: (
                [obj.release(SCORES, rng=_g(i), budget=b) for i in range(10)],
                cost.epsilon,
                cost.rho,
            )
        )

    c["objects.ExponentialMechanism"] = em

    def zcdp(make, x):
        def run():
            obj = make()
            b = PrivacyBudget(rho=10.0, composition="zcdp")
            return _digest([obj.release(x, rng=_g(i), budget=b) for i in range(3)], b)

        return run

    c["objects.ExponentialMechanism_zcdp"] = zcdp(
        lambda: O.ExponentialMechanism(0.9), SCORES
    )
    c["objects.Gaussian_rho_zcdp"] = zcdp(lambda: O.Gaussian(rho=0.1), X_I)
    c["objects.Gaussian_sigma_zcdp"] = zcdp(lambda: O.Gaussian(sigma=3.5), X_F)
    c["objects.Gaussian_eps_zcdp"] = zcdp(lambda: O.Gaussian(epsilon=0.5, delta=1e-6), X_F)
    return c


def _sparse():
    c = {}
    q = np.sin(np.arange(2000) * 0.05) * 10.0

    def at(mode):
        def run():
            def go(b):
                s = SP.AboveThreshold(5.0, epsilon=0.8, rng=_g(), mode=mode, budget=b)
                return s.feed(q)

            return _with_budget(go)

        return run

    def sparse(cls, **kw):
        def run():
            def go(b):
                s = cls(5.0, cutoff=4, epsilon=0.8, rng=_g(), budget=b, **kw)
                return s.feed(q)

            return _with_budget(go)

        return run

    c["sparse.AboveThreshold"] = at("secure")
    c["sparse.AboveThreshold_fast"] = at("fast")
    c["sparse.Sparse"] = sparse(SP.Sparse)
    c["sparse.Sparse_delta"] = sparse(SP.Sparse, delta=1e-6)
    c["sparse.NumericSparse"] = sparse(SP.NumericSparse)
    return c


def _releases():
    c = {}
    cat = (np.arange(3000) * 31 % 7).astype(np.int64)
    cases = [
        ("count", lambda g, b: R.count(DATA, epsilon=0.5, rng=g, budget=b)),
        (
            "sum",
            lambda g, b: R.sum(DATA, lower=0.0, upper=100.0, epsilon=0.5, rng=g, budget=b),
        ),
        (
            "mean",
            lambda g, b: R.mean(DATA, lower=0.0, upper=100.0, epsilon=0.5, rng=g, budget=b),
        ),
        (
            "variance",
            lambda g, b: R.variance(
                DATA, lower=0.0, upper=100.0, epsilon=0.5, rng=g, budget=b
            ),
        ),
        (
            "std",
            lambda g, b: R.std(DATA, lower=0.0, upper=100.0, epsilon=0.5, rng=g, budget=b),
        ),
        (
            "histogram",
            lambda g, b: R.histogram(
                DATA, 12, range=(0.0, 100.0), epsilon=0.5, rng=g, budget=b
            ),
        ),
        (
            "quantile",
            lambda g, b: R.quantile(
                DATA, 0.3, lower=0.0, upper=100.0, epsilon=0.5, rng=g, budget=b
            ),
        ),
        (
            "quantiles",
            lambda g, b: R.quantiles(
                DATA, [0.1, 0.5, 0.9], lower=0.0, upper=100.0, epsilon=0.5, rng=g, budget=b
            ),
        ),
        ("counts", lambda g, b: R.counts(cat, np.arange(7), epsilon=0.5, rng=g, budget=b)),
        (
            "estimate_bounds",
            lambda g, b: tuple(R.estimate_bounds(DATA, epsilon=0.5, rng=g, budget=b)),
        ),
        (
            "partition_selection_probability",
            lambda g, b: R.partition_selection_probability(
                np.arange(12), epsilon=1.0, delta=1e-5, max_partitions=2
            ),
        ),
    ]
    for name, call in cases:
        c["releases." + name] = lambda call=call: _with_budget(lambda b: call(_g(), b))

    units = np.arange(4000) % 900
    keys = (np.arange(4000) * 13 % 37).astype(np.int64)
    vals = (np.arange(4000) % 50).astype(np.float64)
    for name, st, kw in [
        ("count", "count", {}),
        ("count+sum+mean", ("count", "sum", "mean"), {"lower": 0.0, "upper": 49.0}),
        ("count_public", "count", {"public_partitions": np.arange(40)}),
        ("count_gaussian", "count", {"noise": "gaussian"}),
    ]:

        def run(st=st, kw=kw):
            return _with_budget(
                lambda b: R.grouped_release(
                    units=units,
                    keys=keys,
                    values=vals,
                    statistics=st,
                    epsilon=1.0,
                    delta=1e-6,
                    max_partitions=2,
                    max_contributions=2,
                    rng=_g(),
                    budget=b,
                    **kw,
                )
            )

        c["grouped." + name] = run
    return c


def _query_release():
    c = {}
    dom = Q.Domain(["a", "b", "c"], [4, 3, 5])
    counts = (np.arange(dom.size) * 17 % 23).astype(np.float64)
    hist = Q.Histogram(dom, counts)
    wl = Q.MarginalWorkload(dom, [("a", "b"), ("b", "c"), ("a",)])
    n = float(counts.sum())
    cases = [
        (
            "laplace_marginals",
            lambda b: Q.laplace_marginals(wl, hist, epsilon=1.0, rng=_g(), budget=b),
        ),
        (
            "gaussian_marginals",
            lambda b: Q.gaussian_marginals(
                wl, hist, epsilon=1.0, delta=1e-6, rng=_g(), budget=b
            ),
        ),
        (
            "laplace_per_query",
            lambda b: Q.laplace_per_query(wl, hist, epsilon=1.0, rng=_g(), budget=b),
        ),
        (
            "gaussian_per_query",
            lambda b: Q.gaussian_per_query(
                wl, hist, epsilon=1.0, delta=1e-6, rng=_g(), budget=b
            ),
        ),
    ]
    for name, call in cases:
        c["release." + name] = lambda call=call: _with_budget(call)
    for name, kw in [
        ("exponential", {}),
        ("permute_and_flip", {"select": "permute_and_flip"}),
        ("gaussian", {"measure": "gaussian", "delta": 1e-6}),
        (
            "pf_gaussian",
            {"select": "permute_and_flip", "measure": "gaussian", "delta": 1e-6},
        ),
    ]:

        def mwem(kw=kw):
            def go(b):
                m = Q.MWEM(wl, epsilon=1.0, rounds=4, n_public=n, rng=_g(), budget=b, **kw)
                r = m.run(hist)
                cost = m.privacy_cost
                return (r.answers, cost.epsilon, cost.delta, cost.rho)

            return _with_budget(go)

        c["release.MWEM_" + name] = mwem

    def pmw():
        def go(b):
            p = Q.OnlinePMW(
                hist, epsilon=1.0, n_public=n, cutoff=3, threshold=4.0, rng=_g(), budget=b
            )
            qs = [Q.CellQuery(dom, ("a", "b"), (i % 4, i % 3)) for i in range(12)]
            return [p.answer(q) for q in qs]

        return _with_budget(go)

    c["release.OnlinePMW"] = pmw

    def bfq():
        def go(b):
            m = Q.BoostingForQueries(
                wl, epsilon=1.0, n_public=n, rounds=3, k=4, rng=_g(), budget=b
            )
            r = m.run(hist)
            return r.answers

        return _with_budget(go)

    c["release.BoostingForQueries"] = bfq
    return c


def _learn():
    from dpfast.learn import PrivateBoostingClassifier

    c = {}
    rs = np.random.default_rng(5)
    X = rs.integers(0, 4, size=(2000, 3)).astype(np.float64)
    y = np.where(X[:, 0] + X[:, 1] > 3, 1, -1)

    def fit():
        def go(b):
            clf = PrivateBoostingClassifier(
                n_rounds=4,
                sample_size=200,
                smoothness=300,
                gamma=0.001,
                epsilon_threshold=1.0,
                thresholds=[0.5, 1.5, 2.5],
                rng=_g(),
                budget=b,
            )
            clf.fit(X, y)
            return clf.predict(X), clf.decision_function(X)

        return _with_budget(go)

    c["learn.PrivateBoostingClassifier"] = fit
    return c


CASES = {
    **_samplers(),
    **_mechanisms(),
    **_objects(),
    **_sparse(),
    **_releases(),
    **_query_release(),
    **_learn(),
}


def _pinned():
    return json.loads(PINNED.read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeded_output_is_pinned(name):
    pinned = _pinned()
    assert name in pinned, f"{name} has no pinned digest: run this file with --write"
    assert CASES[name]() == pinned[name]


def test_every_pinned_case_still_runs():
    assert set(_pinned()) == set(CASES)


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    if "--write" not in sys.argv:
        sys.exit("usage: python tests/test_seeded_digests.py --write")
    PINNED.write_text(json.dumps({k: CASES[k]() for k in sorted(CASES)}, indent=1) + "\n")
    print(f"wrote {len(CASES)} digests to {PINNED}")
