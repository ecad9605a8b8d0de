"""Shared timing and reporting for the bench/ scripts (never part of the test suite).

Every script reports a comparison the same way: a column named ``ratio`` holding
dpfast time / reference time, so below 1 means dpfast is faster (see :func:`ratio`).
"""

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np


def cpu_info():
    """Model name and SIMD flags of this machine (Linux; a short form elsewhere)."""
    info = {
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        for line in text.splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        flags = next(
            (
                ln.split(":", 1)[1].split()
                for ln in text.splitlines()
                if ln.startswith("flags")
            ),
            [],
        )
        info["simd"] = [f for f in ("sse2", "avx2", "avx512f") if f in flags]
    except OSError:
        info["cpu"] = platform.processor()
    import os

    info["cores"] = os.cpu_count()
    return info


def timeit(fn, n, repeats=7, warmup=1):
    """Median and minimum of ns per item over ``repeats`` calls of ``fn`` (n items each)."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ts) / n, min(ts) / n


def timeit_pair(fn_a, fn_b, n, repeats=7, warmup=1):
    """Medians of ns per item of two functions timed alternately (a, b, a, b, ...): a
    comparison of two configurations in one run that drifts of the machine (a neighbour
    on the host, the clock) affect alike."""
    for _ in range(warmup):
        fn_a()
        fn_b()
    ta, tb = [], []
    for _ in range(repeats):
        for fn, ts in ((fn_a, ta), (fn_b, tb)):
            t0 = time.perf_counter_ns()
            fn()
            ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ta) / n, statistics.median(tb) / n


RATIO_NOTE = "ratio = dpfast time / reference time (below 1: dpfast is faster)"


def ratio(dpfast_time, reference_time):
    """The one comparison every script prints: dpfast time / reference time."""
    return dpfast_time / reference_time


def header(title, repeats=None, out=None):
    """Print the title, the machine line and the ratio convention; return cpu_info()."""
    info = cpu_info()
    print(f"# {title}", file=out)
    tail = f"; median of {repeats}" if repeats else ""
    print(
        f"# {info.get('cpu')} ({info['machine']}, {info['cores']} cores, "
        f"SIMD {'/'.join(info.get('simd', []))}), numpy {info['numpy']}, "
        f"python {info['python']}{tail}; the machine may be shared",
        file=out,
    )
    print(f"# {RATIO_NOTE}", file=out)
    return info


def write_json(path, payload):
    if path:
        with open(path, "w") as f:
            json.dump(payload, f, indent=2)


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    p.add_argument("--repeats", type=int, default=7, help="repeats per timing (median)")
    p.add_argument("-n", type=int, default=1_000_000, help="samples per repeat")
    return p


def report(title, rows, args, extra=None, reference="numpy"):
    """Print a table of rows (dicts with name, ns, and optional ratio/note), write JSON.

    ``ratio`` must be dpfast time / ``reference`` time (use :func:`ratio`)."""
    info = header(f"{title}; ratio against {reference}", args.repeats)
    width = max(len(r["name"]) for r in rows) + 2
    print(f"{'task':<{width}}{'ns/item':>12}{'ratio':>10}  note")
    for r in rows:
        cell = f"{r['ratio']:.2f}" if r.get("ratio") else ""
        print(f"{r['name']:<{width}}{r['ns']:>12.2f}{cell:>10}  {r.get('note', '')}")
    write_json(
        args.json,
        {
            "title": title,
            "machine": info,
            "ratio": RATIO_NOTE,
            "reference": reference,
            "rows": rows,
            **(extra or {}),
        },
    )
