"""What numpy's conventions cost (issue 14, item 4), in one run.

    python bench/bench_numpy_conventions.py [--json out.json] [-n 1000000] [--repeats 7]

Scalar calls of dpfast.random's simulation samplers in numpy's order (floats, ints,
numpy scalars) against numpy's Generator(PCG64) scalar call; a fill with array-valued
``loc``/``scale`` (numpy's broadcasting) against numpy's; and a release with ``axis=0``
on a DataFrame against the same per-column releases written as a Python loop (the
reference there is dpfast itself).  "ratio" is dpfast's time divided by the reference's.
"""

import numpy as np

import dpfast.random as dr
import dpfast.stats as R
from _common import parser, ratio, report, timeit


def main():
    args = parser(__doc__).parse_args()
    n, rep = args.n, args.repeats
    rows = []
    pcg = np.random.Generator(np.random.PCG64(1))

    k = 50_000
    t_np, _ = timeit(lambda: [pcg.laplace(0.0, 1.0) for _ in range(k)], k, rep)
    rows.append({"name": "numpy scalar laplace(0.0, 1.0)", "ns": t_np})
    for label, call in [
        ("laplace(0.0, 1.0)", lambda: dr.laplace(0.0, 1.0)),
        ("laplace(0, 1, None) (ints)", lambda: dr.laplace(0, 1, None)),
        (
            "laplace(np.float64(0), np.float64(1), None)",
            lambda: dr.laplace(np.float64(0.0), np.float64(1.0), None),
        ),
        ("normal(0.0, 1.0)", lambda: dr.normal(0.0, 1.0)),
        ("gumbel(0.0, 1.0)", lambda: dr.gumbel(0.0, 1.0)),
    ]:
        t, _ = timeit(lambda: [call() for _ in range(k)], k, rep)
        rows.append({"name": f"dpfast scalar {label}", "ns": t, "ratio": ratio(t, t_np)})

    loc = np.linspace(-1.0, 1.0, 1000)
    scale = np.linspace(0.5, 2.0, 1000)
    m = max(n // 1000, 1)
    t_np, _ = timeit(lambda: pcg.laplace(loc, scale, size=(m, 1000)), m * 1000, rep)
    t_dp, _ = timeit(lambda: dr.laplace(loc, scale, size=(m, 1000)), m * 1000, rep)
    rows.append({"name": "numpy laplace(loc[1000], scale[1000], (m, 1000))", "ns": t_np})
    rows.append(
        {
            "name": "dpfast laplace(loc[1000], scale[1000], (m, 1000))",
            "ns": t_dp,
            "ratio": ratio(t_dp, t_np),
        }
    )

    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        rows_n, cols = max(n // 10, 1), 10
        df = pd.DataFrame(
            np.random.default_rng(0).uniform(0, 100, (rows_n, cols)),
            columns=[f"c{j}" for j in range(cols)],
        )
        kw = {"lower": 0.0, "upper": 100.0}

        def loop():
            return pd.Series(
                {c: R.mean(df[c].to_numpy(), epsilon=0.1, **kw) for c in df.columns}
            )

        t_loop, _ = timeit(loop, rows_n * cols, rep)
        t_axis, _ = timeit(
            lambda: R.mean(df, epsilon=1.0, axis=0, **kw), rows_n * cols, rep
        )
        rows.append({"name": "per-column mean, Python loop over columns", "ns": t_loop})
        rows.append(
            {
                "name": "releases.mean(df, axis=0)",
                "ns": t_axis,
                "ratio": ratio(t_axis, t_loop),
                "note": "reference: the loop",
            }
        )
    report("numpy conventions: ns per value", rows, args)


if __name__ == "__main__":
    main()
