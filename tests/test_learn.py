"""dpfast.learn (Boosting for People, BOOSTING-PEOPLE.md): the reweighting kernels of
csrc/boost.c against direct evaluation, the accounting against the spec's worked numbers
(Sec. 5.4), erratum E1, the budget order, determinism, utility on separable data, and
refusal of bad inputs by public shape/type only."""

import math

import numpy as np
import pytest

import dpfast
import dpfast.random as dr
from dpfast import _core
from dpfast.learn import (
    DPStumpLearner,
    PrivateBoostingClassifier,
    UncertifiedPrivacyWarning,
    amplified_delta,
    amplified_epsilon,
    boosting_privacy_cost,
    smoothness_distance,
)
from dpfast.learn import boosting as B
from stat_helpers import ALPHA, chi2_pvalue


def S_direct(a, w):
    return float(np.minimum(a / w, 1.0).sum())


# ---------------------------------------------------------------- T1/T2: w solves its equation


@pytest.mark.parametrize("scale", [0.1, 1.0, 5.0, 30.0])
def test_solve_w_random(scale):
    gen = np.random.default_rng(17)
    for _ in range(60):
        m = int(gen.integers(2, 3000))
        a = np.exp(gen.normal(0, scale, m)).clip(1e-300, 1e300)
        lam = float(gen.uniform(0, m))
        if not 0 < lam < m:
            continue
        w, c = _core.boost_solve_w(a, lam)
        assert abs(S_direct(a, w) - lam) <= 1e-9 * lam
        assert c == int(np.count_nonzero(a >= w)) or c == int(np.count_nonzero(a > w))
        assert c <= math.ceil(lam) - 1  # Claim 6.4
        # Cross-check by bisection on log w (spec 3.3).
        lo, hi = math.log(a.min()), math.log(a.sum() / lam)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if S_direct(a, math.exp(mid)) > lam:
                lo = mid
            else:
                hi = mid
        assert abs(math.log(w) - 0.5 * (lo + hi)) <= 1e-9 * max(1.0, abs(math.log(w)))


@pytest.mark.parametrize(
    "a,lam",
    [
        (np.ones(10), 0.5),
        (np.ones(10), 9.5),
        (np.ones(10), 10 - 1e-9),
        (np.ones(10), 3.0),
        (np.r_[1e6, np.ones(9)], 0.001),
        (np.r_[1e6, np.ones(9)], 1.0),
        (np.exp(np.linspace(-700, 700, 50)), 25.0),
        (np.r_[2.0, 2.0, 2.0, 1.0, 1.0], 4.0),
    ],
)
def test_solve_w_edges(a, lam):
    w, c = _core.boost_solve_w(np.asarray(a, dtype=float), lam)
    assert math.isfinite(w) and w > 0
    assert abs(S_direct(a, w) - lam) <= 1e-9 * lam
    assert c <= math.ceil(lam) - 1


def test_solve_w_refuses_bad_target():
    with pytest.raises(ValueError):
        _core.boost_solve_w(np.ones(4), 4.0)
    with pytest.raises(ValueError):
        _core.boost_solve_w(np.ones(4), 0.0)


# ---------------------------------------------------------------- grid sums, cap, sampler


def test_grid_and_grid_sums_match_direct():
    gen = np.random.default_rng(5)
    for m, tau in [(50, 8.0), (2000, 400.0), (7, 4.0)]:
        a = np.exp(gen.normal(0, 2, m))
        lam_bound = a.min()
        g_min, g_max = lam_bound, a.sum() / tau
        grid = _core.boost_grid(g_min, 1 + 1 / tau, g_max, 10**6)
        assert np.all(np.diff(grid) > 0) and grid[-1] == g_max and grid[0] == g_min
        assert np.all(grid[1:-1] / grid[:-2] <= (1 + 1 / tau) * (1 + 1e-12))
        S = _core.boost_grid_sums(a, grid)
        direct = np.array([S_direct(a, g) for g in grid])
        assert np.allclose(S, direct, rtol=1e-12, atol=1e-9)
        # Bracketing (T10): S(g_min) = m >= tau >= S(g_max), some point within c_grid = 1.
        assert S[0] == m and S[-1] <= tau + 1e-9 and np.abs(S - tau).min() <= 1.0 + 1e-9
    # Items exactly on grid points are capped there (min(1, 1) either way).
    grid = np.array([0.5, 1.0, 2.0])
    a = np.array([0.5, 1.0, 2.0, 4.0])
    assert np.array_equal(_core.boost_grid_sums(a, grid), [S_direct(a, g) for g in grid])


