"""Boosting for Queries (Dwork, Rothblum, Vadhan 2010, Fig. 1 = Dwork & Roth Fig. 6.1)
with the NoisyFit base synopsis generator (Dwork & Roth Sec. 6.2)."""

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
from .._privacy import charge, inflate
from ..accounting._numeric import bisect_least
from ._mw import MWState, one_way_prior
from ._types import Budget, FloatArray, IntArray, Rng
from .baselines import plan_noise
from .cost import PrivacyCost, charged_amounts, check_budget
from .domain import Histogram
from .workloads import LinearWorkload, MarginalWorkload, check_workload

__all__ = ["BoostingForQueries", "BoostingResult", "boosting_alpha", "reweight"]


def boosting_alpha(eta: float) -> float:
    """α = ½ ln((1 + 2η)/(1 − 2η)) (DRV 2010 Fig. 1)."""
    return 0.5 * math.log((1.0 + 2.0 * eta) / (1.0 - 2.0 * eta))


def reweight(d: FloatArray, lam: float, mu: float) -> FloatArray:
    """a = 1 if d ≤ λ, −1 if d ≥ λ + μ, else 1 − 2(d − λ)/μ: clip(1 − 2(d − λ)/μ, −1, 1)
    (DRV 2010 Fig. 1 step 2).  ``|a − a'| ≤ 2ρ/μ`` when ``|d − d'| ≤ ρ`` (Claim 4.4)."""
    if mu == math.inf:
        return np.ones_like(d)
    return np.clip(1.0 - 2.0 * (d - lam) / mu, -1.0, 1.0)


class BoostingResult(NamedTuple):
    """``answers``: the median over the T synopses of each workload query (counts);
    ``synopses``: ``(T, |Q|)`` answers of each round's synthetic histogram (public);
    ``weights``: the final distribution D over the queries (computed from the data: it
    is *not* released by the mechanism, and is returned only for analysis when
    ``return_weights=True``, else None); ``privacy``: the cost."""

    answers: FloatArray
    synopses: FloatArray
    weights: FloatArray | None
    privacy: PrivacyCost


