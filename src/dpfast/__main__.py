"""``python -m dpfast``: a short demo of real DP releases and of dpfast's speed (the
default, or ``demo``), and ``ledger`` to operate durable privacy budgets."""
import argparse
import sys
import time

import numpy as np

import dpfast
import dpfast.mechanisms as M
import dpfast.random as dr
from dpfast import releases, sparse
from dpfast.accounting import PrivacyBudget


def _ns_per_item(fn, n, repeats=5):
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        runs.append(time.perf_counter_ns() - t0)
    return sorted(runs)[len(runs) // 2] / n


def releases_demo():
    """A small synthetic survey released under one privacy budget."""
    data = np.random.default_rng(2026).integers(18, 90, size=10_000)   # public demo data
    budget = PrivacyBudget(epsilon=1.0, delta=1e-6)
    print("\nReleases from a synthetic table of 10,000 ages, budget (eps=1.0, delta=1e-6):")
    count = M.laplace_mechanism(int(data.size), epsilon=0.2, budget=budget)
    print(f"  count, exact discrete Laplace (eps=0.2):         {count:>10,d}   "
          f"(true {data.size:,})")
    clipped = np.clip(data, 0, 100).astype(float)
    total = M.laplace_mechanism(float(clipped.sum()), epsilon=0.3, sensitivity=100.0,
                                budget=budget)
    print(f"  sum of ages in [0, 100], grid Laplace (eps=0.3):   {total:>12,.2f}   "
          f"(true {clipped.sum():,.0f})")
    bins = np.histogram(data, bins=[18, 30, 45, 60, 75, 90])[0]
    noisy = M.gaussian_mechanism(bins, epsilon=0.5, delta=1e-6, l2_sensitivity=1.0,
                                 budget=budget)
    print(f"  age histogram, discrete Gaussian (eps=0.5):   {noisy}")
    print(f"  {'':<44}   (true {bins})")
    print(f"  budget left: eps={float(budget.remaining.epsilon):.3f}, "
          f"delta={float(budget.remaining.delta):.1e}")
    try:
        M.laplace_mechanism(1, epsilon=0.5, budget=budget)
    except dpfast.BudgetExceededError as e:
        print(f"  one more release is refused before any noise is drawn: {e}")


def streams_and_selection():
    """Sparse vector over a stream of queries, and a private choice among candidates."""
    rng = np.random.default_rng(7)                                    # public demo data
    counts = rng.poisson(40, size=1000).astype(float)
    counts[[137, 512, 903]] += 200.0                                  # three heavy hitters
    budget = PrivacyBudget(epsilon=3.0)
    svt = sparse.Sparse(threshold=150.0, cutoff=3, epsilon=2.0, budget=budget)
    tops = svt.feed(counts)
    print("\nSparse vector (secure, eps=2.0): which of 1,000 counts exceed 150?")
    print(f"  positives at {[int(i) for i in np.flatnonzero(tops)]} after {svt.consumed} queries; "
          f"halted={svt.halted} (true: [137, 512, 903])")
    scores = np.array([12.0, 30.0, 31.0, 5.0])
    pick = M.exponential_mechanism(scores, epsilon=0.5, budget=budget)
    print(f"  exponential mechanism (exact, eps=0.5) picks candidate {pick} of scores {scores}")
    ages = rng.integers(18, 90, size=5000).astype(float)
    median = releases.quantile(ages, 0.5, lower=0.0, upper=120.0, epsilon=0.5, budget=budget)
    print(f"  median age (eps=0.5): {median:.1f} (true {np.median(ages):.1f})")


def throughput():
    n = 1_000_000
    g = dr.default_rng()
    pcg = np.random.Generator(np.random.PCG64())
    x = np.zeros(n)
    out = np.empty(n)
    print(f"\nThroughput, {n:,} values, median of 5 (numpy's samplers are not DP-safe):")
    print(f"  ChaCha20 keystream [{g.simd}]: "
          f"{_ns_per_item(lambda: g.random_raw(n), n):6.2f} ns per 64-bit word")
    t_np = _ns_per_item(lambda: pcg.laplace(0, 1, n), n)
    for name, fn in [
        ("secure Laplace mechanism (float grid)", lambda: M.laplace_mechanism(x, epsilon=1.0)),
        ("simulation Laplace noise", lambda: dr.laplace(1.0, out=out, rng=g)),
    ]:
        t = _ns_per_item(fn, n)
        print(f"  {name:<38} {t:7.2f} ns   ({t / t_np:4.2f} x numpy laplace, {t_np:.2f} ns)")


def demo():
    print(f"dpfast {dpfast.__version__}: differential privacy, fast and floating-point safe")
    print(f"Default generator: {dr.default_rng()!r}, keyed from the operating system")
    releases_demo()
    streams_and_selection()
    throughput()
    return 0


def parser():
    p = argparse.ArgumentParser(prog="python -m dpfast",
                                description="dpfast: fast, floating-point-safe differential privacy. "
                                "Without a command, runs the demo.")
    p.add_argument("--version", action="version", version=f"dpfast {dpfast.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    d = sub.add_parser("demo", help="releases under a budget, sparse vector, throughput (the default)")
    d.set_defaults(func=lambda args: demo())
    from dpfast.ledger import cli
    cli.add_parser(sub)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    if args.command is None:
        return demo()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
