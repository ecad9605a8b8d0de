"""Scalar releases on prepared mechanism objects against numpy's scalar samplers, one run.

    python bench/bench_objects.py [--json out.json] [-n 20000] [--repeats 15]

Every row is one Python-level call per item (a loop of n calls).  Each dpfast row and its
numpy reference are timed round-robin (one loop of each per round, after a warm-up
round), so that both see the same load on a shared machine; ``ns`` is the median over the
rounds and ``ratio`` the median of the per-round ratios dpfast time / reference time
(issue 14's goal: a scalar ``Laplace(...).release(float)`` at most 0.5 of numpy's scalar
``Generator.laplace``).  The dpfast rows use the default CSPRNG (rng=None) and the secure
(exact) path.
"""

import statistics
import time

import numpy as np

from _common import parser, report
from dpfast import mechanisms as M
from dpfast.accounting import PrivacyBudget
from dpfast.objects import DiscreteLaplace, Gaussian, Laplace


def paired(case, reference, n, repeats):
    """(median ns of case, median ns of reference, median per-round ratio)."""
    tc, tr, rs = [], [], []
    for r in range(repeats + 1):
        t0 = time.perf_counter_ns()
        reference()
        t1 = time.perf_counter_ns()
        case()
        t2 = time.perf_counter_ns()
        if r:
            tr.append((t1 - t0) / n)
            tc.append((t2 - t1) / n)
            rs.append((t2 - t1) / (t1 - t0))
    return statistics.median(tc), statistics.median(tr), statistics.median(rs)


def main():
    p = parser(__doc__)
    p.set_defaults(n=20_000, repeats=15)
    args = p.parse_args()
    n, rep = args.n, args.repeats
    pcg = np.random.Generator(np.random.PCG64())
    lap, dlap = Laplace(epsilon=1.0), DiscreteLaplace(epsilon=1.0)
    gau = Gaussian(epsilon=1.0, delta=1e-6)
    rel, drel, grel = lap.release, dlap.release, gau.release
    np_lap, np_norm = pcg.laplace, pcg.normal
    budget = PrivacyBudget(float(2 * n * (rep + 1)))
    ref_lap = lambda: [np_lap(0.0, 1.0) for _ in range(n)]  # noqa: E731
    ref_norm = lambda: [np_norm(0.0, 1.0) for _ in range(n)]  # noqa: E731
    cases = [
        (
            "Laplace(epsilon=1).release(1.0)  [prepared object]",
            ref_lap,
            lambda: [rel(1.0) for _ in range(n)],
        ),
        (
            "laplace_mechanism(1.0, epsilon=1.0)  [the function]",
            ref_lap,
            lambda: [M.laplace_mechanism(1.0, epsilon=1.0) for _ in range(n)],
        ),
        (
            "Laplace.release(1.0, budget=PrivacyBudget)",
            ref_lap,
            lambda: [rel(1.0, budget=budget) for _ in range(n)],
        ),
        (
            "DiscreteLaplace(epsilon=1).release(3)",
            ref_lap,
            lambda: [drel(3) for _ in range(n)],
        ),
        (
            "Gaussian(epsilon=1, delta=1e-6).release(1.0)",
            ref_norm,
            lambda: [grel(1.0) for _ in range(n)],
        ),
    ]
    rows, refs = [], {}
    for name, ref, fn in cases:
        t, t_ref, r = paired(fn, ref, n, rep)
        refs.setdefault(ref, []).append(t_ref)
        rows.append(
            {
                "name": name,
                "ns": t,
                "ratio": r,
                "note": f"numpy {t_ref:.1f} ns in the same rounds",
            }
        )
    rows[:0] = [
        {
            "name": "numpy scalar Generator.laplace(0.0, 1.0) (PCG64)",
            "ns": statistics.median(refs[ref_lap]),
        },
        {
            "name": "numpy scalar Generator.normal(0.0, 1.0) (PCG64)",
            "ns": statistics.median(refs[ref_norm]),
        },
    ]
    report(
        "dpfast.objects: scalar release, ns per call",
        rows,
        args,
        reference="numpy scalar call (same rounds)",
    )


if __name__ == "__main__":
    main()
