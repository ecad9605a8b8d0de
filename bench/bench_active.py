"""Cost of the active budget and of the InsecureRandomnessWarning check on scalar calls.

What a scalar call pays (ns per call, median of repeats) on each path:
the default path (rng=None, no budget) must cost what it cost before both features;
charging through an active budget costs what charging an explicit budget costs; a seeded
generator pays the warning machinery (Python's warnings, filtered to "ignore" here as a
simulation would).  numpy's scalar ``Generator.laplace`` is the reference of the ratio.

    python bench/bench_active.py [--json PATH] [--repeats 7] [-n 100000]
"""

import warnings

import numpy as np

import _common as C
import dpfast
import dpfast.random as dr
from dpfast.accounting import PrivacyBudget
from dpfast.mechanisms import laplace_mechanism
from dpfast.objects import Laplace


def main():
    p = C.parser(__doc__.splitlines()[0])
    p.set_defaults(n=100_000)
    args = p.parse_args()
    n, reps = args.n, args.repeats
    info = C.header("active budget and insecure-randomness check, scalar calls", reps)
    warnings.simplefilter("ignore", dpfast.InsecureRandomnessWarning)
    gen = np.random.default_rng(1)
    seeded = dr.ChaCha20(1)
    lap = Laplace(1.0)
    big = PrivacyBudget(1e300)

    def loop(f):
        def run():
            for _ in range(n):
                f()

        return run

    cases = {
        "numpy Generator.laplace(0, 1)": lambda: gen.laplace(0.0, 1.0),
        "laplace_mechanism(x), default": lambda: laplace_mechanism(1.5, epsilon=1.0),
        "Laplace.release(x), default": lambda: lap.release(1.5),
        "laplace_mechanism(x, budget=b)": lambda: laplace_mechanism(
            1.5, epsilon=1.0, budget=big
        ),
        "laplace_mechanism(x) in b.active()": None,
        "Laplace.release(x, budget=b)": lambda: lap.release(1.5, budget=big),
        "Laplace.release(x) in b.active()": None,
        "laplace_mechanism(x, rng=seeded)": lambda: laplace_mechanism(
            1.5, epsilon=1.0, rng=seeded
        ),
        "Laplace.release(x, rng=seeded)": lambda: lap.release(1.5, rng=seeded),
    }
    rows = []
    ref = None
    for name, f in cases.items():
        if f is None:
            inner = (
                (lambda: laplace_mechanism(1.5, epsilon=1.0))
                if "mechanism" in name
                else (lambda: lap.release(1.5))
            )

            def run(inner=inner):
                with big.active():
                    for _ in range(n):
                        inner()

            med, best = C.timeit(run, n, reps)
        else:
            med, best = C.timeit(loop(f), n, reps)
        ref = med if ref is None else ref
        rows.append(
            {"case": name, "ns_median": med, "ns_min": best, "ratio": C.ratio(med, ref)}
        )
    print(f"{'case':40s} {'ns (median)':>12s} {'ns (min)':>10s} {'ratio':>7s}")
    for r in rows:
        print(
            f"{r['case']:40s} {r['ns_median']:12.0f} {r['ns_min']:10.0f} {r['ratio']:7.2f}"
        )
    C.write_json(args.json, {"machine": info, "n": n, "repeats": reps, "rows": rows})


if __name__ == "__main__":
    main()
