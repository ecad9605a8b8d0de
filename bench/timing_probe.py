"""Timing probe: does the running time of a sampler or mechanism depend on a secret?

    python bench/timing_probe.py [--json out.json] [-n 200000] [--repeats 1]

dudect-style (Reparaz, Balasch & Verbauwhede, "Dude, is my code constant time?", DATE
2017): time many calls, split them into two classes by a secret, and compare the classes'
mean times with Welch's t-test.  |t| > 4.5 is dudect's threshold for "a leak is
detected" (with this many samples, a difference of a few ns at the Python call level);
|t| below it means no leak was *found* at this resolution, not a proof of constant time.
Measurements of the two classes are interleaved in random order, and the slowest 10% of
calls (interrupts, other processes: the machine is shared) are cropped, as dudect does.

Secrets probed:
* the samplers' output (the noise itself is secret): class = |value| below or above the
  median.  The constant-time samplers should show nothing; the exact samplers are not
  constant time (documented) and serve as the positive control that the probe works;
* the mechanisms' private input (fix-vs-random): class A releases [0.0], class B a value
  drawn at random; and, on the same calls, the noise magnitude |output - input|.
Every call takes and returns a 1-element array, so that creating Python numbers (whose
cost depends on their value) is not measured.

The samplers are timed per draw inside C with the cycle counter (dpf_ticks: rdtsc on x86;
"ns" column in ticks for them); the mechanisms per Python call on one thread (what a
caller, or a remote observer of a service, can time).
"""

import math
import random
import time

import numpy as np

import dpfast.mechanisms as M
import dpfast.random as dr
from _common import parser, report
from dpfast import _core


def welch_t(a, b):
    """Welch's t statistic of two samples (after cropping both at the pooled 90th
    percentile)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    cut = np.percentile(np.concatenate([a, b]), 90)
    a, b = a[a <= cut], b[b <= cut]
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    return float((a.mean() - b.mean()) / math.sqrt(va + vb)), a.size, b.size


def time_calls(fn, args, n):
    """Time fn(arg) for each arg in args (interleaved as given); returns ns and results."""
    t, out = np.empty(n), [None] * n
    clock = time.perf_counter_ns
    for i in range(n):
        x = args[i]
        t0 = clock()
        y = fn(x)
        t[i] = clock() - t0
        out[i] = y
    return t, out


def by_output(name, sampler, n, rows, g):
    """Class = |value| at or below its median, or above; each draw timed in C (ticks of
    the cycle counter, no Python object in the timed window)."""
    ticks, vals = _core._probe_draws(sampler, n, g)
    t = ticks.astype(float)
    mag = np.abs(vals)
    med = np.median(mag)
    tval, na, nb = welch_t(t[mag <= med], t[mag > med])
    rows.append(
        {
            "name": f"{name}: |noise| low vs high",
            "ns": float(np.median(t)),
            "t": tval,
            "n": [na, nb],
            "note": verdict(tval),
            "unit": "ticks",
        }
    )


def fix_vs_random(name, fn, n, rows, seed=1):
    """Class A: input 0.0; class B: a random input in [-1e6, 1e6]; interleaved at random.
    Also, on the same calls, the noise magnitude |output - input| (low vs high)."""
    rnd = random.Random(seed)
    cls = np.array([rnd.random() < 0.5 for _ in range(n)])
    xs = [np.array([0.0 if c else rnd.uniform(-1e6, 1e6)]) for c in cls]
    t, out = time_calls(fn, xs, n)
    tval, na, nb = welch_t(t[cls], t[~cls])
    rows.append(
        {
            "name": f"{name}: input fixed vs random",
            "ns": float(np.median(t)),
            "t": tval,
            "n": [na, nb],
            "note": verdict(tval),
        }
    )
    noise = np.abs(np.concatenate(out) - np.concatenate(xs))
    med = np.median(noise)
    tval, na, nb = welch_t(t[noise <= med], t[noise > med])
    rows.append(
        {
            "name": f"{name}: |noise| low vs high",
            "ns": float(np.median(t)),
            "t": tval,
            "n": [na, nb],
            "note": verdict(tval),
        }
    )


def verdict(t):
    return "LEAK detected (|t| > 4.5)" if abs(t) > 4.5 else "no leak found (|t| <= 4.5)"


def main():
    p = parser(__doc__)
    args = p.parse_args()
    n = args.n if args.n != 1_000_000 else 200_000
    g = dr.ChaCha20()
    rows = []
    # constant-time samplers (the claim under test), timed per draw in C
    by_output("DiscreteLaplaceCT(3)", _core.DiscreteLaplaceCT(3, 1), n, rows, g)
    by_output("DiscreteLaplaceCT(2^40)", _core.DiscreteLaplaceCT(2**40, 1), n, rows, g)
    by_output(
        "DiscreteGaussianCT(sigma^2 = 14)", _core.DiscreteGaussianCT(14, 1), n, rows, g
    )
    # exact samplers: not constant time (documented); the positive control
    by_output("DiscreteLaplaceExact(3)", _core.DiscreteLaplaceExact(3, 1), n, rows, g)
    by_output(
        "DiscreteLaplaceExact(2^40)", _core.DiscreteLaplaceExact(2**40, 1), n, rows, g
    )
    by_output(
        "DiscreteGaussianExact(sigma^2 = 14)",
        _core.DiscreteGaussianExact(14, 1),
        n,
        rows,
        g,
    )
    by_output(
        "DiscreteGaussianExact(sigma^2 = 2^48)",
        _core.DiscreteGaussianExact(2**48, 1),
        n,
        rows,
        g,
    )
    # the default (secure) mechanisms, timed per Python call
    # the default (secure) mechanisms
    fix_vs_random(
        "laplace_mechanism(x, epsilon=1) secure",
        lambda x: M.laplace_mechanism(x, epsilon=1.0, rng=g),
        n,
        rows,
    )
    fix_vs_random(
        "gaussian_mechanism(x, 1, 1e-5) secure",
        lambda x: M.gaussian_mechanism(x, epsilon=1.0, delta=1e-5, rng=g),
        n,
        rows,
    )
    info_rows = [
        {
            "name": r["name"],
            "ns": r["ns"],
            "note": f"t = {r['t']:+.2f}  n = {r['n'][0]}/{r['n'][1]}  {r['note']}",
        }
        for r in rows
    ]
    report(
        "Timing probe (dudect-style Welch t-test); ns = median per call",
        info_rows,
        args,
        {"probe_rows": rows},
        reference="none (no ratios)",
    )


if __name__ == "__main__":
    main()
