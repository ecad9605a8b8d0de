"""Pin the numpy prototype's error distribution on the synthetic W2 workload of
tests/test_release_regression.py (the numbers pinned there come from this script).

    python bench/release_pin_proto.py --proto /work/shared/release/proto --seeds 20

(with dpfast installed: the synthetic records come from the test module.)

The prototype (RELEASE.md, ``release/proto/release.py``) is imported from --proto, run on
the same synthetic data as the test with the same configurations, and the mean and
standard error over seeds of the max and mean |error|/n are printed per method.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

SHAPE = (4, 5, 3, 2, 2, 3)  # as in tests/test_release_regression.py
N_RECORDS = 4000
EPS = 0.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto", required=True)
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    sys.path.insert(0, args.proto)
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
    )
    import release as R

    from test_release_regression import toy_codes

    codes = toy_codes()
    h = np.bincount(
        np.ravel_multi_index(codes.T, SHAPE), minlength=math.prod(SHAPE)
    ).astype(float)
    n = float(N_RECORDS)
    wl = R.MarginalWorkload(SHAPE, way=2)
    truth = wl.answer_all(h)
    out = {}

    def rec(name, ans):
        e = np.abs(ans - truth) / n
        out.setdefault(name, []).append((float(e.max()), float(e.mean())))

    e_init, e_rest = 0.1 * EPS, 0.9 * EPS
    for seed in range(args.seeds):
        rng = np.random.default_rng([seed, 7])
        rec("laplace_marginals", R.laplace_marginals(rng, truth, EPS, wl.m))
        init = R.init_marginals1(rng, h, SHAPE, e_init)
        syn, _ = R.mwem(
            rng,
            h,
            wl,
            n,
            e_rest,
            10,
            passes=10,
            init=init,
            unit="marginal",
            true_answers=truth,
        )
        rec("mwem_group_warm", wl.answer_all(syn))
        syn, _ = R.mwem(
            rng,
            h,
            wl,
            n,
            e_rest,
            10,
            passes=10,
            init=init,
            unit="query",
            true_answers=truth,
        )
        rec("mwem_query_warm", wl.answer_all(syn))
        s1 = R.NumericSparse(np.random.default_rng(0), 0.0, 10, e_rest).s1
        r = R.online_pmw(
            rng,
            h,
            wl,
            rng.permutation(wl.nq),
            n,
            e_rest,
            10,
            8 * s1,
            step="adaptive",
            clip=True,
            replay=3,
            init=init,
        )
        rec("pmw_warm_replay", r.answers)
        s1 = R.NumericSparse(np.random.default_rng(0), 0.0, 40, EPS).s1
        r = R.online_pmw(
            rng, h, wl, rng.permutation(wl.nq), n, EPS, 40, 8 * s1, step="book", clip=False
        )
        rec("pmw_textbook", r.answers)
        T, k, eta, share = 3, 50, 0.2, 0.2
        alpha = 0.5 * math.log((1 + 2 * eta) / (1 - 2 * eta))
        eps_base = (1 - share) * e_rest / T
        mu = 2 * alpha * k * T * (T - 1) / (share * e_rest)
        rec(
            "boosting_warm",
            R.boost_queries(
                rng,
                h,
                wl,
                n,
                eps_base,
                T,
                k,
                2 * k / eps_base,
                mu,
                eta,
                fit_passes=20,
                truth=truth,
                init=init,
            ),
        )
    pinned = {}
    for name, vals in out.items():
        a = np.asarray(vals)
        se = a.std(axis=0, ddof=1) / math.sqrt(len(a))
        pinned[name] = [
            round(float(a[:, 0].mean()), 6),
            round(float(se[0]), 6),
            round(float(a[:, 1].mean()), 7),
            round(float(se[1]), 7),
        ]
    print(json.dumps(pinned, indent=1))


if __name__ == "__main__":
    main()
