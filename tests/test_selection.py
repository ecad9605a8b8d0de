"""Selection: every mechanism against its exact law (chi-square at ALPHA, fixed seeds),
permute-and-flip's law versus the exponential mechanism's, extreme scores, validation,
and the budget charged before anything is drawn."""

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

import dpfast
import dpfast.random as dr
from dpfast import _core
from dpfast import selection as S
from dpfast._validation import charged
from dpfast.accounting import PrivacyBudget
from stat_helpers import ALPHA, chi2_pvalue

MODES = ["secure", "fast"]


# ---------------------------------------------------------------- exact laws


def em_law(u, gamma):
    """P(i) proportional to exp(gamma u_i)."""
    u = np.asarray(u, dtype=float)
    w = np.exp(gamma * (u - u.max()))
    return w / w.sum()


def pf_law(u, gamma):
    """Permute-and-flip (McKenna & Sheldon): a uniformly random order; stop at r with
    probability p_r = exp(gamma (u_r - max u)).  r is output iff the set S of candidates
    before it (a subset of size s with probability s!(m-1-s)!/m!) all refuse."""
    u = np.asarray(u, dtype=float)
    p = np.exp(gamma * (u - u.max()))
    m = len(u)
    out = np.zeros(m)
    for r in range(m):
        others = [j for j in range(m) if j != r]
        for s in range(m):
            w = math.factorial(s) * math.factorial(m - 1 - s) / math.factorial(m)
            for S_ in itertools.combinations(others, s):
                out[r] += w * np.prod([1 - p[j] for j in S_])
        out[r] *= p[r]
    return out


def discrete_noisy_max_law(k, pmf, zmin, zmax):
    """argmax_i (k_i + Z_i) with Z_i iid of pmf on zmin..zmax, ties uniform: exact sums
    (vectorised over the noise value of the candidate in question)."""
    k = list(k)
    m = len(k)
    zs = np.arange(zmin, zmax + 1)
    p = np.array([pmf(int(z)) for z in zs])
    cdf = np.concatenate([[0.0], np.cumsum(p)])  # cdf[i] = P(Z < zmin + i)

    def F_below(v):  # P(Z < v), vectorised
        idx = np.clip(v - zmin, 0, len(zs))
        return cdf[idx]

    def f(v):
        idx = v - zmin
        ok = (idx >= 0) & (idx < len(zs))
        return np.where(ok, p[np.clip(idx, 0, len(zs) - 1)], 0.0)

    out = np.zeros(m)
    for i in range(m):
        v = k[i] + zs  # candidate i's noisy value
        poly = np.zeros((len(zs), m))  # coefficients in t (ties)
        poly[:, 0] = 1.0
        for j in range(m):
            if j == i:
                continue
            a, b = F_below(v - k[j]), f(v - k[j])  # j below, j tied
            new = poly * a[:, None]
            new[:, 1:] += poly[:, :-1] * b[:, None]
            poly = new
        out[i] = np.sum(p * (poly / (1.0 + np.arange(m))).sum(axis=1))
    return out


def laplace_noisy_max_law(u, b):
    """argmax_i (u_i + Lap(b)) by numerical integration."""
    u = np.asarray(u, dtype=float)
    out = []
    for i in range(len(u)):

        def g(x):
            val = stats.laplace.pdf(x, loc=u[i], scale=b)
            for j in range(len(u)):
                if j != i:
                    val *= stats.laplace.cdf(x, loc=u[j], scale=b)
            return val

        pts = sorted(set(u))
        val = integrate.quad(g, -np.inf, pts[0], limit=200)[0]
        for a, c in zip(pts, pts[1:] + [np.inf]):
            val += integrate.quad(g, a, c, limit=200)[0]
        out.append(val)
    return np.array(out)


def draw(fn, n, **kw):
    return np.array([fn(**kw) for _ in range(n)])


def assert_law(samples, law, alpha=ALPHA):
    counts = np.bincount(samples, minlength=len(law))
    assert counts.sum() == len(samples)
    assert chi2_pvalue(counts, law) > alpha


def grid_width(sensitivity, monotonic):
    """W of selection._grid recomputed from the docstring: G = 2^(floor(log2 D) - 12)."""
    G = 2.0 ** (math.floor(math.log2(sensitivity)) - 12)
    steps = sensitivity / G
    return G, (steps + 5 if monotonic else 2 * steps + 5)


# ---------------------------------------------------------------- exponential mechanism