def test_grid_respects_max_points():
    g = _core.boost_grid(1.0, 1.01, 1e6, 5)
    assert len(g) == 5 and g[-1] == 1e6


def test_cap_gives_distribution_within_cap():
    """T4/T5: D_{t+1} = v / L is a distribution with max <= 1/L; capped <= S(w)."""
    gen = np.random.default_rng(2)
    for _ in range(30):
        m = int(gen.integers(10, 5000))
        a = np.exp(gen.normal(0, 3, m))
        lam = float(gen.uniform(1, m - 1))
        w, _ = _core.boost_solve_w(a, lam)
        v, capped, mass = _core.boost_cap(a, w)
        D = v / mass
        assert np.all(D >= 0) and abs(D.sum() - 1) <= 1e-12
        assert D.max() <= (1 / mass) * (1 + 1e-12)
        assert abs(mass - lam) <= 1e-9 * lam and capped <= mass
        assert capped == np.count_nonzero(a >= w) and np.all(v <= 1.0)


def test_sampler_exact_law(seeded):
    v = np.array([1.0, 0.5, 0.25, 0.125, 1e-9, 0.75])
    K = 63 - int(len(v)).bit_length()
    q = np.array([math.ceil(math.ldexp(x, K)) for x in v], dtype=float)
    idx = _core.boost_sample(v, 200_000, seeded(11))
    counts = np.bincount(idx, minlength=len(v))
    assert chi2_pvalue(counts, q / q.sum()) > ALPHA
    with pytest.raises(ValueError):
        _core.boost_sample(np.array([0.5, 1.5]), 3, seeded(1))
    with pytest.raises(ValueError):
        _core.boost_sample(np.array([0.5, 0.0]), 3, seeded(1))


def test_premultiply():
    v = np.array([1.0, 0.5, 0.25])
    c = np.array([1, -1, 1], dtype=np.int8)
    assert np.array_equal(_core.boost_premultiply(v, c, 0.5, 2.0), [0.5, 1.0, 0.125])


# ---------------------------------------------------------------- accounting (T12, Sec. 5.4)

ADULT = dict(n_samples=32561, n_rounds=15, sample_size=1000, smoothness=8000, eta=0.1)


@pytest.mark.parametrize(
    "kw,eps,delta",
    [
        (
            dict(
                n_samples=10**6,
                n_rounds=10,
                sample_size=20,
                smoothness=2400,
                eta=0.1,
                epsilon_test=0.05,
                epsilon_threshold=0.05,
                base_epsilon=0.5,
            ),
            0.978,
            1.7e-20,
        ),
        (
            dict(ADULT, epsilon_test=0.02, epsilon_threshold=0.02, base_epsilon=0.15),
            1.096,
            7.7e-29,
        ),
        (
            dict(ADULT, epsilon_test=0.01, epsilon_threshold=0.01, base_epsilon=0.10),
            0.637,
            1.8e-11,
        ),
    ],
)
def test_privacy_cost_worked_numbers(kw, eps, delta):
    ideal = boosting_privacy_cost(**kw, ideal_em=True)
    assert abs(ideal.epsilon - eps) <= 0.0005
    assert abs(ideal.delta - delta) <= 0.05 * delta  # the spec gives 2 digits
    charged = boosting_privacy_cost(**kw)
    assert charged.epsilon == ideal.epsilon
    # The charged smoothness delta is for dpfast's exact sampler: a little larger.
    assert ideal.delta <= charged.delta <= 1.1 * ideal.delta
    assert charged.certified and charged.adjacency == "replace-one"
    assert (
        charged.breakdown["threshold"][0] >= (kw["n_rounds"] - 1) * kw["epsilon_threshold"]
    )


def test_paper_formula_is_uncertified():
    c = boosting_privacy_cost(
        **ADULT,
        variant="paper",
        epsilon_test=0.02,
        epsilon_threshold=0.02,
        base_epsilon=0.15,
    )
    assert not c.certified
    assert c.delta >= 14 * math.exp(-0.02 * 7999)


