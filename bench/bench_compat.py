"""Per-call cost of the drop-in backends against the tools' own samplers, in one run.

    python bench/bench_compat.py [--json out.json] [-n 20000] [--repeats 7]

diffprivlib: each mechanism's ``randomise`` through dpfast.compat.diffprivlib against
diffprivlib's own class with the same parameters (the issue's goal: ratio <= 1).
Randomized response on one scalar (cached certified threshold).  PipelineDP: VECTOR_SUM
noise on a 10^4-dimensional vector (goal: >= 10x faster than PyDP's per-element loop)
and one scalar Laplace draw.  OpenDP: a 1,000-element
vector Laplace measurement from dpfast.opendp against OpenDP's built-in (when importable).
Rows whose peer is not installed are skipped (dpfast[diffprivlib], [pipeline_dp], [opendp]).
"""

import numpy as np

from _common import parser, ratio, report, timeit
from dpfast import randomized_response as _rr


def diffprivlib_rows(n, rep, rows):
    import diffprivlib.mechanisms as dm

    from dpfast.compat import diffprivlib as shim

    cases = [
        ("Laplace", dict(epsilon=1.0, sensitivity=1.0), 0.5),
        ("Gaussian", dict(epsilon=0.5, delta=1e-5, sensitivity=1.0), 0.5),
        ("GaussianAnalytic", dict(epsilon=0.5, delta=1e-5, sensitivity=1.0), 0.5),
        ("GaussianDiscrete", dict(epsilon=0.5, delta=1e-5, sensitivity=1), 3),
        ("Geometric", dict(epsilon=0.5, sensitivity=1), 3),
        ("LaplaceTruncated", dict(epsilon=1.0, sensitivity=1.0, lower=0, upper=1), 0.5),
        ("LaplaceBoundedDomain", dict(epsilon=1.0, sensitivity=1.0, lower=0, upper=1), 0.5),
        ("LaplaceBoundedNoise", dict(epsilon=1.0, delta=0.1, sensitivity=1.0), 0.5),
        ("Binary", dict(epsilon=1.0, value0="a", value1="b"), "a"),
        ("Exponential", dict(epsilon=1.0, sensitivity=1.0, utility=[0, 1, 2, 3]), None),
        ("PermuteAndFlip", dict(epsilon=1.0, sensitivity=1.0, utility=[0, 1, 2, 3]), None),
        ("Snapping", dict(epsilon=1.0, sensitivity=1.0, lower=0, upper=10), 5.0),
    ]
    for name, kw, value in cases:
        ours, theirs = getattr(shim, name)(**kw), getattr(dm, name)(**kw)
        t_ours, _ = timeit(lambda: [ours.randomise(value) for _ in range(n)], n, rep)
        t_theirs, _ = timeit(lambda: [theirs.randomise(value) for _ in range(n)], n, rep)
        rows.append(
            {
                "name": f"diffprivlib {name}.randomise via dpfast",
                "ns": t_ours,
                "ratio": ratio(t_ours, t_theirs),
                "note": f"diffprivlib's own: {t_theirs / 1000:.2f} us",
            }
        )


def rr_rows(n, rep, rows):
    t, _ = timeit(
        lambda: [_rr.randomized_response(True, epsilon=1.0) for _ in range(n)], n, rep
    )
    uncached = _rr._flip_threshold.__wrapped__
    t0, _ = timeit(lambda: [uncached(1.0, 2) for _ in range(n)], n, rep)
    rows.append(
        {
            "name": "randomized_response, one scalar (threshold cached)",
            "ns": t,
            "note": f"recomputing the threshold (as before) adds {t0 / 1000:.2f} us",
        }
    )


def opendp_rows(rep, rows):
    import opendp.prelude as dp

    from dpfast import opendp as dpo

    dp.enable_features("contrib", "honest-but-curious")
    space = (
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=1000),
        dp.l1_distance(T=float),
    )
    ours = dpo.make_laplace(*space, scale=1.0)
    theirs = dp.m.make_laplace(*space, scale=1.0)
    x = [0.5] * 1000
    k = 50
    t_ours, _ = timeit(lambda: [ours(x) for _ in range(k)], k, rep)
    t_theirs, _ = timeit(lambda: [theirs(x) for _ in range(5)], 5, rep)
    rows.append(
        {
            "name": "OpenDP 1,000-vector Laplace via dpfast.opendp (per call)",
            "ns": t_ours,
            "ratio": ratio(t_ours, t_theirs),
            "note": f"built-in make_laplace: {t_theirs / 1e6:.2f} ms per call",
        }
    )


def pipeline_dp_rows(rep, rows):
    from pipeline_dp import aggregate_params as ap
    from pipeline_dp import dp_computations as dpc

    from dpfast.compat import pipeline_dp as dpp

    params = dpc.AdditiveVectorNoiseParams(
        eps=1.0,
        delta=1e-6,
        max_norm=1.0,
        l0_sensitivity=1,
        linf_sensitivity=1.0,
        norm_kind=ap.NormKind.Linf,
        noise_kind=ap.NoiseKind.LAPLACE,
    )
    vec = np.zeros(10_000)
    dpp.uninstall()
    t_pydp, _ = timeit(lambda: dpc.add_noise_vector(vec, params), vec.size, rep)
    t_ours, _ = timeit(lambda: dpp.add_noise_vector(vec, params), vec.size, rep)
    rows.append(
        {
            "name": "PipelineDP VECTOR_SUM noise, 10^4-dim, via dpfast (per element)",
            "ns": t_ours,
            "ratio": ratio(t_ours, t_pydp),
            "note": f"PyDP loop: {t_pydp * vec.size / 1e6:.1f} ms per vector, "
            f"dpfast {t_ours * vec.size / 1e6:.3f} ms",
        }
    )
    lap, pydp_lap = (
        dpp.LaplaceMechanism(1.0, 1.0),
        dpp._pydp_mech.LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    )
    n = 20_000
    t_ours, _ = timeit(lambda: [lap.add_noise(0.5) for _ in range(n)], n, rep)
    t_pydp, _ = timeit(lambda: [pydp_lap.add_noise(0.5) for _ in range(n)], n, rep)
    rows.append(
        {
            "name": "PipelineDP Laplace add_noise (scalar) via dpfast",
            "ns": t_ours,
            "ratio": ratio(t_ours, t_pydp),
            "note": f"PyDP: {t_pydp / 1000:.2f} us",
        }
    )


def main():
    p = parser(__doc__.split("\n")[0])
    p.set_defaults(n=20_000)
    args = p.parse_args()
    rows = []
    try:
        diffprivlib_rows(args.n, args.repeats, rows)
    except ImportError as exc:
        print(f"# diffprivlib rows skipped: {exc}")
    rr_rows(args.n, args.repeats, rows)
    try:
        pipeline_dp_rows(args.repeats, rows)
    except ImportError as exc:
        print(f"# PipelineDP rows skipped: {exc}")
    try:
        opendp_rows(args.repeats, rows)
    except ImportError as exc:
        print(f"# OpenDP rows skipped: {exc}")
    report(
        "dpfast as a backend: per-call cost",
        rows,
        args,
        reference="the tool's own implementation",
    )


if __name__ == "__main__":
    main()
