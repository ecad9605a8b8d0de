"""Grouped count + sum with contribution bounding and private partition selection.

    python bench/bench_grouped.py [--json out.json] [--repeats 3] [-n 10000000]
        [--partitions 100000] [--pdp-n 1000000] [--pdp-python /tmp/venv-pdp/bin/python]

The job (the issue's goal): ``n`` records, ``n / 5`` privacy units with 5 records each
spread over 2 random partitions of ``--partitions``; values uniform on [0, 10];
bounds L0 = 2 partitions per unit, Linf = 3 records per partition, values clamped to
[0, 10]; Laplace noise, epsilon = 3, delta = 1e-5, partition keys not public (private
selection: dpfast's optimal rule, PipelineDP's default TRUNCATED_GEOMETRIC, the same
rule of Desfontaines et al. 2022).

PipelineDP's LocalBackend is timed when a python with ``pipeline_dp`` is found
(``--pdp-python``; it is never a dependency of dpfast), on the same data written to a
temporary .npz, in a subprocess.  Pure-Python PipelineDP takes minutes at 10^7 records, so
by default it runs ``--pdp-n`` records with the partitions scaled to keep 100 records per
partition, and dpfast is timed on that same job too (the ratio is from that pair).
Accuracy: mean absolute error of the released counts and sums against the exact
(unbounded) values, over the partitions each library released, and how many it released.
Timings are medians of ``--repeats`` runs on a shared machine: other processes add noise.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import dpfast.grouped as G
from _common import RATIO_NOTE, header, parser, ratio

EPS, DELTA, L0, LINF, LO, HI = 3.0, 1e-5, 2, 3, 0.0, 10.0


def make_data(n, partitions, seed=0):
    rng = np.random.default_rng(seed)
    n_units = n // 5
    units = np.repeat(np.arange(n_units, dtype=np.int64), 5)
    two = rng.integers(0, partitions, size=(n_units, 2))
    keys = two[units, rng.integers(0, 2, size=units.size)]
    values = rng.random(units.size) * 10.0
    perm = rng.permutation(units.size)  # records arrive in no particular order
    return units[perm], keys[perm], values[perm]


def truth(keys, values, partitions):
    return (
        np.bincount(keys, minlength=partitions),
        np.bincount(keys, weights=values, minlength=partitions),
    )


def run_dpfast(units, keys, values):
    return G.grouped_release(
        units=units,
        keys=keys,
        values=values,
        statistics=("count", "sum"),
        epsilon=EPS,
        delta=DELTA,
        max_partitions=L0,
        max_contributions=LINF,
        lower=LO,
        upper=HI,
    )


def errors(keys_out, counts, sums, true_c, true_s):
    k = np.asarray(keys_out, dtype=np.int64)
    return {
        "released": int(k.size),
        "mae_count": float(np.mean(np.abs(np.asarray(counts) - true_c[k])))
        if k.size
        else None,
        "mae_sum": float(np.mean(np.abs(np.asarray(sums) - true_s[k]))) if k.size else None,
    }


PDP_SCRIPT = r"""
import json, sys, time
import numpy as np
import pipeline_dp
d = np.load(sys.argv[1])
rows = list(zip(d["units"].tolist(), d["keys"].tolist(), d["values"].tolist()))
EPS, DELTA, L0, LINF, LO, HI = (float(x) for x in sys.argv[2:8])
out = []
for _ in range(int(sys.argv[8])):
    t0 = time.perf_counter()
    acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPS, total_delta=DELTA)
    engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM],
        max_partitions_contributed=int(L0), max_contributions_per_partition=int(LINF),
        min_value=LO, max_value=HI)
    ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                     partition_extractor=lambda r: r[1],
                                     value_extractor=lambda r: r[2])
    res = engine.aggregate(rows, params, ext)
    acc.compute_budgets()
    res = list(res)
    out.append(time.perf_counter() - t0)
keys = [k for k, _ in res]
json.dump({"times": out, "keys": keys, "count": [m.count for _, m in res],
           "sum": [m.sum for _, m in res]}, sys.stdout)
"""


def run_pipeline_dp(python, units, keys, values, repeats):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, units=units, keys=keys, values=values)
        args = [python, "-c", PDP_SCRIPT, path] + [
            str(x) for x in (EPS, DELTA, L0, LINF, LO, HI, repeats)
        ]
        res = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def time_dpfast(units, keys, values, repeats):
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = run_dpfast(units, keys, values)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


def main():
    p = parser(__doc__.splitlines()[0])
    p.set_defaults(n=10_000_000, repeats=3)
    p.add_argument("--partitions", type=int, default=100_000)
    p.add_argument(
        "--pdp-n",
        type=int,
        default=1_000_000,
        help="records for the PipelineDP comparison (0: same as -n)",
    )
    p.add_argument("--pdp-python", default="/tmp/venv-pdp/bin/python")
    args = p.parse_args()
    info = header(
        "grouped count+sum, L0=2, Linf=3, [0, 10], eps=3, delta=1e-5, private "
        "selection; ratio against PipelineDP",
        args.repeats,
    )
    results = {"machine": info, "ratio": RATIO_NOTE, "rows": []}

    def row(name, n, parts, secs, err, note=""):
        r = {
            "name": name,
            "records": n,
            "partitions": parts,
            "seconds": secs,
            "ns_per_record": secs / n * 1e9,
            **err,
            "note": note,
        }
        results["rows"].append(r)
        mc = f"{err['mae_count']:.3f}" if err["mae_count"] is not None else "-"
        ms = f"{err['mae_sum']:.2f}" if err["mae_sum"] is not None else "-"
        print(
            f"{name:<28}{n:>10}{parts:>8}{secs:>10.3f} s{r['ns_per_record']:>9.1f} ns/rec"
            f"  released {err['released']:>6}  MAE count {mc:>7}  MAE sum {ms:>8}  {note}"
        )

    units, keys, values = make_data(args.n, args.partitions)
    tc, ts = truth(keys, values, args.partitions)
    secs, out = time_dpfast(units, keys, values, args.repeats)
    row(
        "dpfast",
        args.n,
        args.partitions,
        secs,
        errors(out["key"], out["count"], out["sum"], tc, ts),
    )

    pdp_n = args.pdp_n or args.n
    have_pdp = os.path.exists(args.pdp_python)
    if pdp_n != args.n:
        parts = max(1, args.partitions * pdp_n // args.n)
        units, keys, values = make_data(pdp_n, parts, seed=1)
        tc, ts = truth(keys, values, parts)
        secs, out = time_dpfast(units, keys, values, args.repeats)
        row(
            "dpfast",
            pdp_n,
            parts,
            secs,
            errors(out["key"], out["count"], out["sum"], tc, ts),
        )
    else:
        parts = args.partitions
    if have_pdp:
        pdp = run_pipeline_dp(
            args.pdp_python, units, keys, values, max(1, args.repeats // 3)
        )
        psecs = float(np.median(pdp["times"]))
        row(
            "PipelineDP LocalBackend",
            pdp_n,
            parts,
            psecs,
            errors(pdp["keys"], pdp["count"], pdp["sum"], tc, ts),
        )
        r = ratio(secs, psecs)
        results["ratio_vs_pipeline_dp"] = r
        print(f"# ratio (dpfast / PipelineDP) on {pdp_n} records: {r:.3f} (goal <= 0.1)")
    else:
        print(f"# PipelineDP not found at {args.pdp_python}: no comparison")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