def test_amplification_functions():
    assert amplified_epsilon(0.0, 100, 0.5) == 0.0
    for eb in (0.1, 0.3, 0.5):
        for s in (1e-4, 0.01, 0.2, 0.5):
            for k in (1, 10, 1000):
                A = amplified_epsilon(s, k, eb)
                assert A <= 4 * eb * s * k * (1 + 1e-12)
                assert A < amplified_epsilon(s * 1.01, k, eb)
                assert A < amplified_epsilon(s, k + 1, eb)
                assert A < amplified_epsilon(s, k, eb * 1.01)
    # Delta(sigma) = delta_b (e^A - 1)/(e^eps_b - 1); one position (k=1, sigma=1): delta_b.
    assert amplified_delta(1e-3, 1, 0.5, 1e-6) < 1e-6
    assert smoothness_distance(2) == pytest.approx(0.5 * (1 + 1 / 8))


# ---------------------------------------------------------------- data and classifier


def majority5(m, seed, d=10, noise=0.0):
    gen = np.random.default_rng(seed)
    X = gen.integers(0, 10, size=(m, d))
    y = np.where((X[:, :5] >= 5).sum(1) >= 3, 1, -1)
    if noise:
        flip = gen.random(m) < noise
        y = np.where(flip, -y, y)
    return X, y


TH = list(range(1, 10))


class RecordingBudget:
    def __init__(self):
        self.calls = []

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append((epsilon, delta, label))


def test_fit_predict_and_record():
    X, y = majority5(4000, 1)
    b = RecordingBudget()
    clf = PrivateBoostingClassifier(
        thresholds=TH,
        n_rounds=9,
        sample_size=400,
        smoothness=800,
        epsilon_test=0.5,
        epsilon_threshold=0.5,
        base_epsilon=1.0,
        gamma=0.01,
        rng=7,
        budget=b,
    )
    assert clf.fit(X, y) is clf
    cost = clf.privacy_cost(4000)
    assert b.calls == [(cost.epsilon, cost.delta, "PrivateBoostingClassifier.fit")]
    r = clf.run_record_
    assert r.rounds_run == clf.n_rounds_run_ == len(clf.estimators_) == len(r.hypotheses)
    assert r.stop_reason in ("test", "max_rounds") and r.privacy_cost == cost
    assert r.capped_counts is None  # not private: opt-in only
    assert (
        len(r.smoothing_thresholds) == max(len(r.hypotheses) - 1, 0)
        or r.stop_reason == "test"
    )
    assert set(np.unique(clf.predict(X))) <= {-1, 1}
    assert clf.score(X, y) > 0.85
    assert np.all(np.abs(clf.decision_function(X)) <= 1)
    np.testing.assert_array_equal(clf.classes_, [-1, 1])


def test_deterministic_with_seed():
    X, y = majority5(2000, 3)
    kw = dict(
        thresholds=TH,
        n_rounds=7,
        sample_size=200,
        smoothness=300,
        gamma=0.001,
        epsilon_threshold=1.0,
    )
    a = PrivateBoostingClassifier(rng=5, **kw).fit(X, y)
    b = PrivateBoostingClassifier(rng=5, **kw).fit(X, y)
    assert a.estimators_ == b.estimators_
    assert a.smoothing_thresholds_ == b.smoothing_thresholds_
    assert a.n_rounds_run_ == b.n_rounds_run_


def test_diagnostics_respect_claims():
    """T4/T5 inside real runs (grid variant): capped <= S(w_t), capped mass near tau."""
    X, y = majority5(6000, 4, noise=0.08)
    clf = PrivateBoostingClassifier(
        thresholds=TH,
        n_rounds=15,
        sample_size=300,
        smoothness=1000,
        gamma=0.001,
        rng=9,
        eta=0.2,
        epsilon_threshold=0.5,
        record_nonprivate_diagnostics=True,
    )
    clf.fit(X, y)
    assert not clf.privacy_cost_.certified and clf.nonprivate_diagnostics_
    assert len(clf.capped_counts_) == clf.n_rounds_run_ - 1
    for capped, mass in zip(clf.capped_counts_, clf.cap_mass_):
        assert capped <= mass
        assert 1000 <= mass <= 3000  # l <= S(w_t) <= 3l (whp)
    assert any(c > 0 for c in clf.capped_counts_)  # capping exercised


