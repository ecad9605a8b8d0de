"""Secure (default) mechanisms against numpy's (not DP-safe) samplers, in one run.

    python bench/bench_mechanisms.py [--json out.json] [-n 1000000] [--repeats 7]

"x numpy" is dpfast's time divided by numpy's (the issue's goals are upper bounds on
it: secure float Laplace <= 4, secure float Gaussian <= 10, scalar Laplace <= 2).
Peers (OpenDP, diffprivlib, python-dp) are timed too when importable.
"""
import numpy as np

import dpfast.mechanisms as M
import dpfast.random as dr
from _common import parser, ratio, report, timeit


def peers(n, rep, x, rows, t_np_lap):
    try:
        from diffprivlib.mechanisms import Laplace
        mech = Laplace(epsilon=1.0, sensitivity=1.0)
        k = 20_000
        t, _ = timeit(lambda: [mech.randomise(0.0) for _ in range(k)], k, rep)
        rows.append({"name": "diffprivlib Laplace.randomise (scalar, not FP-safe)", "ns": t,
                     "ratio": ratio(t, t_np_lap)})
    except ImportError:
        pass
    try:
        import opendp.prelude as dp
        dp.enable_features("contrib")
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
        meas = space >> dp.m.then_laplace(scale=1.0)
        k = 100_000
        xs = [0.0] * k
        t, _ = timeit(lambda: meas(xs), k, rep)
        rows.append({"name": "OpenDP then_laplace, float vector (exact)", "ns": t,
                     "ratio": ratio(t, t_np_lap)})
    except ImportError:
        pass


def main():
    args = parser(__doc__).parse_args()
    n, rep = args.n, args.repeats
    rows = []
    pcg = np.random.Generator(np.random.PCG64())
    g = dr.ChaCha20()
    x = np.zeros(n)
    xi = np.zeros(n, dtype=np.int64)
    t_lap, _ = timeit(lambda: pcg.laplace(0.0, 1.0, n), n, rep)
    t_norm, _ = timeit(lambda: pcg.normal(0.0, 1.0, n), n, rep)
    rows.append({"name": "numpy Generator.laplace (PCG64)", "ns": t_lap})
    rows.append({"name": "numpy Generator.normal (PCG64)", "ns": t_norm})
    cases = [
        ("secure laplace_mechanism, float vector", t_lap,
         lambda: M.laplace_mechanism(x, epsilon=1.0, rng=g)),
        ("secure laplace_mechanism, int vector (discrete Laplace)", t_lap,
         lambda: M.laplace_mechanism(xi, epsilon=1.0, rng=g)),
        ("secure gaussian_mechanism, float vector", t_norm,
         lambda: M.gaussian_mechanism(x, epsilon=1.0, delta=1e-5, rng=g)),
        ("secure gaussian_mechanism, int vector (discrete Gaussian)", t_norm,
         lambda: M.gaussian_mechanism(xi, epsilon=1.0, delta=1e-5, rng=g)),
        ("fast laplace_mechanism, float vector", t_lap,
         lambda: M.laplace_mechanism(x, epsilon=1.0, mode="fast", rng=g)),
    ]
    for name, base, fn in cases:
        t, _ = timeit(fn, n, rep)
        rows.append({"name": name, "ns": t, "ratio": ratio(t, base)})
    # workers= (all cores): the same release for any thread count; speed-up vs 1 thread
    for name, fn in [
        ("secure laplace_mechanism, float vector", lambda w: M.laplace_mechanism(
            x, epsilon=1.0, rng=g, workers=w)),
        ("secure gaussian_mechanism, float vector", lambda w: M.gaussian_mechanism(
            x, epsilon=1.0, delta=1e-5, rng=g, workers=w)),
        ("dpfast.random.laplace fill", lambda w: dr.laplace(scale=1.0, size=n, rng=g, workers=w)),
    ]:
        t1, _ = timeit(lambda: fn(1), n, rep)
        t2, _ = timeit(lambda: fn(2), n, rep)
        rows.append({"name": f"{name}, workers=2", "ns": t2,
                     "note": f"workers=2 / workers=1 time: {ratio(t2, t1):.2f} ({t1:.1f} ns)"})
    k = 100_000
    t_np1, _ = timeit(lambda: [pcg.laplace(0.0, 1.0) for _ in range(k)], k, rep)
    t_dp1, _ = timeit(lambda: [M.laplace_mechanism(1.0, epsilon=1.0) for _ in range(k)], k, rep)
    rows.append({"name": "numpy scalar Generator.laplace(0.0, 1.0)", "ns": t_np1})
    rows.append({"name": "secure scalar laplace_mechanism(1.0, epsilon=1.0)", "ns": t_dp1,
                 "ratio": ratio(t_dp1, t_np1)})
    peers(n, rep, x, rows, t_lap)
    report("dpfast.mechanisms: ns per element", rows, args, reference="numpy")


if __name__ == "__main__":
    main()
