"""Benchmark of dpfast.accounting: each accountant at k = 1e3 and 1e6, the per-call cost
of PrivacyBudget.spend, and the PLD / exact-Gaussian goals of issue 16 against Google's
dp_accounting PLDAccountant in the same run.

Goals (issue 16): Gaussian sigma for k = 100 releases at (1, 1e-5) within 0.5% of the
exact value; PLD composition of k = 1000 heterogeneous Laplace/Gaussian mechanisms and
conversion to epsilon at delta = 1e-6 at least 10x faster than dp_accounting at equal or
better tightness.  For the comparison run it in a venv that has both packages:

    /tmp/dpacc/bin/pip install dp-accounting .
    /tmp/dpacc/bin/python bench/bench_accounting.py --pld-only

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

from _common import RATIO_NOTE, header, ratio
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
    ap.add_argument(
        "--repeats", type=int, default=7, help="runs per figure (>= 5; median reported)"
    )
    ap.add_argument(
        "--min-time", type=float, default=0.05, help="seconds per run (auto-sized loop)"
    )
    ap.add_argument(
        "--ks", type=int, nargs="+", default=[1_000, 1_000_000], help="composition sizes"
    )
    ap.add_argument(
        "--pld-only", action="store_true", help="only the issue-16 PLD/GDP goals"
    )
    args = ap.parse_args(argv)
    if args.repeats < 5:
        ap.error("--repeats must be >= 5")
    pld_rows = _pld_goals(args.repeats)
    if args.pld_only:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(
                    dict(
                        meta=dict(cpu=_cpu_model(), python=sys.version.split()[0]),
                        pld=pld_rows,
                    ),
                    f,
                    indent=2,
                )
        return 0

    eps, delta, dp = 0.01, 1e-9, 1e-6
    rows = []

    def add(name, k, fn, value=None):
        sec, loops = _time_per_call(fn, args.repeats, args.min_time)
        if value is None:
            value = fn()
        rows.append(
            dict(task=name, k=k, us_per_call=sec * 1e6, loops=loops, value=_jsonable(value))
        )

    for k in args.ks:
        eps_arr = np.full(k, eps)
        del_arr = np.full(k, delta)
        rdp_one = A.rdp_gaussian(50.0)
        add("basic_composition (arrays)", k, lambda: A.basic_composition(eps_arr, del_arr))
        add("advanced_composition", k, lambda: A.advanced_composition(eps, delta, k, dp))
        add(
            "heterogeneous_advanced_composition",
            k,
            lambda: A.heterogeneous_advanced_composition(eps_arr, del_arr, dp),
        )
        add(
            "advanced_composition_per_step (exact)",
            k,
            lambda: A.advanced_composition_per_step(1.0, dp, k),
        )
        add(
            "optimal_composition (KOV)", k, lambda: A.optimal_composition(eps, delta, k, dp)
        )
        add(
            "optimal_composition_delta (KOV)",
            k,
            lambda: A.optimal_composition_delta(eps, delta, k, 1.0),
        )
        add(
            "zcdp_to_dp tight (rho = k eps^2/2)",
            k,
            lambda: A.zcdp_to_dp(k * eps * eps / 2, dp),
        )
        add(
            "zcdp_to_dp simple",
            k,
            lambda: A.zcdp_to_dp(k * eps * eps / 2, dp, method="simple"),
        )
        add("zcdp_budget tight", k, lambda: A.zcdp_budget(math.sqrt(k) * eps, dp))
        add(
            "rdp_to_dp (k Gaussians, 29 orders)",
            k,
            lambda: A.rdp_to_dp(A.DEFAULT_RDP_ORDERS, rdp_one * k, dp),
        )
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
        rows.append(
            dict(
                task=f"PrivacyBudget.spend [{mode}]",
                k=None,
                us_per_call=sec * 1e6,
                loops=calls,
                value=None,
            )
        )

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
    # the one task with a reference in the same run: dpfast's RDP conversion vs dp_accounting
    for r in rows:
        ref = next(
            (g for g in rows if g["k"] == r["k"] and g["task"].startswith("dp_accounting")),
            None,
        )
        if ref is not None and r["task"].startswith("rdp_to_dp"):
            r["ratio"] = ratio(r["us_per_call"], ref["us_per_call"])
    meta["ratio"] = RATIO_NOTE + "; reference: dp_accounting RdpAccountant"
    header("dpfast.accounting: us per call; ratio against dp_accounting", args.repeats)
    print(f"{'task':45s} {'k':>9s} {'us/call':>12s} {'ratio':>7s}  value")
    for r in rows:
        k = "" if r["k"] is None else f"{r['k']:.0e}"
        cell = f"{r['ratio']:.2f}" if "ratio" in r else ""
        print(
            f"{r['task']:45s} {k:>9s} {r['us_per_call']:12.2f} {cell:>7s}  {_short(r['value'])}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, results=rows, pld=pld_rows), f, indent=2)
    return 0


# ---------------------------------------------------------------------- issue 16 goals

# k = 1000 heterogeneous mechanisms: 500 Laplace (10 scales x 50) and 500 Gaussian
# (10 sigmas x 50), sensitivity 1, described the same way to both libraries.
HETERO = [("laplace", 20.0 + 5.0 * i, 50) for i in range(10)] + [
    ("gaussian", 20.0 + 5.0 * i, 50) for i in range(10)
]
# The same budget with 1000 distinct noise scales (every mechanism its own parameters).
HETERO_DISTINCT = [("laplace", 20.0 + 0.09 * i, 1) for i in range(500)] + [
    ("gaussian", 20.0 + 0.09 * i, 1) for i in range(500)
]


def _median_time(fn, repeats):
    times, value = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), value


def _ours(grid_step=None, spec=HETERO):
    acc = A.Accountant("pld", grid_step=grid_step)
    for kind, p, c in spec:
        if kind == "laplace":
            acc.compose_laplace(scale=p, count=c)
        else:
            acc.compose_gaussian(sigma=p, count=c)
    return acc.epsilon(1e-6)


def _google(spec=HETERO):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    events = [
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.LaplaceDpEvent(p)
            if kind == "laplace"
            else dp_accounting.GaussianDpEvent(p),
            c,
        )
        for kind, p, c in spec
    ]
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.ComposedDpEvent(events))
    return acc.get_epsilon(1e-6)


def _pld_goals(repeats):
    rows = []
    # Goal 1: sigma for k = 100 at (1, 1e-5); exact = GDP (Dong, Roth & Su 2022, Cor. 3.3)
    sigma = A.calibrate_gaussian(1.0, 1e-5, count=100)
    exact = math.sqrt(100) / A.gdp_mu(1.0, 1e-5)
    zcdp_sigma = math.sqrt(100 / (2 * A.zcdp_budget(1.0, 1e-5)))
    rows.append(
        dict(
            task="calibrate_gaussian k=100 (1, 1e-5)",
            sigma=sigma,
            exact=exact,
            excess=sigma / exact - 1,
            zcdp_sigma=zcdp_sigma,
            zcdp_excess=zcdp_sigma / exact - 1,
        )
    )
    # Goal 2: heterogeneous PLD composition + epsilon(1e-6)
    t_def, e_def = _median_time(_ours, repeats)
    t_fine, e_fine = _median_time(lambda: _ours(2.0**-13), repeats)
    row = dict(
        task="PLD k=1000 heterogeneous Laplace/Gaussian, eps(1e-6)",
        dpfast_seconds=t_def,
        dpfast_epsilon=e_def,
        dpfast_fine_seconds=t_fine,
        dpfast_fine_epsilon=e_fine,
    )
    try:
        t_g, e_g = _median_time(_google, max(3, repeats // 3))
        row.update(
            dp_accounting_seconds=t_g,
            dp_accounting_epsilon=e_g,
            ratio_default=ratio(t_def, t_g),
            ratio_fine=ratio(t_fine, t_g),
        )
    except ImportError:
        row.update(dp_accounting_seconds=None)
    rows.append(row)
    # the same with 1000 distinct mechanisms (one timing each: dp_accounting takes long)
    t_d, e_d = _median_time(lambda: _ours(None, HETERO_DISTINCT), 1)
    t_df, e_df = _median_time(lambda: _ours(2.0**-13, HETERO_DISTINCT), 1)
    row = dict(
        task="PLD k=1000 distinct Laplace/Gaussian, eps(1e-6)",
        dpfast_seconds=t_d,
        dpfast_epsilon=e_d,
        dpfast_fine_seconds=t_df,
        dpfast_fine_epsilon=e_df,
    )
    try:
        t_g, e_g = _median_time(lambda: _google(HETERO_DISTINCT), 1)
        row.update(
            dp_accounting_seconds=t_g,
            dp_accounting_epsilon=e_g,
            ratio_default=ratio(t_d, t_g),
            ratio_fine=ratio(t_df, t_g),
        )
    except ImportError:
        row.update(dp_accounting_seconds=None)
    rows.append(row)
    header("dpfast.accounting: issue 16 goals; ratio against dp_accounting", repeats)
    r = rows[0]
    print(
        f"calibrate_gaussian k=100 (1,1e-5): sigma {r['sigma']:.9g}, exact {r['exact']:.9g}, "
        f"excess {r['excess']:.2e} (zCDP route: {r['zcdp_sigma']:.6g}, +{100 * r['zcdp_excess']:.2f}%)"
    )
    for r in rows[1:]:
        print(
            f"{r['task']}:\n  dpfast {r['dpfast_seconds']:.3f}s eps {r['dpfast_epsilon']:.9g} | "
            f"dpfast grid 2^-13 {r['dpfast_fine_seconds']:.3f}s eps {r['dpfast_fine_epsilon']:.9g}"
        )
        if r.get("dp_accounting_seconds"):
            print(
                f"  dp_accounting {r['dp_accounting_seconds']:.3f}s eps {r['dp_accounting_epsilon']:.9g} | "
                f"ratio {r['ratio_default']:.3f} (default grid), {r['ratio_fine']:.3f} (grid 2^-13)"
            )
        else:
            print("  dp_accounting not importable: no comparison")
    return rows


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
