"""Privacy audits of Boosting for People on tiny instances (BOOSTING-PEOPLE.md 8.2-8.3).

Exact audits (8.2): every random choice of the ``grid`` variant is enumerated with
dpfast's own kernels (boost_premultiply, boost_grid, boost_grid_sums, boost_cap, the
stump scores) and the exact laws of dpfast's samplers (the quantised sampling law of
csrc/boost.c; the exponential mechanism's dyadic rate and grid rounding from
dpfast.selection._grid; the discrete Laplace test), for a data set DB and every
neighbour DB' (one row replaced by any row of the universe).  Checked:
  PA2  the threshold's law moves by <= eps_w (and a data-dependent grid, mutation M3,
       is caught);
  PA3  the stump mechanism's law moves by <= eps_b per replaced position, tightly (and
       the factor-2 mutation M4 is caught);
  PA4  the next hypothesis's law moves by <= A(sigma) for the exact statistical distance
       sigma of the two sampling laws, itself <= sigma_l when the capped mass is >= l;
  PA5  the whole released view (h_1, stop, w_1, h_2) of a T = 2 run: max log-ratio
       <= eps_G, hockey-stick at eps_G <= the exact probability of the smoothness event.
Statistical audit (8.3): the real classifier is run 4,000 times on DB and on a neighbour;
its view frequencies match the exact law (chi-square, p > 1e-6) and no view violates
eps_G with Clopper-Pearson intervals at joint confidence 1 - 1e-3.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpfast import _core
from dpfast.learn import DPStumpLearner, PrivateBoostingClassifier
from dpfast.learn._accounting import amplified_epsilon, grid_size_bound, smoothness_distance
from dpfast.selection import _grid as sel_grid
from stat_helpers import ALPHA, chi2_pvalue

M, K_DRAWS, ELL, ETA = 8, 2, 2, 0.1
ALPHA_B = math.atanh(2 * ETA)
TAU = 2.0 * ELL
UNIVERSE = [(x, y) for x in (0, 1, 2) for y in (-1, 1)]
DB_X = np.array([0, 0, 1, 1, 2, 2, 0, 2])
DB_Y = np.array([-1, -1, 1, -1, 1, 1, 1, -1])
GAMMA = 0.3


def em_law_int(scores, eps):
    """Law of dpfast's exact exponential mechanism on integer scores, Delta = 1."""
    _, g, s = sel_grid(eps, 1.0, False, True)
    rate = g / 2.0**s
    e = np.exp(rate * (scores - scores.max()))
    return e / e.sum()


def em_law_float(u, eps):
    """Law on float scores: gaps rounded to the public grid G (selection._grid)."""
    inv_grid, g, s = sel_grid(eps, 1.0, False, False)
    d = np.rint((u.max() - u) * inv_grid)
    e = np.exp(-(g / 2.0**s) * d)
    return e / e.sum()


def sample_law(v):
    K = 63 - len(v).bit_length()
    q = np.array([math.ceil(math.ldexp(x, K)) for x in v], dtype=float)
    return q / q.sum()


def geo_cdf(n, eps):
    """P[Z <= n] for the discrete Laplace P(z) ∝ e^{-eps |z|}."""
    p = math.exp(-eps)
    return 1 - p ** (n + 1) / (1 + p) if n >= 0 else p ** (-n) / (1 + p)


class Model:
    """The exact law of the grid variant's released view for T = 2."""

    def __init__(self, eps_b, eps_test, eps_w, c_grid, include_constant=True):
        self.learner = DPStumpLearner(
            epsilon=eps_b, thresholds=[[1, 2]], include_constant=include_constant
        )
        self.learner.encode([DB_X.astype(np.int64)])
        self.ncand = self.learner.n_candidates(1)
        self.cands = [self.learner.candidate(j) for j in range(self.ncand)]
        self.eps_b, self.eps_test, self.eps_w, self.c = eps_b, eps_test, eps_w, c_grid

    def h_law(self, x, y, v):
        Z = self.learner.encode([x.astype(np.int64)])
        p = sample_law(v)
        law = np.zeros(self.ncand)
        for tup in itertools.product(range(M), repeat=K_DRAWS):
            idx = list(tup)
            law += np.prod(p[idx]) * em_law_int(
                self.learner.scores(Z[idx], y[idx]), self.eps_b
            )
        return law

    def grid(self):
        n_max = grid_size_bound(1, M, TAU, ALPHA_B, self.c)
        return _core.boost_grid(
            math.exp(-ALPHA_B) * 1.0,
            1.0 + self.c / TAU,
            math.exp(ALPHA_B) * float(M) / TAU,
            n_max,
        )

    def view(self, x, y):
        """{outcome: probability}, and the probability of the smoothness event S < l."""
        Z = self.learner.encode([x.astype(np.int64)])
        law1 = self.h_law(x, y, np.ones(M))
        grid = self.grid()
        out, bad = {}, 0.0
        for j1, h in enumerate(self.cands):
            pred = h.predict(Z)
            err = int(np.count_nonzero(pred != y))
            pstop = geo_cdf(math.floor(GAMMA * M / 2 - err), self.eps_test)
            out[(j1,)] = law1[j1] * pstop
            a = _core.boost_premultiply(
                np.ones(M),
                (pred * y).astype(np.int8),
                math.exp(-ALPHA_B),
                math.exp(ALPHA_B),
            )
            S = _core.boost_grid_sums(a, grid)
            wlaw = em_law_float(-np.abs(S - TAU), self.eps_w)
            bad += law1[j1] * (1 - pstop) * wlaw[S < ELL].sum()
            for jw, pw in enumerate(wlaw):
                v, _, _ = _core.boost_cap(a, float(grid[jw]))
                law2 = self.h_law(x, y, v)
                for j2 in range(self.ncand):
                    out[(j1, jw, j2)] = law1[j1] * (1 - pstop) * pw * law2[j2]
        return out, bad

    def eps_claim(self):
        return (
            amplified_epsilon(1 / M, K_DRAWS, self.eps_b)
            + self.eps_test
            + self.eps_w
            + amplified_epsilon(smoothness_distance(ELL), K_DRAWS, self.eps_b)
        )