def test_e1_stop_counts_mistakes():
    """Erratum E1: step 3 counts the rows the vote gets WRONG.  On data a single stump
    classifies perfectly the loop stops after round 1 (err = 0); with the printed step 3
    (count of correct rows = m) it would never stop."""
    gen = np.random.default_rng(0)
    X = gen.integers(0, 10, size=(2000, 1))
    y = np.where(X[:, 0] >= 5, 1, -1)
    votes = np.where(X[:, 0] >= 5, 1, -1)
    assert B._training_errors(votes, y, 1) == 0
    assert B._training_errors(-votes, y, 1) == 2000
    assert B._training_errors(np.zeros(2000, dtype=np.int64), y, -1) == np.count_nonzero(
        y > 0
    )
    stops = 0
    for seed in range(10):
        clf = PrivateBoostingClassifier(
            base_learner=DPStumpLearner(
                epsilon=20.0, thresholds=[[5]], include_constant=False
            ),
            n_rounds=9,
            sample_size=200,
            smoothness=400,
            epsilon_test=5.0,
            gamma=0.1,
            epsilon_threshold=1.0,
            rng=seed,
        ).fit(X, y)
        stops += clf.n_rounds_run_ == 1 and clf.termination_reason_ == "test"
    assert stops == 10


def test_first_stop_probability_exact():
    """U4: P[stop at round 1] = P[err_1 + Z <= gamma m / 2] for the discrete Laplace Z of
    parameter e^-eps_test; binomial test over seeds (the one-candidate learner makes err_1
    a known constant)."""
    from scipy import stats

    m = 40
    X = np.arange(m).reshape(-1, 1) % 10
    y = np.where(X[:, 0] >= 3, 1, -1)  # stump x >= 5: 20 mistakes? count below
    learner = DPStumpLearner(epsilon=1.0, thresholds=[[5]], include_constant=False)
    err1_plus = int(np.count_nonzero(np.where(X[:, 0] >= 5, 1, -1) != y))
    eps, gamma = 0.3, 0.5
    # Two candidates (+ and - sign); record which was drawn and whether the loop stopped.
    stop = {1: 0, -1: 0}
    n = {1: 0, -1: 0}
    for seed in range(3000):
        clf = PrivateBoostingClassifier(
            base_learner=learner,
            n_rounds=3,
            sample_size=5,
            smoothness=4,
            epsilon_test=eps,
            gamma=gamma,
            epsilon_threshold=60.0,
            rng=seed,
        ).fit(X, y)
        s = clf.estimators_[0].sign
        n[s] += 1
        stop[s] += clf.termination_reason_ == "test" and clf.n_rounds_run_ == 1
    p = math.exp(-eps)
    for s, err in ((1, err1_plus), (-1, m - err1_plus)):
        j = math.floor(gamma * m / 2 - err)
        prob = 1 - p ** (j + 1) / (1 + p) if j >= 0 else p ** (-j) / (1 + p)
        assert stats.binomtest(stop[s], n[s], prob).pvalue > ALPHA


def test_utility_separable():
    """Training error <= gamma on the realisable majority-of-5 target (spec U1 in small:
    m = 20,000, not the theorem's 3.5e6; eps_b = 1, k = 1000), in >= 9 of 10 seeds."""
    ok = 0
    for seed in range(10):
        X, y = majority5(20000, 100 + seed)
        clf = PrivateBoostingClassifier(
            thresholds=TH,
            n_rounds=25,
            sample_size=1000,
            smoothness=3000,
            gamma=0.05,
            eta=0.1,
            epsilon_test=0.1,
            epsilon_threshold=0.1,
            base_epsilon=1.0,
            rng=seed,
        ).fit(X, y)
        ok += (1 - clf.score(X, y)) <= 0.05
    assert ok >= 9


