"""Extreme public parameters of the composite releases (grouped, everyday statistics,
query release) are refused with documented exceptions *before* anything is charged,
never with OverflowError/ZeroDivisionError or an internal error after the charge
(issue 22 item 11)."""

import math
import sys
from fractions import Fraction

import numpy as np
import pytest

import dpfast
import dpfast.stats as R
from dpfast import _core
from dpfast import grouped as G
from dpfast import mechanisms as M
from dpfast import query_release as Q
from dpfast import random as dr
from dpfast.accounting import PrivacyBudget

DOM = Q.Domain(["a", "b"], [3, 2])
WL = Q.MarginalWorkload(DOM, [("a",), ("b",)])
HIST = Q.Histogram(DOM, np.arange(6.0))
UNITS, KEYS = list(range(100)), [1] * 100


def _documented(exc):
    return (
        isinstance(exc, (TypeError, ValueError, dpfast.DPFastError))
        and "internal error" not in str(exc)
        and not isinstance(exc, (OverflowError, ZeroDivisionError))
    )


CALLS = {
    "MWEM": lambda b, e, n: Q.MWEM(WL, epsilon=e, rounds=3, n_public=n, budget=b).run(HIST),
    "MWEM_pf": lambda b, e, n: Q.MWEM(
        WL, epsilon=e, rounds=3, n_public=n, select="permute_and_flip", budget=b
    ).run(HIST),
    "MWEM_gauss": lambda b, e, n: Q.MWEM(
        WL, epsilon=e, rounds=3, n_public=n, measure="gaussian", delta=1e-6, budget=b
    ).run(HIST),
    "Boosting": lambda b, e, n: Q.BoostingForQueries(
        WL, epsilon=e, rounds=3, k=2, n_public=n, budget=b
    ).run(HIST),
    "Boosting_gauss": lambda b, e, n: Q.BoostingForQueries(
        WL, epsilon=e, rounds=3, k=2, n_public=n, noise="gaussian", delta=1e-6, budget=b
    ).run(HIST),
    "laplace_marginals": lambda b, e, n: Q.laplace_marginals(
        WL, HIST, epsilon=e, n_public=n, budget=b
    ),
    "laplace_per_query": lambda b, e, n: Q.laplace_per_query(
        WL, HIST, epsilon=e, n_public=n, budget=b
    ),
    "gaussian_marginals": lambda b, e, n: Q.gaussian_marginals(
        WL, HIST, epsilon=e, delta=1e-6, budget=b
    ),
    "grouped": lambda b, e, n: R.grouped_release(
        units=UNITS, keys=KEYS, epsilon=e, delta=1e-6, max_partitions=1, budget=b
    ),
    "grouped_public": lambda b, e, n: R.grouped_release(
        units=UNITS,
        keys=KEYS,
        epsilon=e,
        delta=1e-6,
        max_partitions=1,
        public_partitions=[1],
        budget=b,
    ),
    "grouped_mean": lambda b, e, n: R.grouped_release(
        units=UNITS,
        keys=KEYS,
        values=[1.0] * 100,
        statistics=("count", "sum", "mean"),
        lower=0.0,
        upper=2.0,
        epsilon=e,
        delta=1e-6,
        max_partitions=1,
        budget=b,
    ),
}
EPSILONS = [5e-324, 1e-300, 1e-20, 1e-12, 700.0, 1e6, 1e308]
N_PUBLIC = [5e-324, 1e-300, 1e-5, 10.0]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_extreme_epsilon_and_n_public_refused_before_the_charge(name):
    for eps in EPSILONS:
        for n in N_PUBLIC:
            b = PrivacyBudget(epsilon=1e300, delta=0.5)
            try:
                CALLS[name](b, eps, n)
            except Exception as exc:  # noqa: BLE001
                assert _documented(exc), (eps, n, repr(exc))
                assert b.spent.epsilon == 0.0, (eps, n, repr(exc))  # refused: no charge


