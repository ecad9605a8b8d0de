"""dpfast.compat.pipeline_dp: PipelineDP's noise from dpfast, on LocalBackend and on Spark.

Needs dpfast[pipeline-dp]; the Spark tests also need pyspark 3.5 and Java 17 (run by
.ci/integration_backends.sh).
"""

import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from stat_helpers import ALPHA, chi2_pvalue

if os.environ.get("DPFAST_BACKENDS_CI"):  # CI integration step: never skip
    import pipeline_dp  # noqa: F401
pipeline_dp = pytest.importorskip(
    "pipeline_dp", reason="needs the dpfast[pipeline-dp] extra"
)
from pipeline_dp import aggregate_params as ap  # noqa: E402
from pipeline_dp import dp_computations as dpc  # noqa: E402
from pipeline_dp import partition_selection as ps  # noqa: E402
from pydp.algorithms import numerical_mechanisms as pydp_mech  # noqa: E402
from pydp.algorithms import partition_selection as pydp_ps  # noqa: E402

from dpfast.compat import pipeline_dp as dpp  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture
def installed():
    dpp.install()
    yield
    dpp.uninstall()


def _job(metrics, noise=pipeline_dp.NoiseKind.LAPLACE, users=2000, public=False):
    data = [(u, u % 20, (u % 7) / 7.0) for u in range(users)]
    acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
    eng = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=noise,
        metrics=metrics,
        max_partitions_contributed=1,
        max_contributions_per_partition=1,
        min_value=0.0,
        max_value=1.0,
    )
    ex = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0],
        partition_extractor=lambda r: r[1],
        value_extractor=lambda r: r[2],
    )
    res = eng.aggregate(
        data, params, ex, public_partitions=list(range(20)) if public else None
    )
    acc.compute_budgets()
    return list(res)


def test_install_is_reversible_and_idempotent():
    originals = (
        dpc.dp_mechanisms,
        dpc.add_noise_vector,
        ps.partition_selection,
        dpc.ExponentialMechanism.apply,
    )
    assert dpp.install() is True and dpp.install() is False
    assert dpc.dp_mechanisms is dpp.MECHANISMS
    assert ps.partition_selection is dpp.PARTITION_SELECTION
    dpp.uninstall()
    dpp.uninstall()
    assert (
        dpc.dp_mechanisms,
        dpc.add_noise_vector,
        ps.partition_selection,
        dpc.ExponentialMechanism.apply,
    ) == originals


@pytest.mark.parametrize(
    "noise", [pipeline_dp.NoiseKind.LAPLACE, pipeline_dp.NoiseKind.GAUSSIAN]
)
def test_every_metric_draws_from_dpfast(installed, noise):
    before = dpp.draws()
    M = pipeline_dp.Metrics
    out = _job([M.COUNT, M.PRIVACY_ID_COUNT, M.SUM, M.MEAN, M.VARIANCE], noise)
    after = dpp.draws()
    kind = "laplace" if noise == pipeline_dp.NoiseKind.LAPLACE else "gaussian"
    assert len(out) == 20
    # per partition: privacy-id count, and PipelineDP's variance combiner (which also
    # serves COUNT, SUM and MEAN) draws count, normalised sum and normalised sum of squares
    assert after[kind] - before[kind] == 20 * 4
    assert after["keep"] - before["keep"] == 20
    assert all(np.isfinite(v) for _, t in out for v in t)


def test_add_dp_noise_draws_from_dpfast(installed):
    before = dpp.draws()["laplace"]
    params = ap.AddDPNoiseParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE, l0_sensitivity=1, linf_sensitivity=1.0
    )
    acc = pipeline_dp.NaiveBudgetAccountant(1.0, 1e-6)
    eng = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
    res = eng.add_dp_noise([(k, 10.0) for k in range(30)], params)
    acc.compute_budgets()
    out = list(res)
    assert len(out) == 30 and dpp.draws()["laplace"] - before == 30


def test_laplace_matches_pydp_and_its_lattice():
    ours, theirs = (
        dpp.LaplaceMechanism(0.5, 3.0),
        pydp_mech.LaplaceMechanism(epsilon=0.5, sensitivity=3.0),
    )
    assert ours.diversity == theirs.diversity == 6.0
    n = 20_000
    a = np.array([ours.add_noise(0.0) for _ in range(n)])
    b = np.array([theirs.add_noise(0.0) for _ in range(n)])
    assert stats.ks_2samp(a, b).pvalue > ALPHA
    assert stats.kstest(a, stats.laplace(scale=6.0).cdf).pvalue > ALPHA
    # the lattice 2^(ceil(log2 b) - 40), PyDP's own; no finer than PyDP's outputs show
    g = 2.0 ** (math.ceil(math.log2(6.0)) - 40)
    assert np.all(a / g == np.round(a / g))
    pydp_exp = min(
        int(np.frexp(v)[1])
        - 53
        + int(
            np.log2(
                int(abs(v) * 2.0 ** (53 - np.frexp(v)[1]))
                & -int(abs(v) * 2.0 ** (53 - np.frexp(v)[1]))
            )
        )
        for v in b
        if v != 0
    )
    assert g >= 2.0**pydp_exp
    before = dpp.draws()["laplace"]
    assert ours.noised_value_above_threshold(0.0, -1e9) is True
    assert dpp.draws()["laplace"] == before + 1  # a dpfast draw, not PyDP's