def neighbours(with_index=False):
    for i in range(M):
        for xr, yr in UNIVERSE:
            if (xr, yr) != (DB_X[i], DB_Y[i]):
                x, y = DB_X.copy(), DB_Y.copy()
                x[i], y[i] = xr, yr
                yield (x, y, i) if with_index else (x, y)


def row_distance(p, p2, i):
    """Statistical distance over rows when item i's row differs (its two masses sit on
    different rows; other coincidences can only lower the true distance)."""
    rest = np.abs(np.delete(p, i) - np.delete(p2, i)).sum()
    return 0.5 * (rest + p[i] + p2[i])


def hockey(P, Q, eps):
    return sum(max(P[o] - math.exp(eps) * Q.get(o, 0.0), 0.0) for o in P)


# ---------------------------------------------------------------- PA3 (stump EM)


def test_pa3_stump_mechanism_per_position():
    for eps_b in (0.3, 1.0):
        learner = DPStumpLearner(epsilon=eps_b, thresholds=[[1, 2]])
        worst = 0.0
        worst_m4 = 0.0
        rows = [(x, y) for x, y in UNIVERSE]
        for tup in itertools.product(rows, repeat=3):
            x = np.array([r[0] for r in tup])
            y = np.array([r[1] for r in tup], dtype=np.int8)
            Z = learner.encode([x.astype(np.int64)])
            base = learner.scores(Z, y)
            for pos in range(3):
                for r in rows:
                    x2, y2 = x.copy(), y.copy()
                    x2[pos], y2[pos] = r
                    sc2 = learner.scores(learner.encode([x2.astype(np.int64)]), y2)
                    assert np.abs(sc2 - base).max() <= 1  # sensitivity 1
                    lr = np.abs(np.log(em_law_int(base, eps_b) / em_law_int(sc2, eps_b)))
                    worst = max(worst, lr.max())
                    # M4: exponent eps q instead of eps q / 2 is caught.
                    lr4 = np.abs(
                        np.log(em_law_int(base, 2 * eps_b) / em_law_int(sc2, 2 * eps_b))
                    )
                    worst_m4 = max(worst_m4, lr4.max())
        assert worst <= eps_b + 1e-12
        assert worst >= 0.5 * eps_b  # near the bound: a sharp check
        assert worst_m4 > 1.8 * worst and (eps_b < 1 or worst_m4 > eps_b)


# ---------------------------------------------------------------- PA2 (threshold)


def test_pa2_threshold_law():
    eps_w, c = 0.5, 1.0
    model = Model(1.0, 0.5, eps_w, c)
    grid = model.grid()
    gen = np.random.default_rng(0)
    worst, worst_m3 = 0.0, 0.0
    lam = math.exp(-ALPHA_B)
    for _ in range(300):
        a = np.exp(gen.uniform(-ALPHA_B, ALPHA_B, M))
        a2 = a.copy()
        a2[gen.integers(M)] = float(np.exp(gen.uniform(-ALPHA_B, ALPHA_B)))
        S, S2 = _core.boost_grid_sums(a, grid), _core.boost_grid_sums(a2, grid)
        assert np.abs(S - S2).max() <= 1 + 1e-12
        p, q = em_law_float(-np.abs(S - TAU), eps_w), em_law_float(-np.abs(S2 - TAU), eps_w)
        worst = max(worst, np.abs(np.log(p / q)).max())
        # M3: a grid that starts at min_i a_i (read from the data) differs between the
        # neighbours whenever the minimum moves: outputs of one have probability 0 on
        # the other, an unbounded ratio.
        g1 = _core.boost_grid(a.min(), 1 + c / TAU, grid[-1], 10**4)
        g2 = _core.boost_grid(a2.min(), 1 + c / TAU, grid[-1], 10**4)
        if not np.array_equal(g1[:-1], g2[:-1]):
            worst_m3 = math.inf
    assert grid[0] == lam and worst <= eps_w + 1e-12
    assert worst_m3 == math.inf


# ---------------------------------------------------------------- PA4 (sampling + learner)