def test_any_two_classes_and_pandas():
    import pandas as pd  # the [test] extra installs it

    X, y = majority5(1500, 8)
    labels = np.where(y > 0, ">50K", "<=50K")
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    df["f0"] = df["f0"].astype(np.float32)
    clf = PrivateBoostingClassifier(
        thresholds=TH,
        classes=("<=50K", ">50K"),
        n_rounds=5,
        sample_size=300,
        smoothness=300,
        rng=1,
        epsilon_threshold=1.0,
    )
    clf.fit(df, pd.Series(labels))
    pred = clf.predict(df)
    assert set(pred) <= {"<=50K", ">50K"} and clf.score(df, labels) > 0.7
    np.testing.assert_array_equal(clf.predict(X), pred)


def test_nan_features_follow_the_public_rule():
    """A NaN feature is below every threshold (never an error): same as a value below."""
    X, y = majority5(1000, 2)
    Xf = X.astype(float)
    Xf[::7, 0] = np.nan
    clf = PrivateBoostingClassifier(
        thresholds=TH,
        n_rounds=3,
        sample_size=100,
        smoothness=200,
        rng=3,
        epsilon_threshold=1.0,
    ).fit(Xf, y)
    Xl = Xf.copy()
    Xl[np.isnan(Xl)] = -1.0
    np.testing.assert_array_equal(clf.predict(Xf), clf.predict(Xl))


def test_integer_features_compare_exactly():
    learner = DPStumpLearner(thresholds=[[2.5, 2.0**60 + 256]])
    # 2**60 + 255 would round up to the threshold as a double; compared as an integer
    # it stays below.
    Z = learner.encode([np.array([2, 3, 2**60 + 255, 2**60 + 256], dtype=np.int64)])
    np.testing.assert_array_equal(Z[:, 0], [0, 1, 1, 2])


def test_stump_scores_match_brute_force():
    gen = np.random.default_rng(3)
    learner = DPStumpLearner(thresholds=[[1, 3], [2], [0.5, 1.5, 2.5]])
    Xc = [gen.integers(0, 4, 30) for _ in range(3)]
    Z = learner.encode(Xc)
    y = np.where(gen.random(30) < 0.5, 1, -1).astype(np.int8)
    for k in (1, 7, 30):
        idx = gen.integers(0, 30, k)
        idx[: 2 if k > 1 else 1] = idx[0]  # duplicates count twice
        sc = learner.scores(Z[idx], y[idx])
        for j, q in enumerate(sc):
            h = learner.candidate(j)
            assert q == int(np.count_nonzero(h.predict(Z[idx]) == y[idx]))
        assert len(sc) == learner.n_candidates(3)


# ---------------------------------------------------------------- refusals (T13, T16)


@pytest.mark.parametrize(
    "kw,exc",
    [
        (dict(epsilon_test=0.0), dpfast.PrivacyParameterError),
        (dict(epsilon_threshold=-1.0), dpfast.PrivacyParameterError),
        (dict(epsilon_test=math.nan), dpfast.PrivacyParameterError),
        (dict(base_epsilon=0.0), dpfast.PrivacyParameterError),
        (dict(eta=0.5), dpfast.PrivacyParameterError),
        (dict(gamma=1.0), dpfast.PrivacyParameterError),
        (dict(smoothness=1), dpfast.PrivacyParameterError),
        (dict(smoothness=200), dpfast.PrivacyParameterError),  # m = 600 <= 3 l
        (dict(n_rounds=0), dpfast.PrivacyParameterError),
        (dict(epsilon_threshold=0.01), dpfast.PrivacyParameterError),  # delta >= 1
        (dict(variant="paper"), dpfast.PrivacyParameterError),
        (dict(variant="lazy"), dpfast.PrivacyParameterError),
        (dict(tie_break=0), dpfast.PrivacyParameterError),
        (dict(classes=(1, 1)), dpfast.PrivacyParameterError),
        (dict(thresholds=None), dpfast.PrivacyParameterError),
        (dict(rng="seed"), TypeError),
        (dict(sample_size=1.5), TypeError),
    ],
)
def test_bad_parameters_refused_before_spending(kw, exc):
    X, y = majority5(600, 1)
    b = RecordingBudget()
    args = dict(
        thresholds=TH,
        smoothness=100,
        n_rounds=3,
        sample_size=50,
        budget=b,
        epsilon_threshold=1.0,
    )
    args.update(kw)
    with pytest.raises(exc):
        PrivateBoostingClassifier(**args).fit(X, y)
    assert b.calls == []


