"""A DP COUNT+SUM job on Spark local[2], reporting where dpfast drew noise.

    python spark_pipeline_dp_job.py MODE LOGDIR      (MODE: workers | driver-only | none)

workers      spark.executorEnv.DPFAST_PATCH=pipeline_dp: dpfast's .pth hook activates in
             every Python worker (the documented way);
driver-only  dpfast.compat.pipeline_dp.install() in the driver only (the negative
             control: PipelineDP rebuilds its mechanisms in the workers, so this reaches
             none of the releases);
none         no dpfast at all.

Every process that draws through dpfast appends to LOGDIR/draws-<pid>.txt
(DPFAST_PATCH_LOG).  Prints one JSON line: released partitions, driver pid, and draws per
pid.
"""

import collections
import json
import os
import pathlib
import sys

import pipeline_dp
from pyspark import SparkConf, SparkContext


def main():
    mode, logdir = sys.argv[1], pathlib.Path(sys.argv[2])
    logdir.mkdir(parents=True, exist_ok=True)
    os.environ.pop("DPFAST_PATCH", None)
    # the workers must run this interpreter (where dpfast and pipeline_dp are installed)
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    conf = (
        SparkConf()
        .setMaster("local[2]")
        .setAppName("dpfast-pipeline_dp")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.executorEnv.DPFAST_PATCH_LOG", str(logdir))
    )
    if mode == "workers":
        conf = conf.set("spark.executorEnv.DPFAST_PATCH", "pipeline_dp")
    os.environ["DPFAST_PATCH_LOG"] = str(logdir)  # the driver's own draws, if any
    if mode == "driver-only":
        from dpfast.compat import pipeline_dp as dpp

        dpp.install()
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    try:
        rows = [(u, u % 20, 1.0) for u in range(2000)]
        rdd = sc.parallelize(rows, 4)
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.SparkRDDBackend(sc))
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM],
            max_partitions_contributed=1,
            max_contributions_per_partition=1,
            min_value=0.0,
            max_value=1.0,
        )
        extractors = pipeline_dp.DataExtractors(
            privacy_id_extractor=lambda r: r[0],
            partition_extractor=lambda r: r[1],
            value_extractor=lambda r: r[2],
        )
        result = engine.aggregate(rdd, params, extractors)
        accountant.compute_budgets()
        released = result.collect()
    finally:
        sc.stop()
    draws = collections.Counter()
    for f in logdir.glob("draws-*.txt"):
        pid = int(f.stem.split("-")[1])
        for line in f.read_text().splitlines():
            kind, n = line.split()
            draws[(pid, kind)] += int(n)
    per_pid = collections.defaultdict(dict)
    for (pid, kind), n in draws.items():
        per_pid[str(pid)][kind] = n
    print(
        json.dumps(
            {
                "mode": mode,
                "released": len(released),
                "driver_pid": os.getpid(),
                "draws": per_pid,
            }
        )
    )


if __name__ == "__main__":
    main()
