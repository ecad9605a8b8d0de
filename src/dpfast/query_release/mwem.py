"""MWEM (Hardt, Ligett, McSherry 2012, "A Simple and Practical Algorithm for Differentially
Private Data Release", NeurIPS)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, NamedTuple, cast

import numpy as np

from .. import _core, _insecure
from .. import _validation as _v
from .. import accounting as _acc
from .. import mechanisms as _mech
from .. import random as _random
from .. import selection as _sel
from .._active import NO_BUDGET
from .._active import label as _label
from .._errors import PrivacyParameterError
from .._privacy import charge, deflate, inflate
from ._mw import MWState, one_way_prior
from ._types import Budget, FloatArray, Rng
from .baselines import plan_noise
from .cost import PrivacyCost, charged_amounts, check_budget
from .domain import Histogram
from .workloads import LinearWorkload, MarginalWorkload, check_workload

__all__ = ["MWEM", "MWEMResult"]


class MWEMResult(NamedTuple):
    """``histogram``: the synthetic counts (a public :class:`Histogram`, total n_public);
    ``answers``: the workload's answers on it; ``log``: one ``(round, unit, measured)``
    per round (unit = query or marginal index, measured = the noisy value(s));
    ``privacy``: the :class:`PrivacyCost` charged."""

    histogram: Histogram
    answers: FloatArray
    log: tuple[tuple[int, int, FloatArray], ...]
    privacy: PrivacyCost


class MWEM:
    """MWEM: T rounds of (exponential-mechanism selection, Laplace measurement, MW update).

    Round i (Hardt, Ligett, McSherry 2012, Algorithm 1, in counts): select a query (or a
    whole marginal, ``unit="group"``) with probability ∝ exp(ε_r · s / 2), where
    ``s = |q(A) - q(B)|`` (the L1 error of the marginal's cells for a group), sensitivity 1;
    measure it with Lap(1/ε_r) per cell (= Lap(2T/ε) without a warm start), or with
    discrete Gaussian noise (``measure="gaussian"``, zCDP accounting, beyond the paper); update
    A(x) ← A(x)·exp(q(x)(m − q(A))/(2n)) for every measured cell, then replay all past
    measurements ``passes - 1`` times.  ε_r = (ε − ε_init)/(2T) for both the selection
    and the measurement.

    Parameters
    ----------
    workload : MarginalWorkload or LinearWorkload
        Marginal cells, or a general [0, 1] query matrix (each query changes by at most 1
        per record, so the selection score and a measurement keep sensitivity 1).
    epsilon : float
        Total ε, including ``init``'s share.
    rounds : int
        T >= 1.
    n_public : float
        The public number of records n (never read from the data; erratum E5).
    unit : {"group", "query"}
        Measure a whole marginal per round (its cell vector has L1 sensitivity 1, so it
        costs as much as one cell; smartnoise's "cuboids") or a single cell.  A
        :class:`LinearWorkload` has no groups: both units measure one query.
    select : {"exponential", "gumbel", "permute_and_flip"}
        "exponential" and "gumbel" are the same law (the exact exponential mechanism on
        the secure path; Gumbel-max on the fast path).  "permute_and_flip" (McKenna &
        Sheldon 2020) has the same ε and is never less accurate in expectation; it is
        beyond the paper.
    measure : {"laplace", "gaussian"}
        ``"gaussian"`` (needs ``delta > 0``): (ε, δ) is turned into the largest ρ-zCDP
        budget that converts back to it (``accounting.zcdp_budget``); ρ_init = ε_init²/2
        goes to the warm start and each round gets ρ_r = (ρ − ρ_init)/T: half for the
        selection (ε_sel = 2 sqrt(ρ_r) for the exponential mechanism, sqrt(ρ_r) for
        permute-and-flip; see Privacy), half for exact discrete Gaussian noise with
        σ² = 1/ρ_r on the floored counts.
    delta : float
        δ of the Gaussian variant (0 for Laplace).
    passes : int
        MW passes per round over all measurements (1 = as analysed; 10 = Hardt's code).
    replay : {"joint", "sequential"}
        How passes 2..``passes`` re-apply the past measurements (pass 1 always applies the
        new measurement alone, as analysed).  ``"sequential"``: one measurement after
        the other, each on the iterate the previous one left (Hardt's code; the
        prototype of docs/release.md).  ``"joint"`` (default): every measured cell's MW
        factor is computed on the same iterate and all are applied together, one sweep
        over X per pass instead of one per measured marginal.  Both are
        post-processing of the same measurements (privacy unchanged); MW's step
        corrects only about p/2 of a cell's error (p its share of n), so the two
        orders reach the same accuracy -- the regression test checks the prototype's
        error within 2 standard errors over 20 seeds.
    output : {"last", "average"}
        Last iterate (what practitioners run) or the average of A_1..A_T (the theorem's).
    init : float or None
        ε_init: warm start from the product of noisy one-way marginals, Lap(d/ε_init)
        each, taken out of ``epsilon``.
    exclude_measured : bool
        Select only among units not measured yet (a data-independent restriction of
        the candidates; sampled exactly, no retries -- unlike smartnoise's fallback;
        docs/release.md).  When every unit is measured all are candidates again, and a
        repeated unit's measurements are averaged.
    rng, mode
        Randomness and path of every draw (``mode="fast"``: simulation only).
    budget
        Charged :attr:`privacy_cost` once in :meth:`run`, before the data is read (None:
        the budget active at that moment, ``with b.active():``, if any).
    label : str, optional
        Recorded with the charge (default ``"MWEM(T=..., unit=...)"``).

    Privacy
    -------
    ε-DP by basic composition: ε_init + T (ε_r + ε_r) = ε (each selection is ε_r-DP,
    Dwork & Roth Thm 3.10 / McKenna & Sheldon 2020; each measurement ε_r-DP, Thm 3.6,
    the measured unit has L1 sensitivity 1).  Also ρ-zCDP with
    ρ = ε_init²/2 + T (ρ_sel + ε_r²/2), where ρ_sel is ε_r²/8 for the exponential
    mechanism ("exponential", "gumbel": ε_r-bounded range, Durfee & Rogers 2019; Cesar &
    Rogers 2021) and ε_r²/2 for "permute_and_flip", which is not bounded range for
    MWEM's non-monotone scores (:func:`dpfast.selection.selection_rho`); Laplace is
    ε_r²/2-zCDP (Bun & Steinke 2016).  ε_r = (ε − ε_init)/(2T) is rounded down.
    Replays, averaging and the output choice are post-processing, and so is the
    restart from uniform weights when noisy measurements far outside [0, n] leave
    none (their sum 0, inf or NaN): a run never fails after its charge.
    ``measure="gaussian"``: ρ-zCDP with ρ = ``zcdp_budget(ε, δ)``: per round the
    selection costs ρ_r/2 by the same rule (ε_sel = √(4ρ_r) for the exponential
    mechanism, √ρ_r for permute-and-flip: a permute-and-flip selection gets half the ε
    of an exponential one at the same ρ), and the discrete Gaussian on a
    unit of L2 sensitivity 1 is 1/(2σ²) = ρ_r/2 (Canonne, Kamath, Steinke 2020, Thm 14);
    composed (Bun & Steinke 2016, Lemma 2.3) and converted back, (ε, δ)-DP.

    Accuracy
    --------
    For the average iterate with ``passes=1``: max error ≤ ``2n sqrt(ln|X|/T) +
    10 T ln|Q|/ε`` with probability ≥ ``1 − 2T/|Q|`` (Hardt, Ligett & McSherry 2012, Thm 2.2;
    vacuous at n ≈ 5e4).  The practical options carry no theorem; their
    measured accuracy on UCI Adult is in docs/release.md.  Laplace on the marginals beats
    MWEM on 2-way marginals for ε ≥ 0.5.

    References
    ----------
    M. Hardt, K. Ligett, F. McSherry, A simple and practical algorithm for differentially
    private data release, NeurIPS 2012.  Dwork & Roth 2014, §3.3-3.4, §4.2.
    """

    def __init__(
        self,
        workload: MarginalWorkload | LinearWorkload,
        *,
        epsilon: float,
        rounds: int,
        n_public: float,
        unit: str = "group",
        select: str = "exponential",
        measure: str = "laplace",
        delta: float = 0.0,
        passes: int = 10,
        output: str = "last",
        init: float | None = None,
        exclude_measured: bool = True,
        replay: str = "joint",
        rng: Rng = None,
        mode: str = "secure",
        budget: Budget = None,
        label: str | None = None,
    ) -> None:
        self.workload = check_workload(workload)
        self.epsilon = _v.epsilon(epsilon)
        self.rounds = _v.integer("rounds", rounds, minimum=1, maximum=10**6)
        self.n_public = _v.positive("n_public", n_public)
        self.unit = _v.choice("unit", unit, ("group", "query"))
        self.select = _v.choice(
            "select", select, ("exponential", "gumbel", "permute_and_flip")
        )
        self.passes = _v.integer("passes", passes, minimum=1, maximum=10**4)
        self.output = _v.choice("output", output, ("last", "average"))
        self.replay = _v.choice("replay", replay, ("joint", "sequential"))
        self.init = None if init is None else _v.epsilon(init, "init")
        if not isinstance(exclude_measured, bool):
            raise TypeError("exclude_measured must be a bool")
        self.exclude_measured = exclude_measured
        self.mode = _insecure.mode(mode)
        self.rng = _core.secure_rng(rng)
        self.budget = check_budget(budget)
        self.label = _label(label, f"MWEM(T={self.rounds}, unit={self.unit})")
        eps_init = self.init or 0.0
        if not eps_init < self.epsilon:
            raise PrivacyParameterError(
                f"init (the warm start's ε) must be < epsilon; got {init!r} >= {epsilon!r}"
            )
        self.measure = _v.choice("measure", measure, ("laplace", "gaussian"))
        self.delta = _v.delta(delta)
        # the zCDP rule of the selection (dpfast.selection.selection_rho): the exponential
        # mechanism is bounded range, permute-and-flip is not (issue 22)
        self._select_law = (
            "permute_and_flip" if self.select == "permute_and_flip" else "exponential"
        )
        if self.measure == "laplace":
            if self.delta != 0.0:
                raise PrivacyParameterError("delta applies to measure='gaussian' only")
            # rounded down, so that ε_init + 2T ε_r <= ε holds exactly, not only up to
            # the rounding of a float division: the largest float whose decimal (what
            # the selection and the Laplace calibrate for, _v.epsilon) is <= the share
            self.eps_round = _v.decimal_down(
                (_v.charged(self.epsilon) - _v.charged(eps_init)) / (2 * self.rounds)
            )
            self.rho = None
        else:
            if self.delta == 0.0:
                raise PrivacyParameterError("measure='gaussian' needs delta > 0")
            # the whole (ε, δ) as zCDP (Bun & Steinke 2016, Prop. 1.3 / CKS 2020 Cor. 13),
            # minus the warm start's ε_init²/2; half of each round's share to the
            # selection (selection_rho(law, ε_sel) = ρ_r/2: ε_sel = √(4ρ_r) for the
            # exponential mechanism, √ρ_r for permute-and-flip), half to the Gaussian.
            self.rho = _acc.zcdp_budget(self.epsilon, self.delta)
            rho_round = (self.rho - eps_init * eps_init / 2.0) / self.rounds
            if not rho_round > 0.0:
                raise PrivacyParameterError(
                    "init's ε_init²/2 leaves no zCDP budget for the rounds"
                )
            per_eps2 = float(_sel.selection_rho(self._select_law, 1.0))  # 1/8 or 1/2
            self.eps_round = deflate(math.sqrt(rho_round / 2.0 / per_eps2))
            # σ² = 1/(2 · ρ_round/2), rounded up
            self.sigma2 = inflate(1.0 / rho_round)
            if not math.isfinite(self.sigma2):
                raise PrivacyParameterError(
                    "epsilon and delta give a zCDP share per round too small for the "
                    f"Gaussian's variance; got epsilon={epsilon!r}, delta={delta!r}, "
                    f"rounds={rounds!r}"
                )
        if not self.eps_round > 0.0:
            raise PrivacyParameterError("epsilon / (2 rounds) underflows")
        self._plan()

    def _plan(self) -> None:
        """Prepare every sampler a run draws from (public parameters only), so that
        what they cannot serve is refused here, before any budget is charged."""
        wl = self.workload
        if self.unit == "group" and isinstance(wl, MarginalWorkload):
            d = max(
                wl.marginal_slice(g).stop - wl.marginal_slice(g).start
                for g in range(len(wl.masks))
            )
        else:
            d = 1
        if self.measure == "laplace":
            plan_noise(self.eps_round, None, 1.0, d, self.mode)
        else:
            _random.discrete_gaussian(sigma2=self.sigma2, size=0, rng=self.rng)
        if self.mode == "secure":
            _sel._grid(_v.epsilon(self.eps_round), 1.0, False, False)
            if self.select == "permute_and_flip":  # its sampler has a limit of its own
                _sel._noise_grid(_v.epsilon(self.eps_round), 1.0, False, np.zeros(1))
        if self.init:  # the warm start: Lap(d/ε_init) on the d one-way marginals' cells
            plan_noise(
                self.init, None, float(wl.domain.ndim), sum(wl.domain.shape), self.mode
            )

    @property
    def privacy_cost(self) -> PrivacyCost:
        e = self.eps_round
        eps_init = self.init or 0.0
        if self.measure == "gaussian":
            rho_total = cast(float, self.rho)
            parts: tuple[tuple[str, float], ...] = (
                (("init", eps_init),) if self.init else ()
            ) + (("rho_per_round", (rho_total - eps_init * eps_init / 2.0) / self.rounds),)
            return PrivacyCost(self.epsilon, self.delta, self.rho, parts)
        # basic composition: the parts were rounded down, their exact sum is <= epsilon
        parts = ((("init", eps_init),) if self.init else ()) + (
            ("selection", self.rounds * e),
            ("measurement", self.rounds * e),
        )
        # zCDP: ε_init²/2 + T (selection_rho(law, ε_r) + ε_r²/2), exact, rounded up
        # (ε_r at the larger of its binary and decimal values)
        e_x = max(Fraction(e), _v.decimal_of(e))
        rho = _v.charged(eps_init) ** 2 / 2 + self.rounds * (
            _sel.selection_rho(self._select_law, e_x) + e_x**2 / 2
        )
        return PrivacyCost(self.epsilon, 0.0, _v.float_up(rho), parts)

    def run(self, histogram: Histogram) -> MWEMResult:
        """Charge the budget, then run T rounds on ``histogram``; returns
        :class:`MWEMResult`."""
        if not isinstance(histogram, Histogram) or histogram.domain != self.workload.domain:
            raise TypeError("histogram must be a Histogram over the workload's domain")
        cost = self.privacy_cost
        charge(_v.budget(self.budget), charged_amounts(cost), self.label)
        wl, n, rng, mode = self.workload, self.n_public, self.rng, self.mode
        prior = one_way_prior(histogram, self.init, rng, mode) if self.init else None
        state = MWState(wl.domain, n, prior)
        truth = wl.answer(histogram)
        group = self.unit == "group"
        n_units = wl.n_units if group else wl.n_queries
        measured = np.zeros(n_units, dtype=bool)
        sums = np.zeros(wl.n_queries)  # sum of measurements per query
        times = np.zeros(wl.n_queries)  # how many
        acc = np.zeros(wl.domain.size) if self.output == "average" else None
        log = []
        est = np.empty(wl.n_queries)
        for r in range(self.rounds):
            wl.answer(state.w, est)
            est *= n / state.w.sum()
            err = np.abs(est - truth)
            scores = np.add.reduceat(err, wl.offsets[:-1]) if group else err
            cand = np.flatnonzero(~measured) if self.exclude_measured else None
            if cand is None or cand.size == 0:
                cand = np.arange(n_units)
            unit = int(cand[self._choose(scores[cand])])
            measured[unit] = True
            qs = wl.marginal_slice(unit) if group else slice(unit, unit + 1)
            noisy = self._measure(truth[qs])
            sums[qs] += noisy
            times[qs] += 1
            log.append((r, unit, noisy.copy()))
            self._replay(state, wl, sums, times, measured, group, first=unit)
            state.restart_if_degenerate()
            if acc is not None:
                acc += state.distribution()
        dist = acc / self.rounds if acc is not None else state.distribution()
        synth = Histogram(wl.domain, n * dist)
        return MWEMResult(synth, wl.answer(synth.counts), tuple(log), cost)

    def _measure(self, values: FloatArray) -> FloatArray:
        """Laplace (ε_r, L1 sensitivity 1) or Gaussian noise on the measured unit."""
        if self.measure == "laplace":
            return cast(
                FloatArray,
                _mech.laplace_mechanism(
                    values,
                    epsilon=self.eps_round,
                    sensitivity=1.0,
                    rng=self.rng,
                    mode=self.mode,
                    budget=NO_BUDGET,
                ),
            )  # charged in run
        if self.mode == "fast":
            return values + _random.normal(
                scale=math.sqrt(self.sigma2), size=values.shape, rng=self.rng
            )
        # Exact discrete Gaussian on the floored counts: adding a record adds exactly 1
        # to one cell, and floor(c + 1) = floor(c) + 1, so the L2 sensitivity stays 1 and
        # the release is 1/(2σ²)-zCDP (Canonne, Kamath, Steinke 2020, Thm 14).
        base = np.floor(values)
        return cast(
            FloatArray,
            base
            + _random.discrete_gaussian(
                sigma2=self.sigma2, size=values.shape, rng=self.rng
            ),
        )

    def _choose(self, scores: FloatArray) -> int:
        # MWEM's exponent is ε_r s / 2 with sensitivity 1: Dwork & Roth's EM with Δ = 1.
        if self.select == "permute_and_flip":
            return int(
                _sel.permute_and_flip(
                    scores,
                    epsilon=self.eps_round,
                    sensitivity=1.0,
                    rng=self.rng,
                    mode=self.mode,
                    budget=NO_BUDGET,
                )
            )  # charged in run
        return int(
            _sel.exponential_mechanism(
                scores,
                epsilon=self.eps_round,
                sensitivity=1.0,
                rng=self.rng,
                mode=self.mode,
                budget=NO_BUDGET,
            )
        )  # charged in run

    def _replay(
        self,
        state: MWState,
        wl: MarginalWorkload | LinearWorkload,
        sums: FloatArray,
        times: FloatArray,
        measured: Any,
        group: bool,
        first: int,
    ) -> None:
        """The new measurement once, then every measurement passes - 1 times
        (post-processing; repeated units use the mean of their measurements)."""
        units = np.flatnonzero(measured)
        if self.replay == "joint":
            if group and isinstance(wl, MarginalWorkload):
                sl = wl.marginal_slice(first)
                state.fit_marginal(int(wl.masks[first]), sums[sl] / times[sl])
            else:
                idx = np.asarray([first], dtype=np.int64)
                wl._fit_queries(state, idx, sums[idx] / times[idx], 1)
            targets = np.full(wl.n_queries, np.nan)
            np.divide(sums, times, out=targets, where=times > 0)
            wl._joint_fit(state, targets, self.passes - 1)
            return
        if group and isinstance(wl, MarginalWorkload):
            for p in range(self.passes):
                for g in [first] if p == 0 else units:
                    sl = wl.marginal_slice(int(g))
                    state.fit_marginal(int(wl.masks[g]), sums[sl] / times[sl])
            return
        # one query per unit (a LinearWorkload's groups are its queries): the first
        # pass applies the new measurement, then passes - 1 sweeps in one C call
        first_idx = np.asarray([first], dtype=np.int64)
        wl._fit_queries(state, first_idx, sums[first_idx] / times[first_idx], 1)
        if self.passes > 1:
            wl._fit_queries(state, units, sums[units] / times[units], self.passes - 1)