def test_bad_data_refused_by_shape_and_type():
    X, y = majority5(600, 1)
    b = RecordingBudget()
    clf = PrivateBoostingClassifier(
        thresholds=TH,
        smoothness=100,
        n_rounds=3,
        sample_size=50,
        budget=b,
        epsilon_threshold=1.0,
    )
    with pytest.raises(ValueError, match="1-dimensional"):
        clf.fit(X, np.c_[y, y])
    with pytest.raises(ValueError, match="rows"):
        clf.fit(X, y[:-1])
    with pytest.raises(ValueError, match="2-dimensional"):
        clf.fit(X[:, 0], y)
    with pytest.raises(TypeError, match="dtype"):
        clf.fit(X.astype(object), y)
    with pytest.raises(TypeError, match="dtype"):
        clf.fit(X.astype(np.longdouble), y)
    with pytest.raises(TypeError):
        clf.fit(X, np.where(y > 0, "a", "b"))  # strings vs classes (-1, 1)
    assert b.calls == []
    with pytest.raises(dpfast.NotFittedError, match="not fitted") as info:
        clf.predict(X)
    # a documented type, and what scikit-learn code catches (ValueError, AttributeError)
    assert isinstance(info.value, ValueError) and isinstance(info.value, AttributeError)
    clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])


def test_uint64_features_are_clamped_like_int64():
    """uint64 is an integer dtype: clamped to int64 like every integer in dpfast (on
    main it was refused, while pandas types a column built from [2**63, 0] uint64 and
    one from [2**63 - 1, 0] int64: the value decided the refusal)."""
    X, y = majority5(600, 1)
    kw = dict(
        thresholds=TH, smoothness=100, n_rounds=3, sample_size=50, epsilon_threshold=1.0
    )
    a = PrivateBoostingClassifier(rng=dr.ChaCha20(4), **kw).fit(X, y)
    b = PrivateBoostingClassifier(rng=dr.ChaCha20(4), **kw).fit(X.astype(np.uint64), y)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))
    big = X.astype(np.uint64)
    big[0, 0] = 2**64 - 1  # clamped, never refused
    assert b.predict(big).shape == (600,)


def test_labels_outside_the_public_pair_count_as_the_negative_class():
    # A private label value never decides whether fit raises: a label that is neither
    # public class is mapped to classes[0], so the fit equals the fit on that mapping.
    X, y = majority5(600, 1)
    odd = np.where(y > 0, 1, 2)  # 2 is not a public label
    kw = dict(
        thresholds=TH, smoothness=100, n_rounds=3, sample_size=50, epsilon_threshold=1.0
    )
    a = PrivateBoostingClassifier(rng=7, **kw).fit(X, odd)
    b = PrivateBoostingClassifier(rng=7, **kw).fit(X, np.where(y > 0, 1, -1))
    assert np.array_equal(a.predict(X), b.predict(X))
    assert a.run_record_.rounds_run == b.run_record_.rounds_run


def test_budget_exceeded_draws_nothing():
    X, y = majority5(600, 1)
    budget = dpfast.accounting.PrivacyBudget(epsilon=0.5, delta=1e-6)
    clf = PrivateBoostingClassifier(
        thresholds=TH,
        smoothness=100,
        n_rounds=3,
        sample_size=50,
        budget=budget,
        epsilon_threshold=1.0,
    )
    with pytest.raises(dpfast.BudgetExceededError):
        clf.fit(X, y)
    assert not hasattr(clf, "estimators_")


def test_spend_happens_before_any_draw_and_is_not_refunded(monkeypatch):
    """T13: the budget is charged before the first random draw; an early stop does not
    change the amount."""
    X, y = majority5(600, 1)
    events = []

    class Budget:
        def spend(self, epsilon, delta=0.0, *, label=None):
            events.append(("spend", epsilon, delta))

    gen = dr.ChaCha20(1)
    orig = _core.boost_sample

    def spy(v, k, rng):
        events.append(("draw",))
        return orig(v, k, rng)

    monkeypatch.setattr(B._core, "boost_sample", spy)
    clf = PrivateBoostingClassifier(
        thresholds=TH,
        smoothness=100,
        n_rounds=5,
        sample_size=50,
        gamma=0.99,
        epsilon_test=5.0,
        base_epsilon=5.0,
        epsilon_threshold=1.0,
        budget=Budget(),
        rng=gen,
    ).fit(X, y)
    assert events[0][0] == "spend" and events[1] == ("draw",)
    assert clf.termination_reason_ == "test" and clf.n_rounds_run_ < 5
    assert events[0][1:] == (clf.privacy_cost(600).epsilon, clf.privacy_cost(600).delta)