@pytest.mark.parametrize(
    "scores, eps, sens, mono",
    [
        (np.arange(9, dtype=np.int64), 2.0, 1.0, False),  # one candidate per layer
        (np.array([3, 3, 3, 1, 0, -4], dtype=np.int64), 1.3, 0.5, False),
        (np.array([10, 7, 12, 12, 9], dtype=np.int64), 0.7, 2.0, True),
        (np.array([0, 4, 4, 5, 9], dtype=np.int64), 3.0, 3.0, False),
    ],
)
def test_em_secure_integer_scores_exact_law(scores, eps, sens, mono, seeded):
    g = seeded(11)
    x = draw(
        S.exponential_mechanism,
        60_000,
        scores=scores,
        epsilon=eps,
        sensitivity=sens,
        monotonic=mono,
        rng=g,
    )
    assert_law(x, em_law(scores, eps / (sens if mono else 2 * sens)))


@pytest.mark.parametrize(
    "scores, eps, sens, mono",
    [
        ([0.0, 0.5, 1.0, 1.5, 2.25], 2.0, 1.0, False),
        ([-3.0, 0.0, 0.75, 0.75, 1.125], 1.0, 0.75, True),
    ],
)
def test_em_secure_float_scores_on_the_grid(scores, eps, sens, mono, seeded):
    # Scores on the public grid G are not rounded; the rate per score unit is
    # epsilon / (W G), W = 2 D/G + 5 (D/G + 5 when monotone) -- the documented law.
    G, W = grid_width(sens, mono)
    for s in scores:
        assert (s / G) == int(s / G)
    x = draw(
        S.exponential_mechanism,
        60_000,
        scores=scores,
        epsilon=eps,
        sensitivity=sens,
        monotonic=mono,
        rng=seeded(12),
    )
    assert_law(x, em_law(scores, eps / (W * G)))


def test_em_secure_float_rate_is_within_a_thousandth_of_the_ideal():
    for sens in [1e-9, 0.3, 1.0, 7.0, 1e12]:
        G, W = grid_width(sens, False)
        ideal = 1 / (2 * sens)
        assert 0.999 * ideal < 1 / (W * G) <= ideal


@pytest.mark.parametrize("mono", [False, True])
def test_em_fast_law(mono, seeded):
    u = [0.0, 0.3, 1.1, 2.0, 2.0, -1.0]
    x = draw(
        S.exponential_mechanism,
        60_000,
        scores=u,
        epsilon=1.5,
        sensitivity=0.5,
        monotonic=mono,
        rng=seeded(13),
        mode="fast",
    )
    assert_law(x, em_law(u, 1.5 / (0.5 if mono else 1.0)))


@pytest.mark.parametrize("shift", [0, 9, 30, 55, 58])
def test_em_secure_law_invariant_under_a_common_shift(shift, seeded):
    # Adding the same constant to every gap leaves the law unchanged.  Shifting moves the
    # candidates through the sampler's layers 0..48 and (gamma * 58 > 49) into the deep
    # layer, whose coins otherwise have negligible probability.
    u = np.arange(7, dtype=np.int64)
    inv, g, s = S._grid(1.7, 1.0, False, True)
    gamma = g / 2**s
    rng = seeded(14)
    x = np.array([_core.em_secure(u, inv, g, s, rng, shift) for _ in range(40_000)])
    assert_law(x, em_law(u, gamma))


def test_em_secure_large_input_finds_a_clear_winner(seeded):
    u = np.random.default_rng(0).normal(size=1_000_003)
    u[123_457] = 50.0
    for mode in MODES:
        assert (
            S.exponential_mechanism(u, epsilon=10.0, rng=seeded(16), mode=mode) == 123_457
        )


def test_em_all_equal_scores_are_uniform(seeded):
    for mode in MODES:
        for u in ([1e308] * 5, [-7] * 5):
            x = draw(
                S.exponential_mechanism,
                20_000,
                scores=u,
                epsilon=1.0,
                rng=seeded(17),
                mode=mode,
            )
            assert_law(x, np.full(5, 0.2))


# ---------------------------------------------------------------- layer coins


