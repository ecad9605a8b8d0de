"""Reference epsilons from Google's dp_accounting PLDAccountant on the grid of issue 16.

Run in a throwaway venv that has dp-accounting (never a dependency of dpfast):

    python -m venv /tmp/dpacc && /tmp/dpacc/bin/pip install dp-accounting
    /tmp/dpacc/bin/python bench/accounting_reference.py --json tests/data/pld_reference.json

Grid: Gaussian sigma in {0.5, 1, 5, 10} and Laplace scale in {1, 10} (sensitivity 1),
k in {1, 10, 100, 1000}, delta in {1e-5, 1e-10}, Poisson sampling rate q in {1, 0.01};
dp_accounting's defaults (value_discretization_interval 1e-4, pessimistic estimate,
add-or-remove-one neighbours).
"""

import argparse
import importlib.metadata
import json
import sys
import time

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant


def epsilon(kind, param, k, q, delta, interval=1e-4):
    base = (
        dp_accounting.GaussianDpEvent(param)
        if kind == "gaussian"
        else dp_accounting.LaplaceDpEvent(param)
    )
    event = base if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, base)
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    acc.compose(event, k)
    return acc.get_epsilon(delta)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument(
        "--add-fine",
        action="store_true",
        help="read --json and add, for rows with epsilon < 0.05 (where the default "
        "1e-4 grid is coarse), dp_accounting's value at interval epsilon/1000",
    )
    args = ap.parse_args(argv)
    if args.add_fine:
        with open(args.json) as f:
            data = json.load(f)
        for r in data["rows"]:
            if r["epsilon"] < 0.05:
                interval = r["epsilon"] / 1000
                r["epsilon_fine"] = epsilon(
                    r["mechanism"],
                    r["noise"],
                    r["count"],
                    r["sampling_rate"],
                    r["delta"],
                    interval,
                )
                r["fine_interval"] = interval
                print(r, flush=True)
        data["meta"]["command_fine"] = (
            "/tmp/dpacc/bin/python bench/accounting_reference.py "
            "--json tests/data/pld_reference.json --add-fine"
        )
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
        return 0
    rows = []
    for kind, params in (("gaussian", (0.5, 1.0, 5.0, 10.0)), ("laplace", (1.0, 10.0))):
        for param in params:
            for q in (1.0, 0.01):
                for k in (1, 10, 100, 1000):
                    for delta in (1e-5, 1e-10):
                        t0 = time.perf_counter()
                        eps = epsilon(kind, param, k, q, delta)
                        dt = time.perf_counter() - t0
                        rows.append(
                            dict(
                                mechanism=kind,
                                noise=param,
                                sampling_rate=q,
                                count=k,
                                delta=delta,
                                epsilon=eps,
                                seconds=dt,
                            )
                        )
                        print(kind, param, q, k, delta, eps, f"{dt:.2f}s", flush=True)
    meta = dict(
        dp_accounting_version=importlib.metadata.version("dp-accounting"),
        command="/tmp/dpacc/bin/python bench/accounting_reference.py --json tests/data/pld_reference.json",
        accountant="dp_accounting.pld.pld_privacy_accountant.PLDAccountant() defaults",
        python=sys.version.split()[0],
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
