"""Load for examples/ledger_service.py: many clients, several analysts, then an audit.

Starts the service (unless --url is given) on a fresh SQLite ledger, sends --requests
requests from --clients threads (random analysts, counts and means at random epsilons),
and prints requests/s, p50/p99 latency and how many answers the budgets refused.  Then it
audits the ledger: for every analyst, the epsilon of the answers the clients received
equals the spend recorded in the history (each answered request was charged once), it
never exceeds the cap, and ``verify`` finds the hash chains intact.

    python examples/ledger_load.py --requests 2000 --clients 8 --workers 2
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from fractions import Fraction

from dpfast import ledger


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", help="a running service (default: start one)")
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--analysts", type=int, default=5)
    p.add_argument("--workers", type=int, default=2, help="service worker processes")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="dpfast-service-")
    ledger_url = f"sqlite:///{tmp}/budgets.db"
    proc = None
    base = args.url
    if base is None:
        port = 18000 + os.getpid() % 1000
        proc = subprocess.Popen(
            [
                sys.executable,
                os.path.join(os.path.dirname(__file__), "ledger_service.py"),
                "--ledger",
                ledger_url,
                "--port",
                str(port),
                "--workers",
                str(args.workers),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        proc.stdout.readline()  # "serving on ..."
        base = f"http://127.0.0.1:{port}"
    rng = random.Random(7)
    plan = [
        (
            f"a{rng.randrange(args.analysts)}",
            rng.choice(["count", "mean"]),
            rng.choice([0.01, 0.02, 0.05]),
        )
        for _ in range(args.requests)
    ]
    latencies, answered, refused, lock = [], {}, [0], threading.Lock()

    def client(jobs):
        for analyst, kind, eps in jobs:
            extra = "&column=income" if kind == "mean" else "&min_age=40"
            t0 = time.perf_counter()
            status, body = _get(f"{base}/{kind}?analyst={analyst}&epsilon={eps}{extra}")
            dt = time.perf_counter() - t0
            with lock:
                latencies.append(dt)
                if status == 200:
                    answered[analyst] = answered.get(analyst, Fraction(0)) + Fraction(
                        repr(eps)
                    )  # the decimal charged
                elif status == 403:
                    refused[0] += 1
                else:
                    raise RuntimeError(f"{status} {body}")

    t0 = time.perf_counter()
    threads = [
        threading.Thread(target=client, args=(plan[i :: args.clients],))
        for i in range(args.clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if proc is not None:
        proc.terminate()
        proc.wait()
    latencies.sort()
    print(
        f"{len(plan)} requests in {elapsed:.2f} s: {len(plan) / elapsed:,.0f} requests/s, "
        f"p50 {latencies[len(latencies) // 2] * 1e3:.1f} ms, p99 {latencies[int(0.99 * len(latencies))] * 1e3:.1f} ms, "
        f"{refused[0]} refused by the budgets"
    )
    if args.url is not None:
        return 0
    led = ledger.open(ledger_url)
    bad = 0
    for analyst, total in sorted(answered.items()):
        rows = led.history(f"analyst:{analyst}")
        recorded = sum((r.epsilon for r in rows if r.kind == "spend"), Fraction(0))
        # exact: the service parses the same decimal text into the same float
        ok = recorded == total and recorded <= 1
        bad += not ok
        print(
            f"  analyst {analyst}: answered eps {float(total):.4f}, recorded {float(recorded):.4f}, "
            f"cap 1.0 -> {'ok' if ok else 'MISMATCH'}"
        )
    reports = led.verify()
    print(f"verify: {sum(r.ok for r in reports)}/{len(reports)} budgets intact")
    return 1 if bad or not all(r.ok for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
