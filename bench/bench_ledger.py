"""Benchmark of dpfast.ledger and of the in-memory PrivacyBudget charge.

Plain script (no pytest): prints a table and, with --json PATH, writes the results.

* in-memory ``PrivacyBudget.spend``: microseconds per charge (median of --repeats);
* SQLite, one process: durable charges per second with ``synchronous=full`` (each commit
  synced) and ``normal`` (WAL: survives any process crash, not a power loss), and with
  ``spend_many`` batches of 10 (one commit per batch);
* SQLite contention: 4 processes on one file until the budget runs out: charges/s and
  an exact overspend check;
* PostgreSQL: 8 client processes on loopback against a throwaway cluster (fsync on);
* load test with kill -9: worker processes in spend loops, one killed every --kill-every
  seconds and replaced, for --duration seconds: charges/s, p50/p99 latency, kills
  survived, and discrepancies (reported charges missing from the history, duplicates,
  state != history, verify problems) which must be 0.

    python bench/bench_ledger.py --json /tmp/ledger.json [--quick] [--no-postgres]
"""

import argparse
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_info  # noqa: E402
from dpfast import BudgetExceededError, ledger  # noqa: E402
from dpfast.accounting import PrivacyBudget  # noqa: E402
from dpfast.ledger.testing import fork_worker, read_lines  # noqa: E402

UNIT = 2.0**-20


def memory_charge_us(repeats, n=200_000, clock=time.perf_counter):
    """Median microseconds per in-memory charge.  With clock=time.process_time the
    figure is this process's CPU time, less sensitive to other load on a shared machine."""
    runs = []
    for _ in range(repeats):
        b = PrivacyBudget(1e300, 0.5)
        t0 = clock()
        for _ in range(n):
            b.spend(1e-9)
        runs.append((clock() - t0) / n * 1e6)
    return statistics.median(runs)


