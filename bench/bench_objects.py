"""Scalar releases on prepared mechanism objects against numpy's scalar samplers, one run.

    python bench/bench_objects.py [--json out.json] [-n 200000] [--repeats 7]

Every row is one Python-level call per item (a loop of n calls), the median of the
repeats; ``ratio`` = dpfast time / reference time (issue 14's goal: a scalar
``Laplace(...).release(float)`` at most 0.5 of numpy's scalar ``Generator.laplace``).
The dpfast rows use the default CSPRNG (rng=None) and the secure (exact) path.
"""
import numpy as np

from dpfast import mechanisms as M
from dpfast.accounting import PrivacyBudget
from dpfast.objects import DiscreteLaplace, Gaussian, Laplace

from _common import parser, ratio, report, timeit


def main():
    p = parser(__doc__)
    p.set_defaults(n=200_000)
    args = p.parse_args()
    n, rep = args.n, args.repeats
    pcg = np.random.Generator(np.random.PCG64())
    lap, dlap = Laplace(epsilon=1.0), DiscreteLaplace(epsilon=1.0)
    gau = Gaussian(epsilon=1.0, delta=1e-6)
    rel, drel, grel = lap.release, dlap.release, gau.release
    t_lap, _ = timeit(lambda: [pcg.laplace(0.0, 1.0) for _ in range(n)], n, rep)
    t_norm, _ = timeit(lambda: [pcg.normal(0.0, 1.0) for _ in range(n)], n, rep)
    rows = [{"name": "numpy scalar Generator.laplace(0.0, 1.0) (PCG64)", "ns": t_lap},
            {"name": "numpy scalar Generator.normal(0.0, 1.0) (PCG64)", "ns": t_norm}]
    budget = PrivacyBudget(float(2 * n * (rep + 1)))
    cases = [
        ("Laplace(epsilon=1).release(1.0)  [prepared object]", t_lap,
         lambda: [rel(1.0) for _ in range(n)]),
        ("laplace_mechanism(1.0, epsilon=1.0)  [today's function]", t_lap,
         lambda: [M.laplace_mechanism(1.0, epsilon=1.0) for _ in range(n)]),
        ("Laplace.release(1.0, budget=PrivacyBudget)", t_lap,
         lambda: [rel(1.0, budget=budget) for _ in range(n)]),
        ("DiscreteLaplace(epsilon=1).release(3)", t_lap,
         lambda: [drel(3) for _ in range(n)]),
        ("Gaussian(epsilon=1, delta=1e-6).release(1.0)", t_norm,
         lambda: [grel(1.0) for _ in range(n // 10)]),
    ]
    for name, base, fn in cases:
        k = n // 10 if name.startswith("Gaussian") else n
        t, _ = timeit(fn, k, rep)
        rows.append({"name": name, "ns": t, "ratio": ratio(t, base)})
    report("dpfast.objects: scalar release, ns per call", rows, args,
           reference="numpy scalar call")


if __name__ == "__main__":
    main()