def test_paper_variant_needs_opt_in_and_warns():
    X, y = majority5(2000, 1)
    clf = PrivateBoostingClassifier(
        variant="paper",
        allow_uncertified=True,
        thresholds=TH,
        smoothness=300,
        n_rounds=5,
        sample_size=200,
        epsilon_threshold=0.5,
        rng=4,
        gamma=0.001,
    )
    b = RecordingBudget()
    clf.set_params(budget=b)
    with pytest.warns(UncertifiedPrivacyWarning):
        clf.fit(X, y)
    assert not clf.privacy_cost_.certified
    assert b.calls[0][2].endswith("UNCERTIFIED)")
    assert clf.termination_reason_ in ("max_rounds", "cap_out_of_range", "test")


def test_custom_learner_protocol():
    class Const:
        epsilon, delta, neighbouring = 0.5, 1e-8, "replace-one-position"

        def fit_sample(self, Z, y, rng):
            class H:
                def predict(self, Z):
                    return np.ones(len(Z))

            return H()

    X, y = majority5(600, 1)
    clf = PrivateBoostingClassifier(
        base_learner=Const(),
        smoothness=100,
        n_rounds=3,
        sample_size=20,
        rng=1,
        epsilon_threshold=1.0,
    ).fit(X, y)
    assert clf.privacy_cost_.delta > 0
    assert np.all(clf.predict(X) == 1)

    class Bad(Const):
        neighbouring = "add-remove"

    with pytest.raises(dpfast.PrivacyParameterError, match="replace-one-position"):
        PrivateBoostingClassifier(base_learner=Bad(), smoothness=100).fit(X, y)
    with pytest.raises(TypeError, match="fit_sample"):
        PrivateBoostingClassifier(base_learner=object(), smoothness=100).fit(X, y)


def test_params_conventions():
    clf = PrivateBoostingClassifier(thresholds=TH, n_rounds=5)
    p = clf.get_params()
    assert p["n_rounds"] == 5 and p["thresholds"] is TH and "base_learner" in p
    assert clf.set_params(n_rounds=7) is clf and clf.n_rounds == 7
    with pytest.raises(ValueError):
        clf.set_params(nope=1)
    inner = DPStumpLearner(epsilon=0.3, thresholds=TH)
    clf.set_params(base_learner=inner, base_learner__epsilon=0.4)
    assert inner.epsilon == 0.4 and clf.get_params()["base_learner__epsilon"] == 0.4
    assert "n_rounds=7" in repr(clf)
    assert not any(k.endswith("_") for k in vars(PrivateBoostingClassifier()))


def test_sklearn_checks_that_apply():
    import sklearn as sk  # in the [test] extra
    from sklearn.base import clone
    from sklearn.utils import estimator_checks as ec

    clf = PrivateBoostingClassifier(
        thresholds=TH, n_rounds=3, smoothness=50, rng=1, epsilon_threshold=2.0
    )
    c2 = clone(clf)
    assert c2.get_params() == clf.get_params()
    ec.check_no_attributes_set_in_init("PrivateBoostingClassifier", clf)
    ec.check_parameters_default_constructible("PrivateBoostingClassifier", clf)
    ec.check_get_params_invariance("PrivateBoostingClassifier", clf)
    ec.check_set_params("PrivateBoostingClassifier", clf)
    assert sk.__version__