def test_layer_coin_constants_against_mpmath():
    # Bernoulli(c e^-k) = E[beta_N], N ~ Poisson(k): beta = 1 below J, bnum/bden at J.
    mpmath.mp.dps = 50
    cs = [(1024, 7)] + [(2 ** [0, 1, 2, 4, 5, 7, 8][r], r) for r in range(1, 7)]
    for (c, k), (kk, J, bnum, bden) in zip(cs, _core._selection_constants()):
        assert kk == k and 0 <= bnum < bden
        assert c < mpmath.e**k  # the probability c e^-k is <= 1
        head = sum(mpmath.mpf(k) ** j / mpmath.factorial(j) for j in range(J))
        beta = mpmath.mpf(bnum) / bden
        assert abs(head + beta * mpmath.mpf(k) ** J / mpmath.factorial(J) - c) < 1e-40
    # the layer envelope a(n) = 10 floor(n/7) + LB[n mod 7] <= n log2(e)
    for n in range(50):
        a = 10 * (n // 7) + [0, 1, 2, 4, 5, 7, 8][n % 7]
        assert 2**a <= mpmath.e**n


# ---------------------------------------------------------------- noisy max, PF


def test_pf_and_geometric_noisy_max_are_the_same_law():
    # The memorylessness argument of csrc/selection.c, checked numerically: argmax of
    # integer scores plus geometric noise, ties uniform, is permute-and-flip.
    k = [0, 2, 3, 3, 5]
    gamma = 0.6
    q = math.exp(-gamma)
    geo = discrete_noisy_max_law(k, lambda z: (1 - q) * q**z if z >= 0 else 0.0, 0, 120)
    np.testing.assert_allclose(geo, pf_law(k, gamma), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", ["permute_and_flip", "rnm_exponential"])
def test_permute_and_flip_law(mode, fn, seeded):
    u = np.array([0, 2, 3, 3, 5, -2], dtype=np.int64)
    eps, sens = 1.2, 1.0
    if fn == "permute_and_flip":
        f = lambda: S.permute_and_flip(u, epsilon=eps, sensitivity=sens, rng=g, mode=mode)
    else:
        f = lambda: S.report_noisy_max(
            u, epsilon=eps, sensitivity=sens, noise="exponential", rng=g, mode=mode
        )
    g = seeded(21)
    x = np.array([f() for _ in range(60_000)])
    assert_law(x, pf_law(u, eps / (2 * sens)))


def test_permute_and_flip_is_not_the_exponential_mechanism(seeded):
    # The SPEC erratum on Thm 3.13: scores 0 and c, rate gamma = 1 per unit, c = 1:
    # PF picks the worse with probability e^-1/2 = 0.184, EM with 1/(1 + e) = 0.269.
    u = np.array([0, 1], dtype=np.int64)
    for mode in MODES:
        x = draw(
            S.permute_and_flip, 20_000, scores=u, epsilon=2.0, rng=seeded(22), mode=mode
        )
        counts = np.bincount(x, minlength=2)
        assert chi2_pvalue(counts, pf_law(u, 1.0)) > ALPHA
        assert chi2_pvalue(counts, em_law(u, 1.0)) < ALPHA
        y = draw(
            S.exponential_mechanism,
            20_000,
            scores=u,
            epsilon=2.0,
            rng=seeded(23),
            mode=mode,
        )
        assert chi2_pvalue(np.bincount(y, minlength=2), pf_law(u, 1.0)) < ALPHA


@pytest.mark.parametrize("mono", [False, True])
def test_rnm_laplace_secure_exact_discrete_law(mono, seeded):
    # Integer scores: exact discrete Laplace noise of rate gamma = eps/(2 D) (eps/D) and
    # uniform ties.
    k = np.array([0, 1, 1, 3, -2], dtype=np.int64)
    eps, sens = 1.5, 1.0
    gamma = eps / (sens if mono else 2 * sens)
    q = math.exp(-gamma)
    law = discrete_noisy_max_law(k, lambda z: (1 - q) / (1 + q) * q ** abs(z), -80, 80)
    x = draw(
        S.report_noisy_max,
        60_000,
        scores=k,
        epsilon=eps,
        sensitivity=sens,
        monotonic=mono,
        rng=seeded(24),
    )
    assert_law(x, law)


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_rnm_secure_law_with_many_candidates(noise, seeded):
    # Beyond 4096 candidates the exact noise comes from prepared.c's samplers: the
    # law of the five top candidates among 6000 far-away ones (whose total probability is
    # below 1e-100) must be unchanged.
    top = [0, 1, 1, 3, -2]
    k = np.concatenate([top, np.full(6000, -2000)]).astype(np.int64)
    gamma = 1.5 / 2
    q = math.exp(-gamma)
    if noise == "laplace":
        law = discrete_noisy_max_law(
            top, lambda z: (1 - q) / (1 + q) * q ** abs(z), -80, 80
        )
    else:
        law = pf_law(top, gamma)
    g = seeded(47)
    x = np.array(
        [S.report_noisy_max(k, epsilon=1.5, noise=noise, rng=g) for _ in range(6000)]
    )
    assert (x < 5).all()
    assert_law(x, law)


def test_rnm_laplace_fast_law(seeded):
    u = [0.0, 0.4, 1.0, 1.0, 2.5]
    eps, sens = 2.0, 1.0
    x = draw(
        S.report_noisy_max,
        60_000,
        scores=u,
        epsilon=eps,
        sensitivity=sens,
        rng=seeded(25),
        mode="fast",
    )
    assert_law(x, laplace_noisy_max_law(u, 2 * sens / eps))


def test_rnm_laplace_secure_float_scores_on_the_grid(seeded):
    u = np.array([0.0, 0.25, 0.5, 1.0])
    eps, sens = 3.0, 0.5
    G, W = grid_width(sens, False)
    gamma = eps / W  # per grid step
    q = math.exp(-gamma)
    kk = (u / G).astype(np.int64)
    zmax = int(40 / gamma)
    pmf = lambda z: (1 - q) / (1 + q) * q ** abs(z)
    law = discrete_noisy_max_law(list(kk), pmf, -zmax, zmax)
    x = draw(
        S.report_noisy_max, 40_000, scores=u, epsilon=eps, sensitivity=sens, rng=seeded(26)
    )
    assert_law(x, law)
    # ... which is close to continuous Laplace noise of scale 2 D/eps
    np.testing.assert_allclose(law, laplace_noisy_max_law(u, 2 * sens / eps), atol=2e-3)


@pytest.mark.parametrize("mode", MODES)
def test_return_value_uses_fresh_noise_and_charges_both(mode, seeded):
    u = np.array([0.0, 100.0, 3.0])
    stub = Stub()
    vals = []
    g = seeded(27)
    for _ in range(4000):
        idx, v = S.report_noisy_max(
            u,
            epsilon=5.0,
            return_value=True,
            value_epsilon=0.5,
            rng=g,
            mode=mode,
            budget=stub,
        )
        assert idx == 1
        vals.append(v)
    assert all(c[0] == 5.5 and c[1] == 0.0 for c in stub.calls)
    # the released value is 100 + Laplace(scale 1/0.5): its spread is that of fresh
    # noise of the value's epsilon (a selection noise would be Laplace(2/5))
    dev = np.asarray(vals) - 100.0
    assert stats.kstest(dev, stats.laplace(scale=2.0).cdf).pvalue > ALPHA


def test_return_value_integer_scores_release_integers(seeded):
    idx, v = S.report_noisy_max(
        np.array([1, 50, 2]), epsilon=4.0, return_value=True, rng=seeded(29)
    )
    assert idx == 1 and isinstance(v, int)


# ---------------------------------------------------------------- top-k


def topk_law(u, k, gamma):
    m = len(u)
    out = {}
    for seq in itertools.permutations(range(m), k):
        p, left = 1.0, list(range(m))
        for i in seq:
            w = em_law([u[j] for j in left], gamma)
            p *= w[left.index(i)]
            left.remove(i)
        out[seq] = p
    return out


@pytest.mark.parametrize("mode", MODES)
def test_top_k_law_is_peeling(mode, seeded):
    u = np.array([0, 1, 3, 4], dtype=np.int64)
    eps, k = 3.0, 2
    law = topk_law(u, k, eps / (2 * k))
    keys = list(law)
    g = seeded(31)
    idx = {key: i for i, key in enumerate(keys)}
    x = np.array(
        [idx[tuple(S.top_k(u, k, epsilon=eps, rng=g, mode=mode))] for _ in range(40_000)]
    )
    assert_law(x, np.array([law[kk] for kk in keys]))


def test_top_k_returns_distinct_indices_in_order(seeded):
    u = np.arange(1000.0)
    for mode in MODES:
        out = S.top_k(u, 10, epsilon=1e6, rng=seeded(32), mode=mode)
        assert out.dtype == np.int64
        assert list(out) == list(range(999, 989, -1))
        out = S.top_k(u, 1000, epsilon=1.0, rng=seeded(33), mode=mode)
        assert sorted(out) == list(range(1000))


# ---------------------------------------------------------------- extreme scores

EXTREMES = [
    [1e300, -1e300, 0.0, 5e299],
    [1.7976931348623157e308, -1.7976931348623157e308, 0.0],
    [5e-324, 0.0, -5e-324, 1e-300],
]


def _all_mechanisms(u, eps, sens, mode, g):
    return [
        S.exponential_mechanism(u, epsilon=eps, sensitivity=sens, rng=g, mode=mode),
        S.report_noisy_max(u, epsilon=eps, sensitivity=sens, rng=g, mode=mode),
        S.report_noisy_max(
            u, epsilon=eps, sensitivity=sens, noise="exponential", rng=g, mode=mode
        ),
        S.permute_and_flip(u, epsilon=eps, sensitivity=sens, rng=g, mode=mode),
        int(S.top_k(u, 1, epsilon=eps, sensitivity=sens, rng=g, mode=mode)[0]),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_extreme_scores_choose_the_maximum(mode, seeded):
    g = seeded(41)
    for u in EXTREMES[:2]:
        for _ in range(20):
            assert _all_mechanisms(u, 1.0, 1.0, mode, g) == [0] * 5


@pytest.mark.parametrize("mode", MODES)
def test_overflowing_exponents(mode, seeded):
    # eps u / Delta overflows a double: neither overflow nor NaN, and the maximum wins.
    g = seeded(42)
    for eps, sens in [(1e300, 1e-280), (1e6, 1e-10), (1e10, 1.0)]:
        for u in EXTREMES[:2]:
            for _ in range(5):
                assert _all_mechanisms(u, eps, sens, mode, g) == [int(np.argmax(u))] * 5
        # gaps below the grid step (secure) or gamma clamped to 1e300 (fast): any index
        assert all(0 <= r < 4 for r in _all_mechanisms(EXTREMES[2], eps, sens, mode, g))


@pytest.mark.parametrize("mode", MODES)
def test_tiny_epsilon_with_huge_scores(mode, seeded):
    # eps/Delta tiny and scores huge: valid indices, never NaN (the noisy-max samplers refuse
    # an epsilon/sensitivity below 2^-40 grid steps in secure mode, with a clear error).
    g = seeded(46)
    for u in EXTREMES:
        for eps, sens in [(1e-12, 1e280), (1e-300, 1.0)]:
            assert (
                0
                <= S.exponential_mechanism(
                    u, epsilon=eps, sensitivity=sens, rng=g, mode=mode
                )
                < len(u)
            )
            assert len(
                set(S.top_k(u, len(u), epsilon=eps, sensitivity=sens, rng=g, mode=mode))
            ) == len(u)
            if mode == "fast":
                assert (
                    0
                    <= S.report_noisy_max(
                        u, epsilon=eps, sensitivity=sens, rng=g, mode=mode
                    )
                    < len(u)
                )


def test_tiny_scores_are_almost_uniform_and_valid(seeded):
    u = EXTREMES[2]
    x = draw(S.exponential_mechanism, 20_000, scores=u, epsilon=1.0, rng=seeded(43))
    assert_law(x, np.full(4, 0.25))


def test_int64_extremes_secure(seeded):
    u = np.array([-(2**63), 2**63 - 1, 0, 2**63 - 2], dtype=np.int64)
    g = seeded(44)
    for _ in range(20):
        assert _all_mechanisms(u, 50.0, 1.0, "secure", g) == [1] * 5
    # gamma = 1 per unit: only the two top candidates have weight (1 and e^-1)
    x = draw(S.exponential_mechanism, 20_000, scores=u, epsilon=2.0, rng=seeded(45))
    e1 = math.exp(-1)
    assert_law(x, np.array([0.0, 1 / (1 + e1), 0.0, e1 / (1 + e1)]))


# ---------------------------------------------------------------- validation

FUNCS = {
    "em": lambda u, **kw: S.exponential_mechanism(u, **kw),
    "rnm": lambda u, **kw: S.report_noisy_max(u, **kw),
    "pf": lambda u, **kw: S.permute_and_flip(u, **kw),
    "topk": lambda u, **kw: S.top_k(u, 1, **kw),
}


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize(
    "scores, exc",
    [
        ([], dpfast.PrivacyParameterError),
        ([1.0, float("nan")], dpfast.PrivacyParameterError),
        ([1.0, float("inf")], dpfast.PrivacyParameterError),
        ([-float("inf"), 0.0], dpfast.PrivacyParameterError),
        ([True, False], TypeError),
        (["a", "b"], TypeError),
        ([[1.0, 2.0]], ValueError),
        ([1 + 2j], TypeError),
    ],
)
def test_bad_scores(name, scores, exc):
    for mode in MODES:
        with pytest.raises(exc):
            FUNCS[name](scores, epsilon=1.0, mode=mode)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize(
    "kw, exc",
    [
        ({"epsilon": 0.0}, dpfast.PrivacyParameterError),
        ({"epsilon": -1.0}, dpfast.PrivacyParameterError),
        ({"epsilon": float("nan")}, dpfast.PrivacyParameterError),
        ({"epsilon": float("inf")}, dpfast.PrivacyParameterError),
        ({"epsilon": True}, TypeError),
        ({"epsilon": "1"}, TypeError),
        ({"epsilon": 1.0, "sensitivity": 0.0}, dpfast.PrivacyParameterError),
        ({"epsilon": 1.0, "sensitivity": float("nan")}, dpfast.PrivacyParameterError),
        ({"epsilon": 1.0, "sensitivity": -2}, dpfast.PrivacyParameterError),
        ({"epsilon": 1.0, "sensitivity": False}, TypeError),
        ({"epsilon": 1.0, "monotonic": 1}, TypeError),
        ({"epsilon": 1.0, "monotonic": "yes"}, TypeError),
        ({"epsilon": 1.0, "mode": "exact"}, dpfast.PrivacyParameterError),
        ({"epsilon": 1.0, "mode": None}, (dpfast.PrivacyParameterError, TypeError)),
        ({"epsilon": 1.0, "rng": 42}, TypeError),
        ({"epsilon": 1.0, "rng": "os"}, TypeError),
    ],
)
def test_bad_parameters(name, kw, exc):
    with pytest.raises(exc):
        FUNCS[name]([1.0, 2.0], **kw)


def test_epsilon_missing_is_a_type_error():
    with pytest.raises(TypeError):
        S.exponential_mechanism([1.0, 2.0])


def test_report_noisy_max_parameters():
    u = [1.0, 2.0]
    with pytest.raises(dpfast.PrivacyParameterError, match="Gaussian"):
        S.report_noisy_max(u, epsilon=1.0, noise="gaussian")
    with pytest.raises(dpfast.PrivacyParameterError):
        S.report_noisy_max(u, epsilon=1.0, noise="cauchy")
    with pytest.raises(TypeError):
        S.report_noisy_max(u, epsilon=1.0, return_value=1)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(dpfast.PrivacyParameterError):
            S.report_noisy_max(u, epsilon=1.0, return_value=True, value_epsilon=bad)
    with pytest.raises(dpfast.PrivacyParameterError, match="too small"):
        S.report_noisy_max(u, epsilon=1e-12, sensitivity=1.0)
    with pytest.raises(dpfast.PrivacyParameterError, match="too small"):
        S.permute_and_flip(u, epsilon=1e-12, sensitivity=1.0)


def test_top_k_parameters():
    for k, exc in [
        (0, dpfast.PrivacyParameterError),
        (3, dpfast.PrivacyParameterError),
        (1.0, TypeError),
        (True, TypeError),
        (None, TypeError),
    ]:
        with pytest.raises(exc):
            S.top_k([1.0, 2.0], k, epsilon=1.0)


def test_float_sensitivity_too_small_for_the_secure_grid():
    with pytest.raises(dpfast.PrivacyParameterError, match="sensitivity"):
        S.exponential_mechanism([0.0, 1.0], epsilon=1.0, sensitivity=1e-300)
    # integer scores have no grid; fast mode has none either
    assert S.exponential_mechanism([0, 1], epsilon=1.0, sensitivity=1e-300) == 1
    assert (
        S.exponential_mechanism([0.0, 1.0], epsilon=1.0, sensitivity=1e-300, mode="fast")
        == 1
    )


def test_inputs_are_not_modified_and_any_layout_works(seeded):
    base = np.arange(20.0)
    u = base[::-2]  # non-contiguous, read-only view
    u.flags.writeable = False
    before = u.copy()
    for mode in MODES:
        assert S.exponential_mechanism(u, epsilon=1e6, rng=seeded(51), mode=mode) == 0
        assert (
            S.exponential_mechanism(
                u.astype(np.float32), epsilon=1e6, rng=seeded(51), mode=mode
            )
            == 0
        )
        assert S.exponential_mechanism(list(u), epsilon=1e6, rng=seeded(51), mode=mode) == 0
        assert (
            S.exponential_mechanism(
                u.astype(np.uint8), epsilon=1e6, rng=seeded(51), mode=mode
            )
            == 0
        )
    np.testing.assert_array_equal(u, before)


def test_uint64_scores_beyond_int64_are_clamped():
    # clamped to 2**63 - 1 (1-Lipschitz), never refused: the scores are private
    assert (
        S.exponential_mechanism(
            np.array([2**63, 0], dtype=np.uint64), epsilon=1.0, rng=dr.ChaCha20(1)
        )
        == 0
    )


def test_any_numpy_generator_works():
    for rng in (
        np.random.Generator(np.random.PCG64(1)),
        np.random.PCG64(2),
        np.random.Generator(dr.ChaCha20(3)),
    ):
        for mode in MODES:
            assert (
                S.exponential_mechanism([0.0, 100.0], epsilon=10.0, rng=rng, mode=mode) == 1
            )


# ---------------------------------------------------------------- budget


class Stub:
    """A PrivacyBudget stand-in that records each charge and what the generator had
    drawn by then."""

    def __init__(self, rng=None, fail=False):
        self.calls, self.rng, self.fail = [], rng, fail

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append(
            (epsilon, delta, label, None if self.rng is None else self.rng.state)
        )
        if self.fail:
            raise dpfast.BudgetExceededError("stub: no budget left")


CHARGES = [
    (lambda **kw: S.exponential_mechanism([0.0, 1.0, 2.0], epsilon=0.7, **kw), 0.7),
    (lambda **kw: S.report_noisy_max([0.0, 1.0, 2.0], epsilon=0.7, **kw), 0.7),
    (
        lambda **kw: S.report_noisy_max(
            [0.0, 1.0, 2.0], epsilon=0.7, return_value=True, **kw
        ),
        1.4,
    ),
    (
        lambda **kw: S.report_noisy_max(
            [0, 1, 2],
            epsilon=0.7,
            noise="exponential",
            return_value=True,
            value_epsilon=0.2,
            **kw,
        ),
        0.9,
    ),
    (lambda **kw: S.permute_and_flip([0.0, 1.0, 2.0], epsilon=0.7, **kw), 0.7),
    (lambda **kw: S.top_k([0.0, 1.0, 2.0], 2, epsilon=0.7, **kw), 0.7),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("call, total", CHARGES)
def test_budget_is_charged_before_drawing(call, total, mode):
    g = dr.ChaCha20(7)
    start = g.state
    stub = Stub(g)
    call(rng=g, mode=mode, budget=stub)
    assert len(stub.calls) == 1
    eps, delta, label, state_then = stub.calls[0]
    assert math.isclose(eps, total) and delta == 0.0 and isinstance(label, str)
    assert _same_state(state_then, start)  # nothing drawn before the charge
    assert not _same_state(g.state, start)  # something drawn after


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("call, total", CHARGES)
def test_refused_budget_draws_nothing(call, total, mode):
    g = dr.ChaCha20(8)
    start = g.state
    with pytest.raises(dpfast.BudgetExceededError):
        call(rng=g, mode=mode, budget=Stub(g, fail=True))
    assert _same_state(g.state, start)


class ZcdpStub(Stub):
    """A zCDP budget stand-in: records spend_rho as ("rho", rho), spend as ("eps", eps)."""

    composition = "zcdp"

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append(("eps", charged(epsilon)))  # the exact amount

    def spend_rho(self, rho, *, label=None):
        self.calls.append(("rho", rho))


E7 = Fraction(7, 10)
ZCDP_CHARGES = [  # the zCDP charge of each call of CHARGES, by hand
    ("rho", E7**2 / 8),  # exponential mechanism: bounded range
    ("rho", E7**2 / 2),  # report noisy max (Laplace): not bounded range
    ("eps", 2 * E7),  # with the value: (eps + value_eps)-DP, read as eps^2/2
    ("eps", Fraction(9, 10)),
    ("rho", E7**2 / 2),  # permute-and-flip: not bounded range
    ("eps", E7),  # top_k: epsilon-DP
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", range(len(CHARGES)))
def test_zcdp_budget_is_charged_the_selection_rule(k, mode):
    """A zCDP budget gets selection_rho(method, epsilon) exactly: eps^2/8 for the
    exponential mechanism, eps^2/2 for permute-and-flip and noisy max."""
    stub = ZcdpStub()
    CHARGES[k][0](rng=dr.ChaCha20(7), mode=mode, budget=stub)
    assert stub.calls == [ZCDP_CHARGES[k]]
    # and a real zCDP budget agrees with the stand-in
    b = PrivacyBudget(rho=10.0, composition="zcdp")
    CHARGES[k][0](rng=dr.ChaCha20(7), mode=mode, budget=b)
    kind, amount = ZCDP_CHARGES[k]
    want = amount if kind == "rho" else amount**2 / 2
    assert b.spent.rho == float(want)


def test_every_selection_charge_comes_from_selection_rho(monkeypatch):
    """One rule in one place: replace dpfast.selection.selection_rho and every zCDP
    charge of a selection follows -- the selection functions, the exponential
    mechanism object, MWEM (both measures) and BoostingForQueries' draws.  On main
    permute-and-flip and noisy max were charged by the budget's own eps^2/2 instead."""
    from dpfast import objects as O
    from dpfast import query_release as Q

    real = S.selection_rho
    seen = []

    def rule(method, epsilon):
        seen.append(method)
        return real(method, epsilon) * 3  # a different rule, to tell them apart

    monkeypatch.setattr(S, "selection_rho", rule)
    for k, (call, _) in enumerate(CHARGES):
        if ZCDP_CHARGES[k][0] == "rho":
            stub = ZcdpStub()
            call(rng=dr.ChaCha20(7), budget=stub)
            assert stub.calls == [("rho", 3 * ZCDP_CHARGES[k][1])], k
    assert seen == ["exponential", "report_noisy_max", "permute_and_flip"]
    assert O.ExponentialMechanism(0.7).privacy_cost.rho >= float(3 * E7**2 / 8)
    dom = Q.Domain(["a", "b"], [3, 2])
    wl = Q.MarginalWorkload(dom, [("a",), ("b",)])
    for select, law in (("exponential", 8), ("permute_and_flip", 2)):
        m = Q.MWEM(wl, epsilon=1.0, rounds=4, n_public=10.0, select=select)
        e = Fraction(m.eps_round)
        assert m.privacy_cost.rho >= float(4 * (3 * e * e / law + e * e / 2))
        g = Q.MWEM(
            wl,
            epsilon=1.0,
            rounds=4,
            n_public=10.0,
            select=select,
            measure="gaussian",
            delta=1e-6,
        )
        # half of each round's rho to the selection, by the (tripled) rule
        e = g.eps_round
        assert 3 * e * e / law == pytest.approx(g.rho / 4 / 2, rel=1e-9)
    b = Q.BoostingForQueries(wl, epsilon=1.0, n_public=10.0, rounds=3, k=2)
    draws = sum(2 * real("exponential", b._eps_draw(t)) for t in (2, 3))
    assert b.privacy_cost.rho >= float(3 * draws + 3 * Fraction(b.eps_base) ** 2 / 2)
    bg = Q.BoostingForQueries(
        wl, epsilon=1.0, n_public=10.0, rounds=3, k=2, noise="gaussian", delta=1e-6
    )
    rho_draws = sum(2 * float(rule("exponential", bg._eps_draw(t))) for t in (2, 3))
    assert rho_draws == pytest.approx(bg.sample_share * bg.rho, rel=1e-9)


def test_invalid_arguments_never_charge():
    stub = Stub()
    bad_calls = [
        lambda: S.exponential_mechanism([1.0, 2.0], epsilon=-1.0, budget=stub),
        lambda: S.exponential_mechanism([1.0, 2.0], epsilon=1.0, rng="x", budget=stub),
        lambda: S.exponential_mechanism([1.0, 2.0], epsilon=1.0, mode="z", budget=stub),
        lambda: S.exponential_mechanism([1.0, float("nan")], epsilon=1.0, budget=stub),
        lambda: S.report_noisy_max([1.0, 2.0], epsilon=1e-13, budget=stub),
        lambda: S.report_noisy_max([1.0, 2.0], epsilon=1.0, noise="gaussian", budget=stub),
        lambda: S.top_k([1.0, 2.0], 3, epsilon=1.0, budget=stub),
    ]
    for call in bad_calls:
        with pytest.raises((TypeError, ValueError)):
            call()
    assert stub.calls == []


def _same_state(a, b):
    return (
        a["key"] == b["key"]
        and a["counter"] == b["counter"]
        and np.array_equal(a["buffer"], b["buffer"])
    )


# ---------------------------------------------------------------- threads


def test_threads_share_a_generator_safely():
    import threading

    g = dr.ChaCha20(9)
    u = np.random.default_rng(3).normal(size=200_000)
    out = []

    def work():
        for _ in range(5):
            out.append(S.exponential_mechanism(u, epsilon=1e6, rng=g))
            out.append(S.exponential_mechanism(u, epsilon=1e6, rng=g, mode="fast"))

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == [int(np.argmax(u))] * 40