@pytest.mark.parametrize("bound", [1e308, 1e300, 1e200, 1e155])
@pytest.mark.parametrize("stat", ["variance", "std", "mean", "sum"])
def test_huge_bounds_of_everyday_statistics(stat, bound):
    """Refused before the charge, or answered with a finite number whatever the noise
    (the noisy sum near the largest double once raised OverflowError for 1 seed in 5)."""
    from dpfast.random import ChaCha20

    for seed in range(60):
        b = PrivacyBudget(epsilon=10.0)
        try:
            out = getattr(R, stat)(
                np.arange(10.0),
                lower=-bound,
                upper=bound,
                epsilon=1.0,
                budget=b,
                rng=ChaCha20(seed),
            )
        except Exception as exc:  # noqa: BLE001
            assert _documented(exc) and b.spent.epsilon == 0.0, repr(exc)
        else:
            assert np.isfinite(out) and b.spent.epsilon == 1.0


@pytest.mark.parametrize("eps", [600.0, 700.0, 1e6, 1e308])
def test_partition_selection_never_keeps_a_one_unit_partition_beyond_delta(eps):
    """e^eps beyond the doubles once took a branch that kept every partition; the table
    is now built at min(eps, 600), which is (eps, delta)-DP for every larger eps."""
    delta = 1e-6
    p = R.partition_selection_probability([0, 1, 2, 3], epsilon=eps, delta=delta)
    assert p[0] == 0.0 and 0.0 < p[1] <= delta and p[2] == p[3] == 1.0
    table = G._selection_table(Fraction(eps), Fraction(delta))
    assert table.size <= 3 and int(table[1]) <= Fraction(delta) * 2**64


# ---------------------------------------------------------------- coarse grids (k >= 971)


def _exact_grid_release(x, z, k):
    """fl(2^k (round_half_even(x / 2^k) + z)), exactly, IEEE overflow to +-inf included."""
    g = Fraction(2) ** k
    m = round(Fraction(x) / g)  # Python's round: ties to even
    exact = g * (m + z)
    top = Fraction(2) ** 1024 - Fraction(2) ** (1024 - 54)  # where IEEE rounds to inf
    if abs(exact) >= top:
        return math.inf if exact > 0 else -math.inf
    if abs(exact) >= Fraction(sys.float_info.max):  # rounds down to the largest double
        return sys.float_info.max if exact > 0 else -sys.float_info.max
    return float(exact)  # correctly rounded (Fraction.__float__)


@pytest.mark.parametrize("k", [969, 970, 971, 972, 983, 1000])
def test_grid_release_on_coarse_grids_is_the_correctly_rounded_sum(k):
    """dpf_grid_add on grids of 2^971 and coarser: x near the largest double rounds to
    2^1024, which overflowed to inf before the noise was added (inf - inf = NaN: a NaN
    output told neighbours apart).  Now every output is fl(g (m + z)), never NaN."""
    fmax = sys.float_info.max
    xs = [
        fmax,
        -fmax,
        fmax * (1 - 2.0**-40),
        -fmax / 3,
        0.0,
        -0.0,
        5e-324,
        2.0**k,
        2.0 ** (k - 1),
        -(2.0 ** (k - 1)) * 3,
    ]
    zs = [0, 1, -1, 2**40, -(2**40), 2**52 + 1, -(2**53 - 1), 2**53 - 1]
    for x in xs:
        for z in zs:
            got = _core.grid_add(x, z, k)
            assert not math.isnan(got), (x, z, k)
            assert got == _exact_grid_release(x, z, k), (x, z, k)


def test_laplace_at_a_scale_near_the_largest_double_never_releases_nan():
    out = M.laplace_mechanism(
        np.full(4000, -sys.float_info.max),
        epsilon=1.0,
        sensitivity=1e308,
        rng=dr.ChaCha20(5),
    )
    assert not np.isnan(out).any()
    assert np.isin(np.sign(out), [-1.0, 1.0]).all()
