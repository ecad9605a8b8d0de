"""``python -m dpfast ledger ...``: create, show, history, verify and release budgets."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from fractions import Fraction
from typing import IO, Any

from .._errors import DPFastError
from . import _chain
from . import open as open_ledger


def _amount(text: str) -> float | Fraction:
    """A cap from the command line: a float ("0.5", "1e-6") or an exact "n/d"."""
    try:
        return Fraction(text) if "/" in text else float(text)
    except (ValueError, ZeroDivisionError):
        raise SystemExit(f"not a number: {text!r}") from None


def add_parser(subparsers: Any) -> None:
    """Register ``ledger`` and its subcommands on an argparse subparsers object."""
    p = subparsers.add_parser(
        "ledger",
        help="durable privacy budgets (SQLite, PostgreSQL)",
        description="Operate a dpfast ledger. URL is sqlite:///path.db "
        "(sqlite:////absolute/path.db) or postgresql://...",
    )
    sub = p.add_subparsers(dest="ledger_command", required=True, metavar="COMMAND")
    c = sub.add_parser(
        "create", help="create a budget (or check that it exists with these caps)"
    )
    c.add_argument("url")
    c.add_argument("key")
    c.add_argument("--epsilon", type=_amount)
    c.add_argument("--delta", type=_amount, default=0.0)
    c.add_argument("--rule", choices=("basic", "advanced", "zcdp"), default="basic")
    c.add_argument("--delta-prime", type=_amount)
    c.add_argument("--rho", type=_amount)
    s = sub.add_parser("show", help="a table of the budgets: caps, spent, remaining")
    s.add_argument("url")
    s.add_argument("key", nargs="?")
    h = sub.add_parser("history", help="the append-only history of one budget")
    h.add_argument("url")
    h.add_argument("key")
    h.add_argument("--format", choices=("table", "csv", "json"), default="table")
    v = sub.add_parser(
        "verify", help="check hash chains and replay histories (exit 1 on a problem)"
    )
    v.add_argument("url")
    v.add_argument("key", nargs="?")
    r = sub.add_parser("release", help="give back an open reservation whose process died")
    r.add_argument("url")
    r.add_argument("key")
    r.add_argument("seq", type=int)
    r.add_argument("--reason", required=True, help="kept in the history")
    r.add_argument(
        "--force", action="store_true", help="even if its process still runs on this host"
    )
    p.set_defaults(func=run)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], out: IO[str]) -> None:
    """Print rows as an aligned text table."""
    cells = [[str(h) for h in headers]] + [
        ["" if v is None else str(v) for v in row] for row in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip(), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


def _num(x: float | Fraction | None) -> str:
    return "" if x is None else f"{float(x):.6g}"


def run(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    out = out or sys.stdout
    try:
        return _run(args, out)
    except (DPFastError, ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, out: IO[str]) -> int:
    led = open_ledger(args.url)
    cmd = args.ledger_command
    if cmd == "create":
        b = led.budget(
            args.key,
            args.epsilon,
            args.delta,
            args.rule,
            delta_prime=args.delta_prime,
            rho=args.rho,
            create=True,
        )
        caps = next(s["caps"] for s in led.summary() if s["key"] == b.key)
        print(
            f"budget {b.key!r}: {caps}, rule {b.composition}; spent {tuple(b.spent)}",
            file=out,
        )
        return 0
    if cmd == "show":
        summaries = [s for s in led.summary() if args.key in (None, s["key"])]
        if args.key is not None and not summaries:
            print(f"error: no budget {args.key!r}", file=sys.stderr)
            return 2
        opened = {
            s["key"]: len(_chain.open_reservations(led.history(s["key"])))
            for s in summaries
        }
        table(
            [
                "key",
                "rule",
                "caps",
                "spent eps",
                "spent delta",
                "spent rho",
                "left eps",
                "left delta",
                "left rho",
                "rows",
                "open res.",
                "head",
            ],
            [
                [
                    s["key"],
                    s["rule"],
                    s["caps"],
                    _num(s["spent"].epsilon),
                    _num(s["spent"].delta),
                    _num(s["spent"].rho),
                    _num(s["remaining"].epsilon),
                    _num(s["remaining"].delta),
                    _num(s["remaining"].rho),
                    s["rows"],
                    opened[s["key"]],
                    s["head"][:16],
                ]
                for s in summaries
            ],
            out,
        )
        return 0
    if cmd == "history":
        rows = led.history(args.key)
        if args.format == "json":
            json.dump([r.as_dict() for r in rows], out, indent=1)
            print(file=out)
        elif args.format == "csv":
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(_chain.COLUMNS)
            for r in rows:
                w.writerow(["" if v is None else v for v in r.fields()])
            out.write(buf.getvalue())
        else:
            table(
                [
                    "seq",
                    "kind",
                    "ref",
                    "label",
                    "epsilon",
                    "delta",
                    "rho",
                    "time (UTC)",
                    "host",
                    "pid",
                    "hash",
                ],
                [
                    [
                        r.seq,
                        r.kind,
                        r.ref,
                        r.label,
                        _num(r.epsilon),
                        _num(r.delta),
                        _num(r.rho),
                        r.at[:23],
                        r.host,
                        r.pid,
                        r.hash[:16],
                    ]
                    for r in rows
                ],
                out,
            )
        return 0
    if cmd == "verify":
        reports = led.verify(args.key)
        for rep in reports:
            print(
                f"{rep.key}: {rep.rows} rows, "
                + ("ok" if rep.ok else "TAMPERED OR INCONSISTENT"),
                file=out,
            )
            for p in rep.problems:
                print(f"  - {p}", file=out)
        return 0 if all(r.ok for r in reports) else 1
    if cmd == "release":
        row = led.release(args.key, args.seq, reason=args.reason, force=args.force)
        print(
            f"released reservation {row.seq} of {args.key!r} (label {row.label!r}, epsilon "
            f"{_num(row.epsilon)}, process {row.pid} on {row.host})",
            file=out,
        )
        return 0
    raise AssertionError(cmd)