class BoostingForQueries:
    """Boosting for Queries with the ``NoisyFit`` base synopsis generator.

    Round t = 1..T: draw k queries i.i.d. from D_t (D_1 uniform); NoisyFit answers each
    distinct one with Lap(k/ε_base) (the k-vector of counts has L1 sensitivity ≤ k;
    duplicates share one answer) and fits a synthetic histogram A_t by ``fit_passes`` MW
    passes from the prior; then, for every q, ``d = |q(x) − q(A_t)|``,
    a = clip(1 − 2(d − λ)/μ, −1, 1), D_{t+1} ∝ exp(−α Σ_{j≤t} a_j).  The answer is the
    median over t of q(A_t).

    The faithful reference mechanism of the seed; on marginal workloads at n ≈ 5e4 it is
    *not* the best choice: MWEM (group unit) and Laplace on the marginals are far more
    accurate (measured on UCI Adult: docs/release.md).  Use it for general low-sensitivity
    query families where nothing else applies.

    Parameters
    ----------
    workload : MarginalWorkload or LinearWorkload
        Marginal cells or a general [0, 1] query matrix (every query has sensitivity
        ρ = 1 count).
    epsilon : float
        Total pure ε (init + T ε_base + sampling).
    n_public : float
    rounds : int
        T, odd (the median); ``T = ceil(ln|Q|/(2η²))`` for the theorem (erratum B4), 1-9 in
        practice.
    k : int
        Queries sampled per round.
    eta : float in (0, 1/2)
        The base generator's advantage: it must be λ-accurate on 1/2 + η of D_t's mass
        (erratum B1).
    sample_share : float in (0, 1)
        s, the share of ε − ε_init spent on the draws from D_t; μ is solved from it.
    lam : float, optional
        λ in counts; default 2 k/ε_base (twice the base Laplace scale).
    fit_passes : int
    fit : {"joint", "sequential"}
        How NoisyFit's MW passes apply the noisy answers: ``"sequential"``, one query
        after the other (the prototype of docs/release.md); ``"joint"`` (default), all
        factors computed on the same iterate and applied in one sweep per pass (see
        :class:`MWEM` ``replay``).  Post-processing either way.
    init : float, optional
        ε_init of a one-way-marginal warm start (the prior of every round's fit).
    round_to : int, optional
        Theory-faithful mode (DRV Thm 5.3): replace A_t by n′ = round_to records sampled
        from it (post-processing).
    noise : {"laplace", "gaussian"}, delta : float
        NoisyFit's noise.  ``"gaussian"`` (δ > 0) accounts in zCDP (erratum B6): see
        Privacy.
    composition : {"basic", "advanced"}
        How the k(T − 1) draws from D_t compose (``noise="laplace"``).  ``"advanced"``
        needs ``delta > 0``: the draws are composed by advanced composition with
        δ′ = delta (erratum B2 with B5's per-round ε_t), so μ -- and the error
        bound λ + μ -- is smaller for the same (ε, δ); see Privacy.
    rng, mode, budget
        As elsewhere; ``budget`` is charged :attr:`privacy_cost` in :meth:`run` before
        the data is read (None: the budget active at that moment, if any).
    label : str, optional
        Recorded with the charge (default ``"BoostingForQueries(T=..., k=...)"``).

    Privacy
    -------
    Pure ε-DP with ε = ε_init + T ε_base + 2αkρT(T−1)/μ (basic composition): each of
    the k draws of round t is the exponential mechanism with utility −Σ_{j<t} a_j
    (sensitivity 2(t−1)ρ/μ, ρ = 1 for counting queries) at rate α, i.e.
    ε_t = 4α(t−1)ρ/μ-DP (erratum B5: round 1 is free; DRV Claim 4.4 charge 4αTρ/μ to
    every draw), and each NoisyFit is ε_base-DP (Dwork & Roth Thm 3.6).  μ is set so the
    sampling costs exactly s (ε − ε_init).  ρ-zCDP: the draws are ε_t-bounded-range,
    ε_t²/8-zCDP (:func:`dpfast.selection.selection_rho`; erratum B6:
    ρ_sample = (k/8) Σ ε_t²), plus ε_base²/2 per round and
    ε_init²/2 (Bun & Steinke 2016).  ``noise="gaussian"``: the whole budget is
    ρ = zcdp_budget(ε, δ); μ is solved so that (k/8) Σ_t ε_t² is ``sample_share`` of
    ρ − ε_init²/2, and each NoisyFit adds discrete Gaussian noise of σ² = k/(2ρ_base)
    (L2 sensitivity √k); the total converts back to (ε, δ) (Bun & Steinke 2016).
    ``composition="advanced"`` (erratum B2; DRV Thm 4.1's reading): (ε, δ)-DP with
    ε = ε_init + T ε_base + ε′_sample, where the k draws of each round t ≥ 2 are
    ε_t-DP with ε_t fixed in advance, so by heterogeneous advanced composition
    (Dwork & Roth Thm 3.20 and its proof; :func:`dpfast.accounting.heterogeneous_advanced_composition`)
    ε′_sample = sqrt(2 ln(1/δ) k Σ_t ε_t²) + k Σ_t ε_t (e^{ε_t} − 1) with δ′ = δ, or
    the basic k Σ_t ε_t when that is smaller (pure, so it holds with any δ); μ is the
    smallest (up to a bisection's resolution, rounded up) for which this is
    ``sample_share`` of ε − ε_init.  The base runs and the warm start compose
    basically, as in DRV Thm 4.1.

    Accuracy
    --------
    DRV Thm 4.1: (λ + μ)-accurate on all of Q with probability ≥ 1 − T e^{−κ} if the base
    generator is (k, λ, η, e^{−κ})-accurate and ``T > ln|Q|/(2η²)`` (B4).  NoisyFit has no
    proved (k, λ, η) guarantee; measured accuracy is in docs/release.md.

    References
    ----------
    C. Dwork, G. Rothblum, S. Vadhan, Boosting and Differential Privacy, FOCS 2010
    (Fig. 1, Thm 4.1, Claims 4.3-4.4).  Dwork & Roth 2014, ch. 6.
    """

    def __init__(
        self,
        workload: MarginalWorkload | LinearWorkload,
        *,
        epsilon: float,
        n_public: float,
        rounds: int,
        k: int,
        eta: float = 0.2,
        sample_share: float = 0.2,
        lam: float | None = None,
        fit_passes: int = 20,
        fit: str = "joint",
        init: float | None = None,
        round_to: int | None = None,
        noise: str = "laplace",
        delta: float = 0.0,
        composition: str = "basic",
        rng: Rng = None,
        mode: str = "secure",
        budget: Budget = None,
        label: str | None = None,
    ) -> None:
        self.workload = check_workload(workload)
        self.epsilon = _v.epsilon(epsilon)
        self.n_public = _v.positive("n_public", n_public)
        self.rounds = _v.integer("rounds", rounds, minimum=1, maximum=10**4)
        if self.rounds % 2 == 0:
            raise PrivacyParameterError(f"rounds must be odd (the median); got {rounds!r}")
        self.k = _v.integer("k", k, minimum=1, maximum=10**8)
        eta = _v.positive("eta", eta)
        if not eta < 0.5:
            _v._fail("eta", "in (0, 1/2)", eta)
        self.eta = eta
        share = _v.positive("sample_share", sample_share)
        if not share < 1.0:
            _v._fail("sample_share", "in (0, 1)", sample_share)
        self.sample_share = share
        self.fit_passes = _v.integer("fit_passes", fit_passes, minimum=0, maximum=10**4)
        self.fit = _v.choice("fit", fit, ("joint", "sequential"))
        self.init = None if init is None else _v.epsilon(init, "init")
        self.round_to = (
            None
            if round_to is None
            else _v.integer("round_to", round_to, minimum=1, maximum=2**62)
        )
        self.mode = _insecure.mode(mode)
        self.rng = _core.secure_rng(rng)
        self.budget = check_budget(budget)
        self.label = _label(label, f"BoostingForQueries(T={self.rounds}, k={self.k})")
        eps_init = self.init or 0.0
        if not eps_init < self.epsilon:
            raise PrivacyParameterError("init must be < epsilon")
        self.noise = _v.choice("noise", noise, ("laplace", "gaussian"))
        self.delta = _v.delta(delta)
        self.composition = _v.choice("composition", composition, ("basic", "advanced"))
        if self.composition == "advanced":
            if self.noise != "laplace" or self.delta == 0.0:
                raise PrivacyParameterError(
                    "composition='advanced' needs noise='laplace' and delta > 0 (the δ′ "
                    "of the draws)"
                )
        elif (self.noise == "gaussian") != (self.delta > 0.0):
            raise PrivacyParameterError(
                "noise='gaussian' needs delta > 0 and noise='laplace' needs delta = 0"
            )
        rest = self.epsilon - eps_init
        rest_x = _v.charged(self.epsilon) - _v.charged(eps_init)  # exact
        T = self.rounds
        self.alpha = boosting_alpha(eta)
        self.rho_q = 1.0  # sensitivity of d = |q(x) - A_t(q)|, counts
        self.rho: float | None = None
        self.mu: float = math.inf
        self.eps_base: float | None = None  # the Laplace plan's per-round ε
        try:
            if self.noise == "gaussian":
                self._gaussian_plan(eps_init, share, lam)
            else:
                self._laplace_plan(eps_init, share, lam, rest, rest_x)
        except (ZeroDivisionError, OverflowError):
            raise PrivacyParameterError(
                "epsilon is outside the range this plan can be computed in (its noise "
                f"scales over- or underflow doubles); got epsilon={epsilon!r}"
            ) from None
        if not (
            0.0 < self.mu
            and (self.eps_base is None or self.eps_base > 0.0)
            and math.isfinite(self.lam)
        ):
            raise PrivacyParameterError(
                f"epsilon is outside the range this plan can be computed in; got "
                f"epsilon={epsilon!r}"
            )
        # every sampler a run draws from, prepared now: refused here, not after the charge
        if self.noise == "laplace":
            plan_noise(cast(float, self.eps_base), None, float(self.k), self.k, self.mode)
        else:
            _random.discrete_gaussian(sigma2=self.sigma2, size=0, rng=self.rng)
        if self.init:  # the warm start: Lap(d/ε_init) on the d one-way marginals' cells
            dom = self.workload.domain
            plan_noise(self.init, None, float(dom.ndim), sum(dom.shape), self.mode)
        for t in range(2, T + 1):  # the draws from D_t (_draw)
            eps_t, sens_t = self._eps_draw(t), 2.0 * (t - 1) * self.rho_q / self.mu
            if not (0.0 < eps_t < math.inf and 0.0 < sens_t < math.inf):
                raise PrivacyParameterError(
                    f"round {t}'s draws have epsilon {eps_t!r} and sensitivity {sens_t!r}, "
                    f"outside the doubles; got epsilon={epsilon!r}, eta={eta!r}, "
                    f"sample_share={sample_share!r}"
                )
            if self.mode == "secure":
                _sel._grid(_v.epsilon(eps_t), sens_t, False, False)

    def _laplace_plan(
        self,
        eps_init: float,
        share: float,
        lam: float | None,
        rest: float,
        rest_x: Fraction,
    ) -> None:
        T = self.rounds
        if T == 1:
            # D_1 is uniform: no draw depends on the data, no sampling cost
            self.eps_base = _v.decimal_down(rest_x)
            self.mu = math.inf
        else:
            # rounded down (the largest float whose decimal is <= the share), so the
            # parts never sum above epsilon by a rounding
            self.eps_base = _v.decimal_down((1 - Fraction(share)) * rest_x / T)
            # B5: eps_sample = 2 alpha k rho T(T-1)/mu = share * rest
            # (rounded up: a larger mu only lowers the sampling cost below share * rest)
            self.mu = inflate(
                2.0 * self.alpha * self.k * self.rho_q * T * (T - 1) / (share * rest)
            )
            if self.composition == "advanced":
                self.mu = self._advanced_mu(share * rest)
        self.lam = (
            2.0 * self.k / self.eps_base if lam is None else _v.nonnegative("lam", lam)
        )

    def _gaussian_plan(self, eps_init: float, share: float, lam: float | None) -> None:
        """zCDP reading (erratum B6): ρ = zcdp_budget(ε, δ) minus ε_init²/2; the draws
        cost ρ_sample = k Σ_t selection_rho("exponential", ε_t) = k c Σ_t ε_t² with
        c = 1/8, that is 16kcα²ρ_q² S/μ² (ε_t = 4α(t−1)ρ_q/μ, S = Σ_t (t−1)²), set to
        share × the rest by μ; each NoisyFit gets ρ_base = (1 − share) × rest / T and
        discrete Gaussian noise with σ² = k/(2ρ_base) (L2 sensitivity √k)."""
        T, k = self.rounds, self.k
        self.rho = _acc.zcdp_budget(self.epsilon, self.delta)
        rest = self.rho - eps_init * eps_init / 2.0
        if not rest > 0.0:
            raise PrivacyParameterError("init's ε_init²/2 leaves no zCDP budget")
        S = (T - 1) * T * (2 * T - 1) / 6.0
        if T == 1:
            self.mu = math.inf
            rho_base = rest
        else:
            rho_base = (1.0 - share) * rest / T
            # c of the one rule, dpfast.selection.selection_rho (16 c = 2 exactly)
            c = float(_sel.selection_rho("exponential", 1))
            self.mu = inflate(
                math.sqrt(16.0 * c * k * S / (share * rest)) * self.alpha * self.rho_q
            )
        self.rho_base = rho_base
        self.sigma2 = inflate(k / (2.0 * rho_base))
        self.eps_base = None
        self.lam = (
            2.0 * math.sqrt(self.sigma2) if lam is None else _v.nonnegative("lam", lam)
        )

    def _sample_epsilon(self, mu: float) -> float:
        """ε of all the draws at a given μ (T > 1): basic, or under
        ``composition="advanced"`` the smaller of basic and heterogeneous advanced
        composition with δ′ = delta (B2 with B5's ε_t), rounded up."""
        T, k = self.rounds, self.k
        eps_t = [4.0 * self.alpha * (t - 1) * self.rho_q / mu for t in range(2, T + 1)]
        basic = float(k * math.fsum(eps_t) * (1 + 2.0**-50))
        if self.composition != "advanced":
            return basic
        # heterogeneous_advanced_composition of k copies of each ε_t, in closed form
        # (no k(T-1)-long array): sqrt(2 ln(1/δ′) k Σ ε_t²) + k Σ ε_t (e^{ε_t} − 1)
        if max(eps_t) > 50.0:  # far past any useful μ: vacuous
            return basic
        sq = k * math.fsum(e * e for e in eps_t)
        drift = k * math.fsum(e * math.expm1(e) for e in eps_t)
        adv = inflate(math.sqrt(2.0 * -math.log(self.delta) * sq) + drift)
        return min(basic, float(adv))

    def _advanced_mu(self, target: float) -> float:
        """The smallest μ (to 2^-40 relative, rounded up) whose sampling ε is at most
        ``target``: the sampling ε decreases in μ, and the basic μ already meets it."""
        hi = self.mu
        lo = hi * 1e-6
        if self._sample_epsilon(lo) <= target:
            return lo
        return bisect_least(
            lambda mu: self._sample_epsilon(mu) <= target,
            lo,
            hi,
            rel=2.0**-40,
            steps=60,
            geometric=True,
        )

    def _eps_draw(self, t: int) -> float:
        """ε_t of one draw in round t (1-based): 4α(t−1)ρ/μ (B5)."""
        return 0.0 if t == 1 else 4.0 * self.alpha * (t - 1) * self.rho_q / self.mu

    @property
    def privacy_cost(self) -> PrivacyCost:
        T, k = self.rounds, self.k
        e_init = self.init or 0.0
        if self.noise == "gaussian":
            r_sample = sum(
                k * _v.float_up(_sel.selection_rho("exponential", self._eps_draw(t)))
                for t in range(1, T + 1)
            )
            parts = ((("init_rho", e_init * e_init / 2.0),) if self.init else ()) + (
                ("base_rho", T * self.rho_base),
                ("sampling_rho", r_sample),
            )
            return PrivacyCost(self.epsilon, self.delta, self.rho, parts)
        e_sample = (
            sum(k * self._eps_draw(t) for t in range(1, T + 1))
            if T == 1
            else self._sample_epsilon(self.mu)
        )
        eb = cast(float, self.eps_base)  # the Laplace plan
        eps = e_init + T * eb + e_sample
        rho = (
            e_init * e_init / 2.0
            + T * (eb * eb) / 2.0  # (inf, not an error, past 1e154)
            + sum(
                k * _v.float_up(_sel.selection_rho("exponential", self._eps_draw(t)))
                for t in range(1, T + 1)
            )
        )
        parts = ((("init", e_init),) if self.init else ()) + (
            ("base", T * eb),
            ("sampling", e_sample),
        )
        # eps is epsilon by construction of mu (mu rounded up); the float sum can only
        # differ from it by rounding, so the promised bound is epsilon itself
        eps = self.epsilon if eps <= self.epsilon * (1 + 1e-12) else inflate(eps)
        # advanced: (ε, δ) with δ = δ′ of the draws; the zCDP reading is unchanged
        return PrivacyCost(eps, self.delta, inflate(rho), parts)

    def run(self, histogram: Histogram, *, return_weights: bool = False) -> BoostingResult:
        """Charge the budget, then boost; returns :class:`BoostingResult`."""
        if not isinstance(histogram, Histogram) or histogram.domain != self.workload.domain:
            raise TypeError("histogram must be a Histogram over the workload's domain")
        if not isinstance(return_weights, bool):
            raise TypeError("return_weights must be a bool")
        cost = self.privacy_cost
        charge(_v.budget(self.budget), charged_amounts(cost), self.label)
        wl, rng, mode = self.workload, self.rng, self.mode
        prior = one_way_prior(histogram, self.init, rng, mode) if self.init else None
        truth = wl.answer(histogram)
        nq = wl.n_queries
        cum = np.zeros(nq)
        synopses = np.empty((self.rounds, nq))
        post = np.random.Generator(rng) if self.round_to else None
        for t in range(1, self.rounds + 1):
            S = self._draw(cum, t)
            A = self._noisy_fit(histogram, truth, S, prior, post)
            synopses[t - 1] = A
            d = np.abs(truth - A)
            cum += reweight(d, self.lam, self.mu)
        answers = np.median(synopses, axis=0)
        weights = None
        if return_weights:
            logu = -self.alpha * cum
            weights = np.exp(logu - logu.max())
            weights /= weights.sum()
        return BoostingResult(answers, synopses, weights, cost)

    def _draw(self, cum: FloatArray, t: int) -> IntArray:
        """k i.i.d. draws from D_t ∝ exp(−α Σ_{j<t} a_j): the exponential mechanism with
        utility −cum and sensitivity 2(t−1)ρ/μ at ε_t = 4α(t−1)ρ/μ (so that
        ε_t u/(2Δ) = α u exactly).  Round 1: uniform (all utilities 0)."""
        if t == 1:
            # D_1 is uniform (the exponential mechanism on equal scores): exact uniform
            # integers, the same law without k passes over the candidates
            return np.asarray(_core.uniform_below(cum.size, self.k, self.rng))
        return self._em_draws(-cum, self._eps_draw(t), 2.0 * (t - 1) * self.rho_q / self.mu)

    def _em_draws(self, u: FloatArray, eps: float, sens: float) -> IntArray:
        """k i.i.d. draws of dpfast.selection.exponential_mechanism(u, epsilon=eps,
        sensitivity=sens), validated and planned once for the k draws."""
        return _sel.exponential_mechanism_draws(
            u, self.k, epsilon=eps, sensitivity=sens, rng=self.rng, mode=self.mode
        )

    def _noisy_fit(
        self,
        histogram: Histogram,
        truth: FloatArray,
        S: IntArray,
        prior: FloatArray | None,
        post: Any,
    ) -> FloatArray:
        """NoisyFit: Lap(k/ε_base) on each distinct sampled query, then MW passes."""
        wl = self.workload
        distinct = np.unique(S)
        if self.noise == "laplace":
            noisy = _mech.laplace_mechanism(
                truth[distinct],
                epsilon=cast(float, self.eps_base),
                sensitivity=float(self.k),
                rng=self.rng,
                mode=self.mode,
                budget=NO_BUDGET,
            )  # charged in run
        elif self.mode == "fast":
            noisy = truth[distinct] + _random.normal(
                scale=math.sqrt(self.sigma2), size=distinct.size, rng=self.rng
            )
        else:
            # exact discrete Gaussian on floored counts (floor(c + 1) = floor(c) + 1:
            # the L2 sensitivity stays <= sqrt(#distinct) <= sqrt(k)); CKS 2020 Thm 14
            noisy = np.floor(truth[distinct]) + _random.discrete_gaussian(
                sigma2=self.sigma2, size=distinct.size, rng=self.rng
            )
        noisy = cast(FloatArray, noisy)
        state = MWState(wl.domain, self.n_public, prior)
        if self.fit_passes and self.fit == "joint":
            targets = np.full(wl.n_queries, np.nan)
            targets[distinct] = noisy
            wl._joint_fit(state, targets, self.fit_passes)
        elif self.fit_passes:
            wl._fit_queries(state, distinct, noisy, self.fit_passes)
        state.restart_if_degenerate()
        counts = state.counts()
        if post is not None:
            # DRV Thm 5.3's small database: n' records drawn from A_t (post-processing)
            rows = post.multinomial(self.round_to, state.distribution())
            counts = rows * (self.n_public / cast(int, self.round_to))
        return wl.answer(counts)