def test_pa4_sampling_amplification():
    model = Model(1.0, 0.5, 0.5, 1.0)
    grid = model.grid()
    Z = model.learner.encode([DB_X.astype(np.int64)])
    checked = 0
    for h in model.cands:
        for x2, y2, i in neighbours(with_index=True):
            Z2 = model.learner.encode([x2.astype(np.int64)])
            a = _core.boost_premultiply(
                np.ones(M),
                (h.predict(Z) * DB_Y).astype(np.int8),
                math.exp(-ALPHA_B),
                math.exp(ALPHA_B),
            )
            a2 = _core.boost_premultiply(
                np.ones(M),
                (h.predict(Z2) * y2).astype(np.int8),
                math.exp(-ALPHA_B),
                math.exp(ALPHA_B),
            )
            for w in grid[::2]:
                v, _, L = _core.boost_cap(a, float(w))
                v2, _, L2 = _core.boost_cap(a2, float(w))
                sigma = row_distance(sample_law(v), sample_law(v2), i)
                if min(L, L2) >= ELL:
                    assert sigma <= smoothness_distance(ELL) + 1e-12
                if sigma >= 1:
                    continue
                P = model.h_law(DB_X, DB_Y, v)
                Q = model.h_law(x2, y2, v2)
                assert (
                    np.abs(np.log(P / Q)).max()
                    <= amplified_epsilon(sigma, K_DRAWS, 1.0) + 1e-9
                )
                checked += 1
            if checked > 60:
                return
    assert checked > 20


# ---------------------------------------------------------------- PA5 (end to end)


@pytest.mark.slow
@pytest.mark.parametrize(
    "eps_b,eps_test,eps_w,c_grid", [(1.0, 0.5, 0.5, 1.0), (1.0, 0.5, 8.0, 0.5)]
)
def test_pa5_end_to_end_exact(eps_b, eps_test, eps_w, c_grid):
    model = Model(eps_b, eps_test, eps_w, c_grid)
    P, badP = model.view(DB_X, DB_Y)
    assert abs(sum(P.values()) - 1) < 1e-12
    eps = model.eps_claim()
    worst = 0.0
    for x2, y2 in list(neighbours())[::3]:
        Q, badQ = model.view(x2, y2)
        for o in P:
            if P[o] > 0 and Q[o] > 0:
                worst = max(worst, abs(math.log(P[o] / Q[o])))
        assert hockey(P, Q, eps) <= badP + 1e-12
        assert hockey(Q, P, eps) <= badQ + 1e-12
    assert 0 < worst <= eps


@pytest.mark.slow
def test_statistical_audit_black_box():
    """The implementation's view frequencies equal the exact law (so PA5 applies to it),
    and no view violates eps_G at joint confidence 1 - 1e-3 (Clopper-Pearson)."""
    eps_b, eps_test, eps_w, c_grid = 1.0, 0.5, 8.0, 0.5
    model = Model(eps_b, eps_test, eps_w, c_grid)
    grid = model.grid()
    index = {h: j for j, h in enumerate(model.cands)}
    x2, y2 = DB_X.copy(), DB_Y.copy()
    x2[0], y2[0] = 2, 1  # design (i)/(iii): a row every stump treats apart
    n = 4000
    counts = []
    laws = []
    for s, (x, y) in enumerate(((DB_X, DB_Y), (x2, y2))):
        law, _ = model.view(x, y)
        keys = list(law)
        c = dict.fromkeys(keys, 0)
        learner = DPStumpLearner(epsilon=eps_b, thresholds=[[1, 2]])
        for seed in range(n):
            clf = PrivateBoostingClassifier(
                base_learner=learner,
                n_rounds=2,
                sample_size=K_DRAWS,
                smoothness=ELL,
                eta=ETA,
                gamma=GAMMA,
                epsilon_test=eps_test,
                epsilon_threshold=eps_w,
                grid_resolution=c_grid,
                rng=10**6 * (s + 1) + seed,
            ).fit(x[:, None], y)
            j1 = index[clf.estimators_[0]]
            if clf.termination_reason_ == "test":
                c[(j1,)] += 1
            else:
                jw = int(np.flatnonzero(grid == clf.smoothing_thresholds_[0])[0])
                c[(j1, jw, index[clf.estimators_[1]])] += 1
        assert chi2_pvalue([c[k] for k in keys], [law[k] for k in keys]) > ALPHA
        counts.append(c)
        laws.append(law)
    eps = model.eps_claim()
    keys = [k for k in laws[0] if counts[0][k] + counts[1][k] > 0]
    level = 1e-3 / (4 * len(keys))
    for k in keys:
        lo = [stats.beta.ppf(level, c[k], n - c[k] + 1) if c[k] else 0.0 for c in counts]
        hi = [
            stats.beta.ppf(1 - level, c[k] + 1, n - c[k]) if c[k] < n else 1.0
            for c in counts
        ]
        assert lo[0] <= math.exp(eps) * hi[1] + 0.31  # delta of these parameters
        assert lo[1] <= math.exp(eps) * hi[0] + 0.31