def test_gaussian_matches_pydp_on_a_lattice():
    ours = dpp.GaussianMechanism(1.0, 1e-5, 2.0)
    theirs = pydp_mech.GaussianMechanism(1.0, 1e-5, 2.0)
    assert ours.std == theirs.std
    n = 20_000
    a = np.array([ours.add_noise(1.5) for _ in range(n)]) - 1.5
    b = np.array([theirs.add_noise(1.5) for _ in range(n)]) - 1.5
    assert stats.ks_2samp(a, b).pvalue > ALPHA
    assert stats.kstest(a, stats.norm(scale=ours.std).cdf).pvalue > ALPHA
    g = 2.0 ** (math.frexp(ours.std)[1] - 1 - 24)
    y = a + 1.5
    assert np.all(y / g == np.round(y / g))
    from_std = dpp.GaussianMechanism.create_from_standard_deviation(4.0)
    assert from_std.std == 4.0


def test_vector_sum_noise():
    noise = dpc.AdditiveVectorNoiseParams(
        eps=1.0,
        delta=1e-6,
        max_norm=1.0,
        l0_sensitivity=1,
        linf_sensitivity=1.0,
        norm_kind=ap.NormKind.Linf,
        noise_kind=ap.NoiseKind.LAPLACE,
    )
    out = dpp.add_noise_vector(np.zeros(10_000), noise)
    # PipelineDP: sensitivity max_norm * d * l0 = 10^4 per coordinate
    assert stats.kstest(out, stats.laplace(scale=1e4).cdf).pvalue > ALPHA
    g2 = dpc.AdditiveVectorNoiseParams(
        eps=1.0,
        delta=1e-6,
        max_norm=1.0,
        l0_sensitivity=1,
        linf_sensitivity=1.0,
        norm_kind=ap.NormKind.L2,
        noise_kind=ap.NoiseKind.GAUSSIAN,
    )
    sigma = pydp_mech.GaussianMechanism(1.0, 1e-6, 1.0).std
    out = dpp.add_noise_vector(np.zeros(10_000), g2)
    assert stats.kstest(out, stats.norm(scale=sigma).cdf).pvalue > ALPHA


@pytest.mark.parametrize("name", ["truncated_geometric", "laplace", "gaussian"])
def test_partition_selection_coins(name):
    ours = dpp.create_partition_strategy(name, 1.0, 1e-5, 2)
    theirs = pydp_ps.create_partition_strategy(name, 1.0, 1e-5, 2)
    n_users = 20 if name != "truncated_geometric" else 22
    p = theirs.probability_of_keep(n_users)
    assert ours.probability_of_keep(n_users) == p and 0.01 < p < 0.99
    trials = 20_000
    kept = sum(ours.should_keep(n_users) for _ in range(trials))
    assert stats.binomtest(kept, trials, p).pvalue > ALPHA
    if name != "truncated_geometric":
        # the derived thresholding noise reproduces PyDP's keep probability
        vals = [ours.noised_value_if_should_keep(n_users) for _ in range(trials)]
        kept = sum(v is not None for v in vals)
        assert stats.binomtest(kept, trials, p).pvalue > ALPHA
        assert min(v for v in vals if v is not None) >= theirs.threshold


def test_exponential_mechanism_law(installed):
    class Score(dpc.ExponentialMechanism.ScoringFunction):
        def score(self, k):
            return -abs(k - 3)

        @property
        def global_sensitivity(self):
            return 1.0

        @property
        def is_monotonic(self):
            return False

    em = dpc.ExponentialMechanism(Score())
    before = dpp.draws()["exponential"]
    picks = [em.apply(1.0, [1, 2, 3, 4, 5]) for _ in range(5000)]
    assert dpp.draws()["exponential"] - before == 5000
    p = em._calculate_probabilities(1.0, [1, 2, 3, 4, 5])
    counts = [picks.count(k) for k in [1, 2, 3, 4, 5]]
    assert chi2_pvalue(counts, p) > ALPHA


def _spark_ready():
    if os.environ.get("DPFAST_BACKENDS_CI"):
        return True  # .ci/integration_backends.sh: never skip, fail instead
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


def _python(code, **env):
    full = {k: v for k, v in os.environ.items() if k != "DPFAST_PATCH"}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120
    )


def test_env_activation_hook():
    """The .pth hook: DPFAST_PATCH=pipeline_dp installs dpfast when pipeline_dp is first
    imported, logging once; without the variable nothing of dpfast is imported."""
    code = (
        "import sys; assert 'dpfast' not in sys.modules; import pipeline_dp; "
        "from pipeline_dp import dp_computations as d; "
        "print(type(d.dp_mechanisms).__name__)"
    )
    on = _python(code, DPFAST_PATCH="pipeline_dp")
    assert on.returncode == 0, on.stderr
    assert on.stdout.strip() == "_Namespace"  # dpfast.compat.pipeline_dp
    assert on.stderr.count("noise now drawn by dpfast") == 1
    off = _python(code)
    assert off.returncode == 0 and off.stdout.strip() == "module"
    assert "dpfast" not in off.stderr


def _spark(mode, tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "integration" / "spark_pipeline_dp_job.py"),
            mode,
            str(tmp_path / mode),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "DPFAST_PATCH"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(
    not _spark_ready(), reason="needs pyspark and Java (CI integration step)"
)
def test_spark_workers_draw_from_dpfast(tmp_path):
    """spark.executorEnv.DPFAST_PATCH=pipeline_dp: all noise is dpfast's, in the workers;
    the negative control (driver-only install) reaches none of it."""
    got = _spark("workers", tmp_path)
    assert got["released"] == 20
    driver = str(got["driver_pid"])
    workers = {pid: d for pid, d in got["draws"].items() if pid != driver}
    assert driver not in got["draws"] and workers
    assert sum(d.get("laplace", 0) for d in workers.values()) == 40  # count + sum
    assert sum(d.get("keep", 0) for d in workers.values()) == 20
    control = _spark("driver-only", tmp_path)
    assert control["released"] == 20 and control["draws"] == {}
