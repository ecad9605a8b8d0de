"""Shared timing and reporting for the bench/ scripts (never part of the test suite)."""
import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np


def cpu_info():
    """Model name and SIMD flags of this machine (Linux; a short form elsewhere)."""
    info = {"machine": platform.machine(), "python": sys.version.split()[0],
            "numpy": np.__version__}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        for line in text.splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines()
                      if ln.startswith("flags")), [])
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


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    p.add_argument("--repeats", type=int, default=7, help="repeats per timing (median)")
    p.add_argument("-n", type=int, default=1_000_000, help="samples per repeat")
    return p


def report(title, rows, args, extra=None, ratio_label="vs numpy"):
    """Print a table of rows (dicts with name, ns, and optional ratio/note), write JSON."""
    info = cpu_info()
    print(f"# {title}")
    print(f"# {info.get('cpu')} ({info['machine']}, {info['cores']} cores, "
          f"SIMD {'/'.join(info.get('simd', []))}), numpy {info['numpy']}, "
          f"python {info['python']}; median of {args.repeats}")
    width = max(len(r["name"]) for r in rows) + 2
    print(f"{'task':<{width}}{'ns/item':>12}{ratio_label:>14}  note")
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") else ""
        print(f"{r['name']:<{width}}{r['ns']:>12.2f}{ratio:>14}  {r.get('note', '')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"title": title, "machine": info, "rows": rows, **(extra or {})}, f,
                      indent=2)
