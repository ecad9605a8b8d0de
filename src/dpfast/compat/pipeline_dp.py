"""dpfast as the noise source of PipelineDP 0.3 (``pip install dpfast[pipeline-dp]``).

:func:`install` makes every additive-noise draw (COUNT, PRIVACY_ID_COUNT, SUM, MEAN,
VARIANCE, VECTOR_SUM, ``DPEngine.add_dp_noise``), every partition-selection coin and the
exponential mechanism of private contribution bounds come from dpfast.  PyDP stays:
every noise scale, threshold and keep probability is still PyDP's calibration (the
wrapper objects ask PyDP), and PERCENTILE's quantile tree is not routed.

What is rebound (by identity, reversible with :func:`uninstall`):

* ``pipeline_dp.dp_computations.dp_mechanisms``, the PyDP module alias every additive
  call site looks up at run time, by :data:`MECHANISMS` (``LaplaceMechanism``,
  ``GaussianMechanism`` with PyDP's constructors and attributes);
* ``pipeline_dp.dp_computations.add_noise_vector`` (VECTOR_SUM), by one vectorised
  release instead of a PyDP object per element;
* ``pipeline_dp.partition_selection.partition_selection``, the PyDP partition-selection
  alias, by :data:`PARTITION_SELECTION`;
* ``pipeline_dp.dp_computations.ExponentialMechanism.apply``, by dpfast's exact
  exponential mechanism (PipelineDP draws it with numpy's PCG64 in floating point).

Laws.  Laplace: exact discrete Laplace on the grid 2^(ceil(log2 b) - 40) (b = PyDP's
diversity), which is PyDP's own lattice, never a finer one, input rounded to the grid and
the rounding charged to the sensitivity (noise ``b (1/g + 1/sensitivity)`` steps).
Gaussian: exact discrete Gaussian on the grid 2^-24 sigma (PyDP's Gaussian has no
lattice); when PipelineDP builds it from a standard deviation alone (PLD accounting) the
sensitivity is unknown and the rounding (at most 2^-24 sigma in l2) is not charged.
Partition selection: Bernoulli(``probability_of_keep(n)``) coins, exact for PyDP's
double; thresholding noise of PyDP's scale (Laplace ``l0/eps``; Gaussian sigma of
``GaussianMechanism(eps, delta/2, sqrt(l0))``, which reproduces PyDP's keep probability).

Spark and Beam workers.  Combiners are pickled without their mechanisms and rebuild them
in the worker processes, so the rebinding must happen in every worker: set
``DPFAST_PATCH=pipeline_dp`` in the workers' environment (Spark:
``spark.executorEnv.DPFAST_PATCH=pipeline_dp``, and ``PYSPARK_PYTHON`` pointing at an
environment with dpfast installed); dpfast's ``.pth`` hook then installs this module the
first time the process imports ``pipeline_dp``, logging once per process.
``DPFAST_PATCH_LOG=<dir>`` (diagnostics) appends one line per draw to
``<dir>/draws-<pid>.txt``.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from .. import mechanisms as _mech
from .. import random as _random
from .. import selection as _sel
from . import _plans, require

require("pipeline_dp", "pipeline-dp")
import pipeline_dp  # noqa: E402
from pipeline_dp import aggregate_params as _ap  # noqa: E402
from pipeline_dp import dp_computations as _dpc  # noqa: E402
from pipeline_dp import partition_selection as _ps  # noqa: E402
from pydp.algorithms import numerical_mechanisms as _pydp_mech  # noqa: E402
from pydp.algorithms import partition_selection as _pydp_ps  # noqa: E402

__all__ = [
    "install",
    "uninstall",
    "is_installed",
    "draws",
    "MECHANISMS",
    "PARTITION_SELECTION",
]

_log = logging.getLogger("dpfast")
_LOCK = threading.Lock()
_COUNTS = {"laplace": 0, "gaussian": 0, "keep": 0, "exponential": 0}
_INF = math.inf


def _count(kind: str, n: int = 1) -> None:
    _COUNTS[kind] += n
    logdir = os.environ.get("DPFAST_PATCH_LOG")
    if logdir:
        with open(os.path.join(logdir, f"draws-{os.getpid()}.txt"), "a") as f:
            f.write(f"{kind} {n}\n")


def draws() -> dict[str, int]:
    """Draws made through dpfast in this process, by kind (a copy)."""
    return dict(_COUNTS)


# ------------------------------------------------------------------ additive noise


def _release(plan: tuple[int, Any], value: float) -> float:
    k, sampler = plan
    x = 1.0 * value
    if not -_INF < x < _INF:
        return x
    return _core.grid_release(sampler, x, k, None)


def _release_vector(plan: tuple[int, Any], vec: npt.ArrayLike) -> npt.NDArray[np.float64]:
    k, sampler = plan
    return _core.grid_release(sampler, np.asarray(vec, np.float64), k, None)


class _Additive:
    """What the PyDP numerical mechanisms offer PipelineDP; PyDP answers everything else
    (``memory_used``, ``noise_confidence_interval``, ...)."""

    _kind: str = ""  # "laplace" or "gaussian" (subclasses)

    def add_noise(self, value: float) -> float:
        _count(self._kind)
        return _release(self._plan, value)

    def noised_value_above_threshold(self, value: float, threshold: float) -> bool:
        return self.add_noise(value) > threshold

    def __getattr__(self, name: str) -> Any:
        if name == "_pydp":  # not yet set (copy, unpickling)
            raise AttributeError(name)
        return getattr(self._pydp, name)


class LaplaceMechanism(_Additive):
    """PyDP's ``LaplaceMechanism(epsilon, sensitivity=1.0)``: PyDP calibrates, dpfast draws."""

    _kind = "laplace"

    def __init__(self, epsilon: float, sensitivity: float = 1.0) -> None:
        self._pydp = _pydp_mech.LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)
        self.epsilon = self._pydp.epsilon
        self.sensitivity = self._pydp.sensitivity
        self.diversity = self._pydp.diversity
        self._plan = _plans.laplace(self.diversity, self.sensitivity, ceil_grid=True)

    def _add_noise_vector(self, vec: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
        # rounding d coordinates moves the vector by up to d g in l1: charged as the
        # sensitivity / d of the plan's per-coordinate charge
        _count("laplace", vec.size)
        plan = _plans.laplace(
            self.diversity, self.sensitivity / max(vec.size, 1), ceil_grid=True
        )
        return _release_vector(plan, vec)


class GaussianMechanism(_Additive):
    """PyDP's ``GaussianMechanism(epsilon, delta, sensitivity=1.0)``: PyDP calibrates sigma,
    dpfast draws."""

    _kind = "gaussian"

    def __init__(
        self,
        epsilon: float,
        delta: float,
        sensitivity: float = 1.0,
        *,
        _pydp: Any = None,
    ) -> None:
        self._pydp = _pydp or _pydp_mech.GaussianMechanism(epsilon, delta, sensitivity)
        self.epsilon = self._pydp.epsilon
        self.delta = self._pydp.delta
        self.l2_sensitivity = self._pydp.l2_sensitivity
        self.std = self._pydp.std
        self._charged = self.l2_sensitivity if _pydp is None else None
        self._plan = _plans.gauss(self.std, self._charged)

    @classmethod
    def create_from_standard_deviation(cls, std: float) -> GaussianMechanism:
        return cls(
            0.0, 0.0, _pydp=_pydp_mech.GaussianMechanism.create_from_standard_deviation(std)
        )

    def _add_noise_vector(self, vec: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
        # sqrt(d) g in l2 for d coordinates (ceil of the root, as dpfast.mechanisms)
        _count("gaussian", vec.size)
        charged = self._charged
        if charged is not None:
            charged = charged / _mech._sqrt_ceil(max(vec.size, 1))
        return _release_vector(_plans.gauss(self.std, charged), vec)


class _Namespace:
    """A module-like object standing in for a PyDP module alias."""

    def __init__(self, base: Any, **overrides: Any) -> None:
        self._base = base
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


MECHANISMS = _Namespace(
    _pydp_mech, LaplaceMechanism=LaplaceMechanism, GaussianMechanism=GaussianMechanism
)


def add_noise_vector(vec: npt.NDArray[Any], noise_params: Any) -> npt.NDArray[np.float64]:
    """VECTOR_SUM noise in one vectorised release, with PipelineDP's sensitivities."""
    ap = _ap
    l0 = noise_params.l0_sensitivity
    if noise_params.noise_kind == ap.NoiseKind.LAPLACE:
        if noise_params.norm_kind == ap.NormKind.L1:
            sens = noise_params.max_norm * l0
        elif noise_params.norm_kind == ap.NormKind.Linf:
            sens = noise_params.max_norm * vec.size * l0
        else:
            raise ValueError(
                f"Unknown or invalid norm kind {noise_params.norm_kind} for "
                "Laplace mechanism."
            )
        mech: _Additive = LaplaceMechanism(noise_params.eps, sens)
    elif noise_params.noise_kind == ap.NoiseKind.GAUSSIAN:
        if noise_params.norm_kind == ap.NormKind.L2:
            sens = noise_params.max_norm * np.sqrt(l0)
        elif noise_params.norm_kind == ap.NormKind.Linf:
            sens = noise_params.max_norm * np.sqrt(vec.size) * np.sqrt(l0)
        else:
            raise ValueError(
                f"Unknown or invalid norm kind {noise_params.norm_kind} for "
                "Gaussian mechanism."
            )
        mech = GaussianMechanism(noise_params.eps, noise_params.delta, sens)
    else:
        raise ValueError("Unknown noise kind.")
    result: npt.NDArray[np.float64] = mech._add_noise_vector(np.asarray(vec, np.float64))
    return result


# ------------------------------------------------------------------ partition selection


class _Strategy:
    """A PyDP partition-selection strategy whose coins and thresholding noise are dpfast's."""

    def __init__(self, name: str, pydp: Any, noise: tuple[str, float] | None) -> None:
        self._name = name
        self._pydp = pydp
        self._noise = noise  # None, ("laplace", b) or ("gaussian", sigma)

    def should_keep(self, n: int) -> bool:
        _count("keep")
        p = self._pydp.probability_of_keep(n)
        return bool(_random.bernoulli(min(max(p, 0.0), 1.0)))

    def noised_value_if_should_keep(self, n: int) -> float | None:
        """n + noise if that reaches PyDP's threshold, else None (thresholding strategies)."""
        if self._noise is None:
            raise AttributeError(f"{self._name} partition selection has no noised value")
        kind, scale = self._noise
        _count("keep")
        # n is an integer, on the grid already: no rounding to charge
        if kind == "laplace":
            k, sampler = _plans.laplace(scale, None, ceil_grid=True)
        else:
            k, sampler = _plans.gauss(scale, None)
        value = _core.grid_release(sampler, float(n), k, None)
        return value if value >= self._pydp.threshold else None

    def __getattr__(self, name: str) -> Any:  # probability_of_keep, epsilon, threshold, ...
        return getattr(self._pydp, name)


def create_partition_strategy(
    name: str,
    epsilon: float,
    delta: float,
    max_partitions: int,
    pre_threshold: int | None = None,
) -> _Strategy:
    args = (name, epsilon, delta, max_partitions) + (
        () if pre_threshold is None else (pre_threshold,)
    )
    pydp = _pydp_ps.create_partition_strategy(*args)
    if name == "laplace":
        noise = ("laplace", max_partitions / epsilon)
    elif name == "gaussian":
        noise = (
            "gaussian",
            _pydp_mech.GaussianMechanism(epsilon, delta / 2, math.sqrt(max_partitions)).std,
        )
    else:
        noise = None
    return _Strategy(name, pydp, noise)


PARTITION_SELECTION = _Namespace(
    _pydp_ps, create_partition_strategy=create_partition_strategy
)


# ------------------------------------------------------------------ exponential mechanism


def _exponential_apply(self: Any, eps: float, inputs_to_score_col: Sequence[Any]) -> Any:
    """PipelineDP's ExponentialMechanism.apply on dpfast's exact exponential mechanism."""
    f = self._scoring_function
    scores = np.array([f.score(k) for k in inputs_to_score_col], dtype=np.float64)
    _count("exponential")
    idx = _sel.exponential_release(
        scores,
        epsilon=eps,
        sensitivity=f.global_sensitivity,
        monotonic=bool(f.is_monotonic),
        rng=_core.secure_rng(None),
    )  # PipelineDP accounts for it
    return inputs_to_score_col[idx]


# ------------------------------------------------------------------ install

_ORIGINALS: dict[str, Any] = {}


def install() -> bool:
    """Route PipelineDP's noise through dpfast in this process (idempotent).  Returns
    True if this call installed it."""
    with _LOCK:
        if _ORIGINALS:
            return False
        _ORIGINALS["dp_mechanisms"] = _dpc.dp_mechanisms
        _ORIGINALS["add_noise_vector"] = _dpc.add_noise_vector
        _ORIGINALS["partition_selection"] = _ps.partition_selection
        _ORIGINALS["apply"] = _dpc.ExponentialMechanism.apply
        _dpc.dp_mechanisms = MECHANISMS
        _dpc.add_noise_vector = add_noise_vector
        _ps.partition_selection = PARTITION_SELECTION
        _dpc.ExponentialMechanism.apply = _exponential_apply
    _log.warning(
        "dpfast: PipelineDP %s noise now drawn by dpfast in process %d",
        pipeline_dp.__version__,
        os.getpid(),
    )
    return True


def uninstall() -> None:
    """Restore PipelineDP's own bindings (idempotent)."""
    with _LOCK:
        if not _ORIGINALS:
            return
        _dpc.dp_mechanisms = _ORIGINALS.pop("dp_mechanisms")
        _dpc.add_noise_vector = _ORIGINALS.pop("add_noise_vector")
        _ps.partition_selection = _ORIGINALS.pop("partition_selection")
        _dpc.ExponentialMechanism.apply = _ORIGINALS.pop("apply")


def is_installed() -> bool:
    return bool(_ORIGINALS)
