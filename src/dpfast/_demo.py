"""The story ``python -m dpfast`` tells, and the quick table of ``python -m dpfast bench``.

The demo spends ONE budget, printed first, across every release it shows; each line
says the epsilon and delta it charges, and the last line shows the budget refusing a
release before any noise is drawn.  It ends with the speed table of :func:`bench`, in
which every dpfast figure is timed in the same run as its numpy reference.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import IO, Any

import numpy as np

import dpfast
import dpfast.mechanisms as M
import dpfast.random as dr
from dpfast import sparse, stats
from dpfast.accounting import PrivacyBudget

#: one budget for the whole demo: the epsilons below are dyadic, so they add up to it exactly
EPSILON, DELTA = 4.0, 1e-6


def _ns_per_item(fn: Callable[[], object], n: int, repeats: int) -> float:
    """Median ns per item over ``repeats`` calls of ``fn`` (n items each), after a warm-up."""
    fn()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        runs.append(time.perf_counter_ns() - t0)
    return statistics.median(runs) / n


def bench_rows(n: int = 1_000_000, repeats: int = 5) -> list[dict[str, Any]]:
    """Side-by-side rows: dpfast and its numpy reference timed in the same run.

    ``ratio`` is dpfast time / reference time (below 1: dpfast is faster).  numpy's
    samplers are neither cryptographically seeded nor floating-point safe.
    """
    g = dr.default_rng()
    pcg = np.random.Generator(np.random.PCG64())
    x = np.zeros(n)
    out = np.empty(n)
    t_raw = _ns_per_item(lambda: pcg.bit_generator.random_raw(n), n, repeats)
    t_lap = _ns_per_item(lambda: pcg.laplace(0.0, 1.0, n), n, repeats)
    cases = [
        (
            f"ChaCha20 keystream [{g.simd}]",
            lambda: g.random_raw(n),
            "numpy PCG64 random_raw",
            t_raw,
        ),
        (
            "secure Laplace mechanism",
            lambda: M.laplace_mechanism(x, epsilon=1.0),
            "numpy laplace",
            t_lap,
        ),
        (
            "simulation Laplace noise",
            lambda: dr.laplace(scale=1.0, out=out, rng=g),
            "numpy laplace",
            t_lap,
        ),
        (
            "exact discrete Laplace (scale 3)",
            lambda: dr.discrete_laplace(3, n, rng=g),
            "numpy laplace",
            t_lap,
        ),
    ]
    rows = []
    for name, fn, ref, t_ref in cases:
        t = _ns_per_item(fn, n, repeats)
        rows.append(
            {"task": name, "ns": t, "reference": ref, "ref_ns": t_ref, "ratio": t / t_ref}
        )
    return rows


def print_table(
    rows: list[dict[str, Any]],
    n: int,
    repeats: int,
    file: IO[str] | None = None,
) -> None:
    out = file or sys.stdout
    w = max(len(r["task"]) for r in rows)
    wr = max(len(r["reference"]) for r in rows)
    print(
        f"{'task':<{w}}  {'ns/item':>8}  {'reference':<{wr}}  {'ns/item':>8}  {'ratio':>6}",
        file=out,
    )
    for r in rows:
        print(
            f"{r['task']:<{w}}  {r['ns']:>8.2f}  {r['reference']:<{wr}}  {r['ref_ns']:>8.2f}"
            f"  {r['ratio']:>6.2f}",
            file=out,
        )
    print(
        f"({n:,} items per call, median of {repeats}; ratio = dpfast time / reference time, "
        f"below 1 means dpfast is faster; numpy's generators are not DP-safe)",
        file=out,
    )


def bench(n: int = 1_000_000, repeats: int = 5) -> int:
    print(f"dpfast {dpfast.__version__}, numpy {np.__version__}: ns per item")
    print_table(bench_rows(n, repeats), n, repeats)
    return 0


def _line(
    what: str, how: str, eps: float, delta: float, value: object, truth: object
) -> None:
    print(f"  {what:<24} {how:<26} {eps:>5.2f} {delta:>7.0e}  {value:<30} {truth}")


def _releases(budget: PrivacyBudget) -> None:
    """Releases from one synthetic table (public demo data), all charged to ``budget``."""
    rng = np.random.default_rng(2026)
    data = rng.integers(18, 90, size=10_000)
    print(
        f"\n  {'release':<24} {'mechanism':<26} {'eps':>5} {'delta':>7}  {'value':<30} true"
    )
    count = M.laplace_mechanism(int(data.size), epsilon=0.25, budget=budget)
    _line(
        "count of 10,000 ages",
        "exact discrete Laplace",
        0.25,
        0.0,
        f"{count:,d}",
        f"{data.size:,}",
    )
    clipped = np.clip(data, 0, 100).astype(float)
    total = M.laplace_mechanism(
        float(clipped.sum()), epsilon=0.25, sensitivity=100.0, budget=budget
    )
    _line(
        "sum of ages in [0, 100]",
        "Laplace on a float grid",
        0.25,
        0.0,
        f"{total:,.2f}",
        f"{clipped.sum():,.0f}",
    )
    bins = np.histogram(data, bins=[18, 30, 45, 60, 75, 90])[0]
    noisy = M.gaussian_mechanism(
        bins, epsilon=0.5, delta=DELTA, l2_sensitivity=1.0, budget=budget
    )
    _line(
        "age histogram, 5 bins",
        "discrete Gaussian",
        0.5,
        DELTA,
        " ".join(str(int(v)) for v in np.asarray(noisy)),
        " ".join(str(int(v)) for v in bins),
    )

    counts = rng.poisson(40, size=1000).astype(float)
    counts[[137, 512, 903]] += 200.0  # three heavy hitters
    svt = sparse.Sparse(threshold=150.0, cutoff=3, epsilon=2.0, budget=budget)
    tops = svt.feed(counts)
    _line(
        "counts above 150 (of 1k)",
        "sparse vector, cutoff 3",
        2.0,
        0.0,
        f"{[int(i) for i in np.flatnonzero(tops)]} after {svt.consumed}",
        "[137, 512, 903]",
    )
    scores = np.array([12.0, 30.0, 31.0, 5.0])
    pick = M.exponential_mechanism(scores, epsilon=0.5, budget=budget)
    _line(
        "best of 4 candidates",
        "exponential mechanism",
        0.5,
        0.0,
        f"candidate {pick}",
        f"scores {scores.tolist()}",
    )
    ages = rng.integers(18, 90, size=5000).astype(float)
    median = stats.quantile(ages, 0.5, lower=0.0, upper=120.0, epsilon=0.5, budget=budget)
    _line(
        "median of 5,000 ages",
        "exponential quantile",
        0.5,
        0.0,
        f"{median:.1f}",
        f"{np.median(ages):.1f}",
    )


def demo() -> int:
    print(
        f"dpfast {dpfast.__version__}: differential privacy, fast and floating-point safe"
    )
    print(f"Default generator: {dr.default_rng()!r}, keyed from the operating system")
    budget = PrivacyBudget(epsilon=EPSILON, delta=DELTA)
    print(
        f"\nOne privacy budget for everything below: eps = {EPSILON}, delta = {DELTA:.0e}"
    )
    _releases(budget)
    left = budget.remaining
    print(
        f"\n  budget left: eps = {float(left.epsilon or 0.0):.2f}, delta = {float(left.delta or 0.0):.0e}"
    )
    try:
        M.laplace_mechanism(1, epsilon=0.5, budget=budget)
    except dpfast.BudgetExceededError as e:
        print(
            f"  one more release (eps = 0.50) is refused before any noise is drawn:\n    {e}"
        )
    n, repeats = 1_000_000, 5
    print("\nSpeed, dpfast against numpy in this run:")
    print_table(bench_rows(n, repeats), n, repeats)
    return 0
