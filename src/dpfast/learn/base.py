"""The base-learner protocol of dpfast.learn.

A base learner for :class:`~dpfast.learn.PrivateBoostingClassifier` is any object with

``epsilon``, ``delta``
    Its privacy: (epsilon, delta)-DP with respect to replacing **one position** of the
    ordered k-tuple it is trained on (duplicates included).  The booster's accounting
    (Lemma 6.5', dpfast's correction of Lemma 6.5 of Dwork, Rothblum & Vadhan 2010; docs/learn.md) pays for a person who occupies several
    positions; the learner must not rescale for it, and must never see the sampling
    weights or the row indices.
``neighbouring``
    Exactly the string ``"replace-one-position"``; anything else is refused.
``fit_sample(Z_k, y_k, rng)``
    Trains on the k-tuple (rows of the encoded features ``Z_k``, labels ``y_k`` in
    {-1, +1} as int8) with fresh randomness from ``rng`` (a numpy BitGenerator) and returns
    a hypothesis ``h`` with ``h.predict(Z)`` giving +-1 for every row of ``Z``.
``encode(columns)`` (optional)
    A public, row-by-row transform of the feature columns (a list of 1-d arrays) into
    the ``Z`` the learner and its hypotheses read, applied once per fit and once per
    predict.  Without it, ``Z`` is the float64 matrix of the features.
``check(n_features)`` (optional)
    Validates the learner's public plan for this many features (e.g. its thresholds);
    called before the budget is charged.
``get_params()`` (optional)
    For scikit-learn style nesting (``base_learner__epsilon``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy.typing as npt

from .. import _validation as _v
from .._errors import PrivacyParameterError
from . import _data

__all__ = ["NEIGHBOURING", "check_base_learner", "encode"]

NEIGHBOURING = "replace-one-position"


def check_base_learner(learner: Any) -> tuple[float, float]:
    """(epsilon, delta) the learner declares; TypeError/PrivacyParameterError otherwise."""
    if not callable(getattr(learner, "fit_sample", None)):
        raise TypeError(
            f"base_learner must have fit_sample(Z_k, y_k, rng); "
            f"{type(learner).__name__} does not"
        )
    for attr in ("epsilon", "delta", "neighbouring"):
        if not hasattr(learner, attr):
            raise TypeError(
                f"base_learner must declare {attr!r} (see dpfast.learn.base); "
                f"{type(learner).__name__} does not"
            )
    if learner.neighbouring != NEIGHBOURING:
        raise PrivacyParameterError(
            f"base_learner.neighbouring must be {NEIGHBOURING!r} (DP per position of the "
            f'k-tuple, docs/learn.md "Base learner"); got {learner.neighbouring!r}'
        )
    eps = _v.epsilon(learner.epsilon, "base_learner.epsilon")
    delta = _v.delta(learner.delta, "base_learner.delta")
    if not math.isfinite(eps):
        raise PrivacyParameterError("base_learner.epsilon must be finite")
    return eps, delta


def encode(learner: Any, cols: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """The learner's encoding of the feature columns (public, row by row)."""
    enc = getattr(learner, "encode", None)
    if enc is None:
        return _data.matrix(cols)
    result: npt.NDArray[Any] = enc(cols)
    return result
