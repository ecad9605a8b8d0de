"""ChaCha20 throughput and the continuous samplers against numpy, in one run.

    python bench/bench_random.py [--json out.json] [-n 1000000] [--repeats 7]

"ratio" is dpfast's time divided by numpy's (below 1: dpfast is faster), both
measured here with numpy's Generator(PCG64); numpy's samplers are not DP-safe.
The keystream rows time random_raw(n) (the bulk fill) with each SIMD kernel; their
note gives the throughput and the goal of issue 15 where it sets one.
"""

import numpy as np

import dpfast.random as dr
from _common import parser, ratio, report, timeit
from dpfast import _core

# Issue 15's goals for the keystream, ns per 64-bit word ("scalar" is the portable kernel).
KEYSTREAM_GOAL_NS = {"avx2": 2.5, "sse2": 4.5, "scalar": 6.0}


def main():
    args = parser(__doc__).parse_args()
    n, rep = args.n, args.repeats
    rows = []
    g = dr.ChaCha20()
    for impl in _core._simd_available():
        _core._set_simd(g, impl)
        # three untimed calls first: the first row of a run paid for the process's first
        # 8 MB allocations (up to 50% more on this VM)
        ns, _ = timeit(lambda: g.random_raw(n), n, rep, warmup=3)
        note = f"{8 / ns:.2f} GB/s"
        if impl in KEYSTREAM_GOAL_NS:
            goal = KEYSTREAM_GOAL_NS[impl]
            note += f", goal <= {goal} ns: {'met' if ns <= goal else 'not met'}"
        rows.append({"name": f"chacha20 keystream [{impl}]", "ns": ns, "note": note})
    g = dr.ChaCha20()  # best implementation again
    pcg = np.random.Generator(np.random.PCG64())
    ns_np, _ = timeit(lambda: pcg.bit_generator.random_raw(n), n, rep)
    rows.append({"name": "numpy PCG64 random_raw", "ns": ns_np, "note": "not a CSPRNG"})

    out = np.empty(n)
    pairs = [
        (
            "uniform",
            lambda: dr.uniform(0.0, 1.0, out=out, rng=g),
            lambda: pcg.random(out=out),
        ),
        (
            "laplace",
            lambda: dr.laplace(scale=1.0, out=out, rng=g),
            lambda: pcg.laplace(0.0, 1.0, n),
        ),
        (
            "gaussian",
            lambda: dr.normal(scale=1.0, out=out, rng=g),
            lambda: pcg.standard_normal(out=out),
        ),
        (
            "exponential",
            lambda: dr.exponential(1.0, out=out, rng=g),
            lambda: pcg.standard_exponential(out=out),
        ),
        (
            "gumbel",
            lambda: dr.gumbel(scale=1.0, out=out, rng=g),
            lambda: pcg.gumbel(0.0, 1.0, n),
        ),
    ]
    for name, ours, theirs in pairs:
        t_np, _ = timeit(theirs, n, rep)
        t_dp, _ = timeit(ours, n, rep)
        rows.append({"name": f"numpy {name}", "ns": t_np})
        rows.append(
            {"name": f"dpfast {name} (ChaCha20)", "ns": t_dp, "ratio": ratio(t_dp, t_np)}
        )

    k = 100_000
    t_np, _ = timeit(lambda: [pcg.laplace(0.0, 1.0) for _ in range(k)], k, rep)
    t_dp, _ = timeit(lambda: [dr.laplace(0.0, 1.0) for _ in range(k)], k, rep)
    rows.append({"name": "numpy scalar laplace(0.0, 1.0)", "ns": t_np})
    rows.append(
        {
            "name": "dpfast scalar laplace(0.0, 1.0), default rng",
            "ns": t_dp,
            "ratio": ratio(t_dp, t_np),
        }
    )
    report(
        "dpfast.random: ns per sample",
        rows,
        args,
        {"best_simd": _core._simd_available()[-1]},
    )


if __name__ == "__main__":
    main()
