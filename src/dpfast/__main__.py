"""``python -m dpfast``: the demo (the default, or ``demo``), ``bench`` for a quick
side-by-side speed table, and ``ledger`` to operate durable privacy budgets.  This module
only parses arguments; the demo and the table live in :mod:`dpfast._demo`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

import dpfast


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dpfast",
        description="dpfast: fast, floating-point-safe differential privacy. "
        "Without a command, runs the demo.",
    )
    p.add_argument("--version", action="version", version=f"dpfast {dpfast.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    d = sub.add_parser(
        "demo",
        help="releases under one budget, then a speed table (the default)",
        description="Releases under one printed budget, then a speed table.",
    )
    d.set_defaults(func=lambda args: _demo().demo())
    b = sub.add_parser(
        "bench",
        help="a quick side-by-side speed table against numpy",
        description="dpfast and numpy timed in the same run; ratio = dpfast "
        "time / numpy time (below 1: dpfast is faster).",
    )
    b.add_argument(
        "-n", type=_positive, default=1_000_000, help="items per call (default 1e6)"
    )
    b.add_argument(
        "--repeats", type=_positive, default=5, help="calls per row (median; default 5)"
    )
    b.set_defaults(func=lambda args: _demo().bench(args.n, args.repeats))
    from dpfast.ledger import cli

    cli.add_parser(sub)
    return p


def _demo() -> ModuleType:
    from dpfast import _demo as module  # numpy-heavy imports only when a command runs

    return module


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = _demo().demo() if args.command is None else args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
