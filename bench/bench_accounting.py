"""Benchmark of dpfast.accounting: each accountant at k = 1e3 and 1e6, and the
per-call cost of PrivacyBudget.spend.

Plain script (no pytest): prints a table and, with --json PATH, writes the results.
Each figure is the median over --repeats runs (>= 5) of the time per call, where one
run repeats the call enough times to last about --min-time seconds.  If Google's
dp_accounting is importable, its RDP accountant is timed on the same Gaussian
composition for comparison (it is never a dependency of dpfast).

    python bench/bench_accounting.py --json bench/results/accounting.json
"""

import argparse
import json
import math
import platform
import statistics
import sys
import time
from fractions import Fraction

import numpy as np

from dpfast import accounting as A


def _time_per_call(fn, repeats, min_time):
    """Median seconds per call of fn() over ``repeats`` runs of an auto-sized loop."""
    n = 1
    while True:  # autorange: grow the loop until one run takes min_time
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or n >= 1 << 20:
            break
        n *= 2 if dt == 0 else max(2, min(10, int(min_time / dt) + 1))
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n)
    return statistics.median(runs), n


def _spend_cost(mode, repeats, calls=20_000):
    """Median seconds per PrivacyBudget.spend over ``repeats`` fresh budgets."""
    runs = []
    for _ in range(repeats):
        if mode == "basic":
            b = A.PrivacyBudget(1e9, 0.5)
            args = (1e-4, 1e-12)
        elif mode == "advanced":
            # Budget small enough that the advanced bound (not the basic sum) decides.
            b = A.PrivacyBudget(50.0, 1e-5, "advanced", delta_prime=1e-6)
            args = (0.01, 0.0)
        elif mode == "zcdp":
            b = A.PrivacyBudget(rho=1e9, composition="zcdp")
            args = (1e-3, 0.0)
        else:  # exact Fraction charges
            b = A.PrivacyBudget(1e9)
            args = (Fraction(1, 10_000), 0.0)
        t0 = time.perf_counter()
        for _ in range(calls):
            b.spend(*args)
        runs.append((time.perf_counter() - t0) / calls)
    return statistics.median(runs), calls


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    ap.add_argument("--repeats", type=int, default=7, help="runs per figure (>= 5; median reported)")
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds per run (auto-sized loop)")
    ap.add_argument("--ks", type=int, nargs="+", default=[1_000, 1_000_000], help="composition sizes")
    args = ap.parse_args(argv)
    if args.repeats < 5:
        ap.error("--repeats must be >= 5")

    eps, delta, dp = 0.01, 1e-9, 1e-6
    rows = []

    def add(name, k, fn, value=None):
        sec, loops = _time_per_call(fn, args.repeats, args.min_time)
        if value is None:
            value = fn()
        rows.append(dict(task=name, k=k, us_per_call=sec * 1e6, loops=loops, value=_jsonable(value)))

    for k in args.ks:
        eps_arr = np.full(k, eps)
        del_arr = np.full(k, delta)
        rdp_one = A.rdp_gaussian(50.0)
        add("basic_composition (arrays)", k, lambda: A.basic_composition(eps_arr, del_arr))
        add("advanced_composition", k, lambda: A.advanced_composition(eps, delta, k, dp))
        add("heterogeneous_advanced_composition", k, lambda: A.heterogeneous_advanced_composition(eps_arr, del_arr, dp))
        add("advanced_composition_per_step (exact)", k, lambda: A.advanced_composition_per_step(1.0, dp, k))
        add("optimal_composition (KOV)", k, lambda: A.optimal_composition(eps, delta, k, dp))
        add("optimal_composition_delta (KOV)", k, lambda: A.optimal_composition_delta(eps, delta, k, 1.0))
        add("zcdp_to_dp tight (rho = k eps^2/2)", k, lambda: A.zcdp_to_dp(k * eps * eps / 2, dp))
        add("zcdp_to_dp simple", k, lambda: A.zcdp_to_dp(k * eps * eps / 2, dp, method="simple"))
        add("zcdp_budget tight", k, lambda: A.zcdp_budget(math.sqrt(k) * eps, dp))
        add("rdp_to_dp (k Gaussians, 29 orders)", k, lambda: A.rdp_to_dp(A.DEFAULT_RDP_ORDERS, rdp_one * k, dp))
        try:  # optional comparison, never a dependency
            import dp_accounting
            from dp_accounting.rdp import rdp_privacy_accountant as rdp

            def google():
                acc = rdp.RdpAccountant(list(A.DEFAULT_RDP_ORDERS))
                acc.compose(dp_accounting.GaussianDpEvent(50.0), k)
                return acc.get_epsilon(dp)

            add("dp_accounting RdpAccountant (same task)", k, google)
        except ImportError:
            pass

    for mode in ("basic", "advanced", "zcdp", "basic, Fraction charges"):
        sec, calls = _spend_cost(mode, args.repeats)
        rows.append(dict(task=f"PrivacyBudget.spend [{mode}]", k=None, us_per_call=sec * 1e6, loops=calls, value=None))

    meta = dict(
        cpu=_cpu_model(),
        python=sys.version.split()[0],
        numpy=np.__version__,
        repeats=args.repeats,
        statistic="median seconds per call",
        epsilon=eps,
        delta=delta,
        delta_prime=dp,
    )
    print(f"# {meta['cpu']} | Python {meta['python']} | numpy {meta['numpy']} | median of {args.repeats}")
    print(f"{'task':45s} {'k':>9s} {'us/call':>12s}  value")
    for r in rows:
        k = "" if r["k"] is None else f"{r['k']:.0e}"
        print(f"{r['task']:45s} {k:>9s} {r['us_per_call']:12.2f}  {_short(r['value'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, results=rows), f, indent=2)
    return 0


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.floating, float)):
        return float(v)
    if isinstance(v, (np.integer, int)):
        return int(v)
    return None


def _short(v):
    if v is None:
        return ""
    if isinstance(v, list):
        return "(" + ", ".join(f"{x:.6g}" for x in v) + ")"
    return f"{v:.6g}"


if __name__ == "__main__":
    sys.exit(main())