@pytest.mark.parametrize(
    "eps,T,per,eb",
    [
        (0.25, 3, 0.0125, 0.349),
        (0.5, 5, 0.0125, 0.369),
        (1, 11, 0.0100, 0.308),
        (2, 15, 0.0143, 0.435),
        (4, 15, 0.0286, 0.808),
        (8, 15, 0.0571, 1.349),
    ],
)
def test_planner_matches_spec_table(eps, T, per, eb):
    """Spec 8.5's plan for Adult (m = 32,561, l = 8000, k = 1000, noise share 0.2,
    delta <= 1e-9), to the spec's printed digits."""
    from dpfast.learn import plan_grid

    p = plan_grid(32561, eps, 1e-9, smoothness=8000)
    assert p["n_rounds"] == T
    assert (
        abs(p["epsilon_test"] - per) <= 6e-5 and p["epsilon_threshold"] == p["epsilon_test"]
    )
    assert abs(p["base_epsilon"] - eb) <= 1.5e-3
    assert p["cost"].epsilon <= eps and p["cost"].delta <= 1e-9


def test_planner_refuses_infeasible():
    from dpfast.learn import plan_grid

    with pytest.raises(dpfast.PrivacyParameterError):
        plan_grid(32561, 0.01, 1e-12, smoothness=8000)


def test_claims_6_2_to_6_4_with_corrected_r():
    """T6-T8 (errata E10, E12, E13) on the C kernels: with r_{i,t} = w_t v_{i,t}/v_{i,t-1},
    r <= u = e^{-alpha c} (equal when uncapped), Z_t = sum_i D_t[i] r_{i,t} obeys Claim 6.3's
    bound, and the final training error obeys Claim 6.2: err <= prod Z_t + ever-capped/m.
    A non-private weighted-ERM stump stands in for the learner (the claims are about the
    reweighting, spec 7.4)."""
    X, y = majority5(3000, 21, noise=0.08)
    y8 = y.astype(np.int8)
    learner = DPStumpLearner(thresholds=TH)
    Z = learner.encode([X[:, f] for f in range(X.shape[1])])
    preds = np.array(
        [learner.candidate(j).predict(Z) for j in range(learner.n_candidates(10))]
    )
    m, ell, alpha = 3000, 300, math.atanh(2 * 0.1)
    v = np.ones(m)
    votes = np.zeros(m)
    prodZ, ever = 1.0, np.zeros(m, dtype=bool)
    for _ in range(25):
        D = v / v.sum()
        pred = preds[int(np.argmax((preds == y8) @ D))]
        votes += pred
        c = (pred * y8).astype(np.int8)
        u = np.exp(-alpha * c)
        a = _core.boost_premultiply(v, c, math.exp(-alpha), math.exp(alpha))
        w, capped = _core.boost_solve_w(a, 2.0 * ell)
        v_new, n_capped, mass = _core.boost_cap(a, w)
        assert n_capped <= mass  # Claim 6.4
        r = w * v_new / v
        assert np.all(r <= u * (1 + 1e-12))  # r <= u (E10)
        unc = a < w
        assert np.allclose(r[unc], u[unc], rtol=1e-12)
        eta_t = 0.5 * float(D @ c)
        Zt = float(D @ r)
        bound = (1 + 2 * eta_t) / 2 * math.exp(-alpha) + (1 - 2 * eta_t) / 2 * math.exp(
            alpha
        )
        assert Zt <= bound + 1e-12  # Claim 6.3 (E13)
        prodZ *= Zt
        ever |= ~unc
        v = v_new
    err = np.mean(votes * y <= 0)  # ties count as errors
    assert err <= prodZ + ever.mean() + 1e-12  # Claim 6.2 (E12)
    assert ever.any()


def test_threads_and_pickle():
    """Fits in threads equal serial fits (kernels release the GIL and hold the generator's
    lock); a fitted model pickles with its DP outputs and predicts the same."""
    import pickle
    import threading

    X, y = majority5(3000, 6)
    kw = dict(
        thresholds=TH,
        n_rounds=5,
        sample_size=200,
        smoothness=500,
        epsilon_threshold=1.0,
        gamma=0.001,
    )
    serial = [
        PrivateBoostingClassifier(rng=s, **kw).fit(X, y).estimators_ for s in range(4)
    ]
    out = [None] * 4

    def work(s):
        out[s] = PrivateBoostingClassifier(rng=s, **kw).fit(X, y).estimators_

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert out == serial
    clf = PrivateBoostingClassifier(rng=3, **kw).fit(X, y)
    clone = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clone.predict(X), clf.predict(X))
    assert not hasattr(clone, "capped_counts_")