def one_process_rate(url, n, batch=1):
    b = ledger.open(url).budget("bench", epsilon=1e9, create=True)
    t0 = time.perf_counter()
    if batch == 1:
        for _ in range(n):
            b.spend(1e-3, label="q")
    else:
        for _ in range(n // batch):
            b.spend_many([(1e-3, 0.0, "q")] * batch)
    return n / (time.perf_counter() - t0)


def contention(url, procs, cap_charges, keys=1):
    """procs processes spend UNIT until refused, on ``keys`` budgets of ``cap_charges``
    units each (worker i uses budget i % keys): charges/s and the exact overspend check."""
    led = ledger.open(url)
    budgets = [
        led.budget(f"contention{k}", epsilon=cap_charges * UNIT, create=True)
        for k in range(keys)
    ]

    def worker(w, i):
        b = budgets[i % keys]
        n = 0
        while True:
            try:
                b.spend(UNIT)
            except BudgetExceededError:
                break
            n += 1
        os.write(w, f"{n}\n".encode())

    t0 = time.perf_counter()
    kids = [fork_worker(lambda w, i=i: worker(w, i)) for i in range(procs)]
    total = 0
    for pid, fd in kids:
        total += int(read_lines(fd)[0])
        os.waitpid(pid, 0)
    dt = time.perf_counter() - t0
    ok = (
        total == keys * cap_charges
        and all(r.ok for r in led.verify())
        and all(Fraction(b.spent.epsilon) == cap_charges * Fraction(UNIT) for b in budgets)
    )
    return total / dt, ok


def load_with_kills(url, workers, duration, kill_every, seed=2026):
    """Spend loops in ``workers`` processes; kill -9 one every ``kill_every`` s."""
    led = ledger.open(url)
    b = led.budget("load", epsilon=1e9, create=True)
    rng = random.Random(seed)
    live, reported, latencies = {}, [], []
    wid = [0]

    def spawn():
        wid[0] += 1
        me = wid[0]

        def loop(w):
            i = 0
            while True:
                t0 = time.perf_counter()
                b.spend(UNIT * (1 + i % 3), label=f"w{me}-{i}")
                os.write(
                    w,
                    f"{me}-{i} {UNIT * (1 + i % 3)!r} {time.perf_counter() - t0:.6f}\n".encode(),
                )
                i += 1

        pid, fd = fork_worker(loop)
        live[pid] = fd

    def collect(pid):
        for line in read_lines(live.pop(pid)):
            if line.startswith("E"):
                raise RuntimeError(line)
            label, amount, lat = line.split()
            reported.append(("w" + label, float(amount)))
            latencies.append(float(lat))

    for _ in range(workers):
        spawn()
    kills = 0
    t_start = time.perf_counter()
    while time.perf_counter() - t_start < duration:
        time.sleep(rng.uniform(0.5, 1.5) * kill_every)
        pid = rng.choice(list(live))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        kills += 1
        collect(pid)
        spawn()
    for pid in list(live):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        collect(pid)
    elapsed = time.perf_counter() - t_start
    rows = b.history()
    labels = [r.label for r in rows if r.kind == "spend"]
    recorded = set(labels)
    missing = sum(1 for lab, _ in reported if lab not in recorded)
    duplicates = len(labels) - len(recorded)
    history_total = sum((r.epsilon for r in rows if r.kind == "spend"), Fraction(0))
    state_mismatch = int(Fraction(b.spent.epsilon) != history_total)
    under = int(history_total < sum((Fraction(a) for _, a in reported), Fraction(0)))
    problems = len(led.verify("load")[0].problems)
    latencies.sort()
    q = (
        (lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3)
        if latencies
        else (lambda p: float("nan"))
    )
    return {
        "charges_per_s": len(labels) / elapsed,
        "p50_ms": q(0.50),
        "p99_ms": q(0.99),
        "kills": kills,
        "charges": len(labels),
        "discrepancies": missing + duplicates + state_mismatch + under + problems,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="smaller runs")
    p.add_argument("--no-postgres", action="store_true")
    p.add_argument("--duration", type=float, default=20.0, help="load test seconds")
    p.add_argument(
        "--kill-every",
        type=float,
        default=0.05,
        help="load test: mean seconds between kills",
    )
    args = p.parse_args()
    n = 1000 if args.quick else 4000
    rows = []
    tmp = tempfile.mkdtemp(prefix="dpfast-bench-")

    def row(name, value, unit, note=""):
        rows.append({"name": name, "value": value, "unit": unit, "note": note})
        print(f"  {name:<52}{value:>12,.2f} {unit:<10} {note}", flush=True)

    info = cpu_info()
    print(
        f"# dpfast.ledger: {info.get('cpu')} ({info['cores']} cores), python {info['python']}; "
        f"medians; the machine may be shared"
    )
    row(
        "in-memory PrivacyBudget.spend, wall",
        memory_charge_us(args.repeats),
        "us/charge",
        "goal <= 2 us",
    )
    row(
        "in-memory PrivacyBudget.spend, CPU time",
        memory_charge_us(args.repeats, clock=time.process_time),
        "us/charge",
        "goal <= 2 us",
    )
    for sync in ("full", "normal"):
        url = f"sqlite:///{tmp}/one-{sync}.db?synchronous={sync}"
        rates = [one_process_rate(url, n) for _ in range(3)]
        row(
            f"SQLite 1 process, synchronous={sync}",
            statistics.median(rates),
            "charges/s",
            "goal >= 5,000",
        )
    rates = [one_process_rate(f"sqlite:///{tmp}/batch.db", n, batch=10) for _ in range(3)]
    row(
        "SQLite 1 process, spend_many batches of 10 (full)",
        statistics.median(rates),
        "charges/s",
    )
    rate, ok = contention(f"sqlite:///{tmp}/contention.db", 4, n)
    row(
        "SQLite 4 processes until exhausted (full)",
        rate,
        "charges/s",
        f"exact, no overspend: {ok}",
    )
    results = {}
    if not args.no_postgres:
        from dpfast.ledger.testing import ThrowawayPostgres

        with ThrowawayPostgres() as pg:
            rate, ok = contention(pg.database("bench1"), 8, 2 * n)
            row(
                "PostgreSQL 8 clients, one budget (fsync on)",
                rate,
                "charges/s",
                f"goal >= 1,000; exact, no overspend: {ok}",
            )
            rate, ok = contention(pg.database("bench8"), 8, n // 2, keys=8)
            row(
                "PostgreSQL 8 clients, a budget each (fsync on)",
                rate,
                "charges/s",
                f"goal >= 1,000; exact, no overspend: {ok}",
            )
    load = load_with_kills(
        f"sqlite:///{tmp}/load.db",
        4,
        args.duration / (4 if args.quick else 1),
        args.kill_every,
    )
    results["load"] = load
    row(
        "load test, 4 workers, kill -9 (full)",
        load["charges_per_s"],
        "charges/s",
        f"p50 {load['p50_ms']:.2f} ms, p99 {load['p99_ms']:.2f} ms, {load['kills']} kills survived, "
        f"{load['charges']} charges, discrepancies {load['discrepancies']}",
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"title": "dpfast.ledger", "machine": info, "rows": rows, **results},
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
