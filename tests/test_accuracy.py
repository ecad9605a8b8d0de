"""dpfast.accuracy: the bounds hold empirically (binomial tests at ALPHA with fixed seeds),
are exact where the theorem is (one Laplace or Gaussian coordinate), invert correctly, and
validate their arguments."""

import math

import numpy as np
import pytest
from scipy import stats

import dpfast
import dpfast.random as dr
from dpfast import accuracy as A
from dpfast import mechanisms
from dpfast import randomized_response as RR
from dpfast import selection as S
from stat_helpers import ALPHA


def at_most(k, n, p):
    """The observed failure count is not significantly above rate p (one-sided)."""
    assert stats.binomtest(k, n, p, alternative="greater").pvalue > ALPHA


def exactly(k, n, p):
    assert stats.binomtest(k, n, p).pvalue > ALPHA


def test_example_3_3_first_names():
    # "with probability 95%, no estimate will be off by more than ln(10000/.05) = 12.2"
    assert math.isclose(A.laplace_error(1.0, beta=0.05, k=10_000), math.log(200_000))
    assert round(A.laplace_error(1.0, beta=0.05, k=10_000), 1) == 12.2


def test_laplace_single_coordinate_is_exact(seeded):
    eps, sens, beta, n = 0.5, 2.0, 0.1, 400_000
    alpha = A.laplace_error(eps, beta=beta, sensitivity=sens)
    y = dr.laplace(0.0, sens / eps, n, rng=seeded(1))
    exactly(int((np.abs(y) >= alpha).sum()), n, beta)


@pytest.mark.parametrize("mode", ["secure", "fast"])
def test_laplace_k_queries_bound(mode, seeded):
    eps, k, beta, n = 1.0, 20, 0.05, 20_000
    alpha = A.laplace_error(eps, beta=beta, k=k)
    g = seeded(2)
    zero = np.zeros(k)
    fails = sum(
        np.abs(mechanisms.laplace_mechanism(zero, epsilon=eps, rng=g, mode=mode)).max()
        >= alpha
        for _ in range(n)
    )
    at_most(fails, n, beta)


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize("mono", [False, True])
def test_exponential_mechanism_bound(mode, mono, seeded):
    eps, beta, n = 1.0, 0.05, 20_000
    u = np.concatenate([[30.0, 30.0], np.linspace(0, 25, 48)])  # |R| = 50, |R_OPT| = 2
    alpha = A.exponential_mechanism_error(
        eps, n_candidates=50, n_optimal=2, beta=beta, monotonic=mono
    )
    g = seeded(3)
    out = np.array(
        [
            S.exponential_mechanism(u, epsilon=eps, monotonic=mono, rng=g, mode=mode)
            for _ in range(n)
        ]
    )
    at_most(int((u[out] <= 30.0 - alpha).sum()), n, beta)
    out = np.array(
        [
            S.permute_and_flip(u, epsilon=eps, monotonic=mono, rng=g, mode=mode)
            for _ in range(n)
        ]
    )
    at_most(int((u[out] <= 30.0 - alpha).sum()), n, beta)


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_report_noisy_max_bound(noise, seeded):
    eps, beta, n = 1.0, 0.05, 20_000
    u = np.concatenate([[20.0], np.full(99, 12.0)])  # many near-competitors
    alpha = A.report_noisy_max_error(eps, n_candidates=100, beta=beta, noise=noise)
    g = seeded(4)
    out = np.array(
        [S.report_noisy_max(u, epsilon=eps, noise=noise, rng=g) for _ in range(n)]
    )
    at_most(int((u[out] <= 20.0 - alpha).sum()), n, beta)


def test_gaussian_bounds(seeded):
    sigma, beta, n = 1.7, 0.02, 400_000
    y = dr.normal(0.0, sigma, n, rng=seeded(5))
    exactly(int((np.abs(y) >= A.gaussian_error(sigma, beta=beta)).sum()), n, beta)
    k = 8
    y = dr.normal(0.0, sigma, (50_000, k), rng=seeded(6))
    at_most(
        int((np.abs(y).max(axis=1) >= A.gaussian_error(sigma, beta=beta, k=k)).sum()),
        50_000,
        beta,
    )
    eps, delta = 0.5, 1e-6
    alpha = A.gaussian_mechanism_error(eps, delta=delta, beta=beta, l2_sensitivity=2.0)
    s = math.sqrt(2 * math.log(1.25 / delta)) * 2.0 / eps
    y = dr.normal(0.0, s, n, rng=seeded(7))
    exactly(int((np.abs(y) >= alpha).sum()), n, beta)


@pytest.mark.parametrize("k", [2, 5])
def test_randomized_response_bound(k, seeded):
    eps, n, R, beta = 1.0, 500, 4000, 0.1
    alpha = A.randomized_response_error(eps, n=n, beta=beta, k=k)
    vals = np.random.default_rng(0).integers(0, k, size=(R, n))
    g = seeded(8)
    fails = 0
    if k == 2:
        reps = RR.randomized_response(vals.astype(bool), epsilon=eps, rng=g)
        for i in range(R):
            est, _ = RR.estimate_proportion(reps[i], epsilon=eps)
            fails += abs(est - vals[i].mean()) >= alpha
    else:
        reps = RR.kary_response(vals, k, epsilon=eps, rng=g)
        for i in range(R):
            est, _ = RR.estimate_frequencies(reps[i], k, epsilon=eps)
            fails += np.abs(est - np.bincount(vals[i], minlength=k) / n).max() >= alpha
    at_most(int(fails), R, beta)


