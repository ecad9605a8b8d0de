"""A small HTTP service answering DP counts and means, with per-analyst budgets on SQLite.

Standard library only (http.server).  Each analyst gets a durable budget in the ledger
(key ``analyst:<name>``, created on first use with --epsilon).  Every answer charges the
analyst's budget (a committed SQLite transaction) before dpfast draws the noise, so a
restart, a crash, or several worker processes never let an analyst overspend.

    python examples/ledger_service.py --ledger sqlite:///budgets.db --port 8080 --workers 2
    curl 'http://127.0.0.1:8080/count?analyst=ann&epsilon=0.1&min_age=40'
    curl 'http://127.0.0.1:8080/mean?analyst=ann&epsilon=0.1&column=income'
    curl 'http://127.0.0.1:8080/budget?analyst=ann'
    python -m dpfast ledger show sqlite:///budgets.db

The dataset is synthetic (a fixed seed) so that the example runs anywhere; replace
``load_data`` with your own table.  --workers N pre-forks N processes that share the
listening socket and the ledger (each reopens its own connection after the fork).
"""

import argparse
import json
import os
import signal
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import numpy as np

from dpfast import BudgetExceededError, PrivacyParameterError, ledger, stats

# Public bounds of each column: the mean clamps to them (they fix the sensitivity).
COLUMNS = {"age": (18.0, 100.0), "income": (0.0, 250_000.0)}


def load_data(n=100_000, seed=2026):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 95, size=n).astype(float)
    income = np.round(rng.lognormal(10.5, 0.6, size=n), 2)
    return {"age": age, "income": income}


class Service:
    def __init__(self, ledger_url, epsilon, delta):
        self.ledger = ledger.open(ledger_url)
        self.caps = dict(epsilon=epsilon, delta=delta)
        self.data = load_data()

    def budget(self, analyst):
        if not analyst or not analyst.isalnum() or len(analyst) > 64:
            raise PrivacyParameterError("analyst must be 1 to 64 letters or digits")
        return self.ledger.budget(f"analyst:{analyst}", create=True, **self.caps)

    def count(self, q):
        b = self.budget(q.get("analyst"))
        rows = self.data["age"] >= float(q.get("min_age", "0"))
        value = stats.count(np.flatnonzero(rows), epsilon=float(q["epsilon"]), budget=b)
        return {
            "count": int(value),
            "epsilon": float(q["epsilon"]),
            "remaining": b.remaining._asdict(),
        }

    def mean(self, q):
        b = self.budget(q.get("analyst"))
        column = q.get("column", "age")
        if column not in COLUMNS:
            raise PrivacyParameterError(f"column must be one of {sorted(COLUMNS)}")
        lower, upper = COLUMNS[column]
        value = stats.mean(
            self.data[column],
            lower=lower,
            upper=upper,
            epsilon=float(q["epsilon"]),
            budget=b,
        )
        return {
            "mean": float(value),
            "column": column,
            "epsilon": float(q["epsilon"]),
            "remaining": b.remaining._asdict(),
        }

    def remaining(self, q):
        b = self.budget(q.get("analyst"))
        return {"spent": b.spent._asdict(), "remaining": b.remaining._asdict()}


def make_handler(service):
    routes = {"/count": service.count, "/mean": service.mean, "/budget": service.remaining}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            url = urlparse(self.path)
            q = {k: v[-1] for k, v in parse_qs(url.query).items()}
            route = routes.get(url.path)
            try:
                if route is None:
                    status, body = 404, {"error": f"no route {url.path}"}
                else:
                    status, body = 200, route(q)
            except BudgetExceededError as e:
                status, body = 403, {"error": "budget exceeded", "detail": str(e)}
            except (PrivacyParameterError, KeyError, ValueError, TypeError) as e:
                status, body = 400, {"error": f"bad request: {e}"}
            except ledger.LedgerError as e:
                status, body = 503, {"error": f"ledger unavailable: {e}"}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # quiet: the ledger is the audit log
            pass

    return Handler


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def serve(args):
    service = Service(args.ledger, args.epsilon, args.delta)
    server = ThreadingHTTPServer(
        (args.host, args.port), make_handler(service), bind_and_activate=False
    )
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.server_bind()
    server.server_activate()
    print(
        f"serving on http://{args.host}:{server.server_address[1]} with {args.workers} "
        f"worker process(es), ledger {service.ledger.url}",
        flush=True,
    )
    children = []
    for _ in range(
        args.workers - 1
    ):  # pre-fork: the children share the socket and the ledger
        pid = os.fork()
        if pid == 0:
            try:
                server.serve_forever()
            finally:
                os._exit(0)
        children.append(pid)
    signal.signal(signal.SIGTERM, _interrupt)  # the parent stops its workers on SIGTERM too
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        for pid in children:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ledger", default="sqlite:///budgets.db")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument(
        "--epsilon", type=float, default=1.0, help="each analyst's total epsilon"
    )
    p.add_argument("--delta", type=float, default=0.0)
    serve(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
