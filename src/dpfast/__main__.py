"""``python -m dpfast``: a short demo of real DP releases and of dpfast's speed."""
import time

import numpy as np

import dpfast
import dpfast.random as dr


def _ns_per_item(fn, n, repeats=5):
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        best.append(time.perf_counter_ns() - t0)
    return sorted(best)[len(best) // 2] / n


def throughput():
    n = 1_000_000
    g = dr.default_rng()
    pcg = np.random.Generator(np.random.PCG64())
    out = np.empty(n)
    print(f"\nThroughput, {n:,} samples, median of 5 (numpy's samplers are not DP-safe):")
    print(f"  ChaCha20 keystream [{g.simd}]: "
          f"{_ns_per_item(lambda: g.random_raw(n), n):6.2f} ns per 64-bit word")
    for name, ours, theirs in [
        ("Laplace ", lambda: dr.laplace(1.0, out=out, rng=g), lambda: pcg.laplace(0, 1, n)),
        ("Gaussian", lambda: dr.gaussian(1.0, out=out, rng=g),
         lambda: pcg.standard_normal(out=out)),
    ]:
        a, b = _ns_per_item(ours, n), _ns_per_item(theirs, n)
        print(f"  {name} simulation noise: dpfast {a:6.2f} ns, numpy {b:6.2f} ns "
              f"({b / a:4.1f}x faster)")


def main():
    print(f"dpfast {dpfast.__version__}: differential privacy, fast and floating-point safe")
    g = dr.default_rng()
    print(f"Default generator: {g!r}, keyed from the operating system")
    throughput()


if __name__ == "__main__":
    main()