# ---------------------------------------------------------------- inverses

INVERSES = [
    (A.laplace_error, A.laplace_epsilon, dict(beta=0.05, sensitivity=3.0, k=7)),
    (
        A.exponential_mechanism_error,
        A.exponential_mechanism_epsilon,
        dict(n_candidates=1000, beta=0.01, sensitivity=2.0, n_optimal=3),
    ),
    (
        A.exponential_mechanism_error,
        A.exponential_mechanism_epsilon,
        dict(n_candidates=10, beta=0.2, monotonic=True),
    ),
    (
        A.report_noisy_max_error,
        A.report_noisy_max_epsilon,
        dict(n_candidates=64, beta=0.05, noise="laplace"),
    ),
    (
        A.report_noisy_max_error,
        A.report_noisy_max_epsilon,
        dict(n_candidates=64, beta=0.05, noise="exponential", monotonic=True),
    ),
    (A.randomized_response_error, A.randomized_response_epsilon, dict(n=10_000, beta=0.05)),
    (
        A.randomized_response_error,
        A.randomized_response_epsilon,
        dict(n=10_000, beta=0.05, k=6),
    ),
]


@pytest.mark.parametrize("error, inverse, kw", INVERSES)
def test_inverses(error, inverse, kw):
    for eps in [0.01, 0.3, 1.0, 4.0]:
        alpha = error(eps, **kw)
        assert math.isclose(inverse(alpha, **kw), eps, rel_tol=1e-9)
        assert error(eps * 2, **kw) < alpha  # more budget, less error


def test_gaussian_inverses():
    for sigma in [0.1, 1.0, 30.0]:
        a = A.gaussian_error(sigma, beta=0.05, k=4)
        assert math.isclose(A.gaussian_max_sigma(a, beta=0.05, k=4), sigma, rel_tol=1e-12)
    for eps in [0.05, 0.5, 0.9]:
        a = A.gaussian_mechanism_error(eps, delta=1e-5, beta=0.1, l2_sensitivity=2.0, k=3)
        assert math.isclose(
            A.gaussian_mechanism_epsilon(a, delta=1e-5, beta=0.1, l2_sensitivity=2.0, k=3),
            eps,
            rel_tol=1e-12,
        )


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda: A.laplace_error(1.0, beta=0.0), dpfast.PrivacyParameterError),
        (lambda: A.laplace_error(1.0, beta=1.0), dpfast.PrivacyParameterError),
        (lambda: A.laplace_error(1.0, beta=float("nan")), dpfast.PrivacyParameterError),
        (lambda: A.laplace_error(1.0, beta=True), TypeError),
        (lambda: A.laplace_error(0.0, beta=0.1), dpfast.PrivacyParameterError),
        (lambda: A.laplace_error(1.0, beta=0.1, k=0), dpfast.PrivacyParameterError),
        (lambda: A.laplace_error(1.0, beta=0.1, k=2.5), TypeError),
        (
            lambda: A.laplace_error(1.0, beta=0.1, sensitivity=-1),
            dpfast.PrivacyParameterError,
        ),
        (lambda: A.laplace_epsilon(float("inf"), beta=0.1), dpfast.PrivacyParameterError),
        (lambda: A.laplace_error(1.0), TypeError),
        (
            lambda: A.exponential_mechanism_error(
                1.0, n_candidates=5, n_optimal=6, beta=0.1
            ),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: A.exponential_mechanism_error(1.0, n_candidates=0, beta=0.1),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: A.exponential_mechanism_error(
                1.0, n_candidates=5, beta=0.1, monotonic=1
            ),
            TypeError,
        ),
        (
            lambda: A.report_noisy_max_error(
                1.0, n_candidates=5, beta=0.1, noise="gaussian"
            ),
            dpfast.PrivacyParameterError,
        ),
        (lambda: A.gaussian_error(0.0, beta=0.1), dpfast.PrivacyParameterError),
        (
            lambda: A.gaussian_mechanism_error(1.0, delta=1e-5, beta=0.1),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: A.gaussian_mechanism_error(0.5, delta=0.0, beta=0.1),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: A.gaussian_mechanism_epsilon(1e-6, delta=1e-5, beta=0.1),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: A.randomized_response_epsilon(1e-4, n=100, beta=0.1),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: A.randomized_response_error(1.0, n=0, beta=0.1),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: A.randomized_response_error(1.0, n=10, beta=0.1, k=1),
            dpfast.PrivacyParameterError,
        ),
    ],
)
def test_validation(call, exc):
    with pytest.raises(exc):
        call()


def test_huge_epsilon_is_finite():
    assert A.randomized_response_error(1e300, n=10, beta=0.1) > 0
    assert A.laplace_error(1e300, beta=0.1) > 0


def test_the_old_name_of_gaussian_max_sigma_warns_and_still_answers():
    with pytest.warns(DeprecationWarning, match="gaussian_max_sigma"):
        old = A.gaussian_sigma
    assert old is A.gaussian_max_sigma
    with pytest.raises(AttributeError):
        A.no_such_function  # noqa: B018
