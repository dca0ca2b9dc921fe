"""P-COMW: Gibbs sampling with lazy rejection over a convex body (private and lazy OCO).

Derivations: docs/algorithms.md ("P-COMW: the two settings and the calibrated tuning").
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from agents._kernels import accumulate, own_hooks, round_uniforms
from agents._oco import (
    OCOAgent,
    ball_sample,
    box_sample,
    claim,
    log1mexp,
    log_normaliser,
    project,
)
from agents._oco_kernels import oco_hook_loop, pcomw_path
from agents._public_cache import public_cache
from agents.base import PrivacyClaim, no_privacy
from agents.registry import register
from dp_experts_env._jit import jit_enabled
from dp_experts_env._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_float,
    check_learner_epsilon,
)
from dp_experts_env.fixed_order import dot
from dp_experts_env.privacy.accountant_oco import (
    pcomw_best_p,
    pcomw_calibrated,
    pcomw_rdp_account,
)
from dp_experts_env.privacy.declaration import Mechanism, SamplingSteps, account
from dp_experts_env.privacy.exact_accountants import calibrate, pcomw_account

__all__ = [
    "PCOMW",
    "PCOMWCalibration",
    "PCOMWParameters",
    "paper_epsilon",
    "pcomw_calibration",
    "pcomw_parameters",
]

SETTINGS = ("dp", "lazy")
_SLACK = 1e-9
_MAX_TRIES = 100_000


@dataclass(frozen=True)
class PCOMWParameters:
    """What P-COMW runs with and what it spends.

    Attributes:
        beta: inverse temperature.
        lam: regulariser lambda.
        kappa: ``beta G^2 / lambda``.
        log_phi: ``ln Phi`` of the stay coin's clip.
        p: forced-resample probability.
        budget: resample budget B (``inf`` in the lazy setting).
        epsilon: certified epsilon (``inf`` when not private).
        delta: certified delta.
        certified: False when the accounting reproduces a paper erratum (``mode="paper"``).
        expected_switches: bound on the expected number of switches (exact when ``clip_free``).
        regret_bound: Theorem "regret"'s bound at these parameters.
        accountant: ``"renyi"``, ``"theorem-dp"`` (errata E-AKST-2/3 fixed), ``"printed"``
            (uncertified) or ``""``.
        clip_free: ``ln Phi >= beta G D``: the clip never binds for linear losses.
    """

    beta: float
    lam: float
    kappa: float
    log_phi: float
    p: float
    budget: float
    epsilon: float
    delta: float
    certified: bool
    expected_switches: float
    regret_bound: float
    accountant: str = ""
    clip_free: bool = False


def paper_epsilon(kappa: float, horizon: float, delta: float) -> tuple[float, float, float]:
    """Theorem "DP" as printed: ``(eps, delta_out, ln Phi)``, simplified S2 (errata E-AKST-2/3)."""
    acc = pcomw_account(kappa, horizon, delta)
    lp, t = acc.log_phi, float(horizon)
    s2 = 7 * t ** (2 / 3) * lp**2 + 12 * lp**3 * t + 11 * kappa ** (2 / 3) * lp ** (4 / 3) * t
    eps = 1.5 * s2 + math.sqrt(6 * s2 * math.log(2 / delta))
    dlt = delta + 3 * t * math.exp(math.expm1(-2 * lp) * t)
    return eps, dlt, lp


def _regret(lam, beta, big_g, dd, d, t, tail) -> float:
    """``lam D^2/2 + G^2 T/lam + d ln(T)/beta + G D + tail`` (the paper's Theorem "regret")."""
    return lam * dd**2 / 2 + big_g**2 * t / lam + d * math.log(t) / beta + big_g * dd + tail


def _switch_rate(p: float, log_phi: float, clip_free: bool) -> float:
    """Per-round switch probability: exact ``p + (1-p)(1 - 1/Phi)`` when clip-free, else a bound."""
    return p - (1 - p) * math.expm1(-(1.0 if clip_free else 2.0) * log_phi)


def _lazy(t, d, dd, big_g, s, tuning) -> PCOMWParameters:
    """Theorem 4.2 (``tuning="paper"``) or the calibrated lazy setting (docs/algorithms.md)."""
    dc = 2.0 / t**2  # a closeness level of the analysis, not a privacy parameter
    if tuning == "paper":
        lam = max(
            big_g * math.sqrt(2 * t) / dd, math.sqrt(512 * d) * big_g * math.log(t) / dd * t / s
        )
        beta = lam / (256 * big_g**2 * math.log(t)) * s**2 / t**2
        kap = beta * big_g**2 / lam
        log_phi = 2 * kap + math.sqrt(8 * kap * math.log(2 / dc))
        bound = (
            big_g * dd * math.sqrt(2 * t)
            + 16 * big_g * dd * math.log(t) * math.sqrt(d) * t / s
            + 13 * big_g * dd
        )
        switches = -math.expm1(-2 * log_phi) * t
        return PCOMWParameters(
            beta, lam, kap, log_phi, 0.0, math.inf, math.inf, 0.0, True, switches, bound
        )
    # (a) Width: |ln r_t| <= beta G D for linear losses, so ln Phi = beta G D never clips and
    # the expected number of switches is exactly (T - 1)(1 - 1/Phi); set it to S.
    lp_w = -math.log1p(-s / (t - 1))
    beta_w = lp_w / (big_g * dd)
    lam_w = big_g * math.sqrt(2 * t) / dd
    width = PCOMWParameters(
        beta_w,
        lam_w,
        beta_w * big_g**2 / lam_w,
        lp_w,
        0.0,
        math.inf,
        math.inf,
        0.0,
        True,
        s,
        _regret(lam_w, beta_w, big_g, dd, d, t, 0.0),
        clip_free=True,
    )
    # (b) Concentration (Theorem 4.2's Phi formula): (1 - Phi^{-2}) T = S, kappa solves
    # ln Phi = 2 kappa + sqrt(8 kappa ln(2/dc)), then the regret-optimal lambda.
    lp_c = -0.5 * math.log1p(-s / t)
    c = math.sqrt(8 * math.log(2 / dc))
    root = (-c + math.sqrt(c * c + 8 * lp_c)) / 4
    kap = root * root
    lam_c = big_g / dd * math.sqrt(2 * t + 2 * d * math.log(t) / kap)
    beta_c = kap * lam_c / big_g**2
    conc = PCOMWParameters(
        beta_c,
        lam_c,
        kap,
        lp_c,
        0.0,
        math.inf,
        math.inf,
        0.0,
        True,
        s,
        _regret(lam_c, beta_c, big_g, dd, d, t, 6 * big_g * dd * dc * t**2),
        clip_free=lp_c >= beta_c * big_g * dd,
    )
    return width if width.regret_bound <= conc.regret_bound else conc


def pcomw_parameters(
    setting: str,
    dim: int,
    horizon: int,
    *,
    diameter: float,
    grad_bound: float,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    switch_budget: float | None = None,
    tuning: str = "calibrated",
    mode: str = "strict",
    kappa: float | None = None,
) -> PCOMWParameters:
    """Parameters of P-COMW from public quantities only (d, D, G, T, epsilon, delta, S).

    ``setting="dp"``: ``tuning="calibrated"`` (default) takes ``ln Phi = beta G D``, the
    regret-optimal lambda at kappa and the largest kappa (with its best p) that the Renyi accountant
    (:func:`~dp_experts_env.privacy.accountant_oco.pcomw_rdp_account`) certifies within epsilon
    (``kappa=`` fixes it); ``tuning="paper"`` is Theorem 4.1 (E-AKST-1) with Theorem "DP"'s Phi, p,
    B. ``mode="paper"`` reproduces the printed formulas, uncertified. ``setting="lazy"`` (``p = 0``,
    ``B = inf``): Theorem 4.2, or calibrated, the better of two settings with S expected switches.
    Derivations: docs/algorithms.md ("P-COMW: the two settings and the calibrated tuning").
    """
    setting = check_choice("setting", setting, SETTINGS)
    t, d, dd, big_g = horizon, dim, diameter, grad_bound
    if t < 2:
        raise ValueError(f"P-COMW needs horizon >= 2 (its parameters use ln T), got {t}")
    if setting == "lazy":
        if switch_budget is None:
            switch_budget = math.sqrt(d * t)
        s = check_float(
            "switch_budget", switch_budget, minimum=0.0, maximum=t - 1, min_inclusive=False
        )
        return _lazy(t, d, dd, big_g, s, tuning)
    eps = check_epsilon("epsilon", epsilon)
    dl = check_delta("delta", delta)
    if not 0 < dl <= 0.5:
        raise ValueError(f"delta must lie in (0, 1/2] for P-COMW's accountant, got {dl}")
    if mode == "strict" and (tuning == "calibrated" or kappa is not None):
        return _dp_renyi(t, d, dd, big_g, eps, dl, kappa)
    lg = math.log(t / dl)
    if kappa is not None:
        kap = check_float("kappa", kappa, minimum=0.0, min_inclusive=False)
        lam = big_g / dd * math.sqrt(2 * t + 2 * d * math.log(t) / kap)
    elif tuning == "paper":
        lam1 = 1 / (2 * math.sqrt(t)) if mode == "paper" else math.sqrt(2 * t)
        lam = (
            big_g
            / dd
            * max(
                lam1,
                1e3 * t ** (1 / 3) * math.sqrt(d) * lg / eps,
                1e3 * t ** (3 / 8) * math.sqrt(d) * lg / eps**0.75,
            )
        )
        beta = lam / (1e5 * big_g**2 * lg**2) * min(eps**2 / t ** (2 / 3), eps**1.5 / t**0.75)
        kap = beta * big_g**2 / lam
    else:  # mode="paper", calibrated: bisection on the printed S2
        spend = np.vectorize(lambda k: paper_epsilon(float(k), t, dl)[0])
        kap = float(calibrate(spend, eps, 1e-30, 1e3))
        lam = big_g / dd * math.sqrt(2 * t + 2 * d * math.log(t) / kap)
    beta = kap * lam / big_g**2
    acc = pcomw_account(kap, t, dl)
    if mode == "paper":
        spent, dlt, _ = paper_epsilon(kap, t, dl)
        dlt = min(dlt, math.nextafter(1.0, 0.0))
        accountant = "printed"
    else:
        rdp = pcomw_rdp_account(kap, t, dl, p=acc.p, log_phi=acc.log_phi, beta_gd=beta * big_g * dd)
        if rdp.epsilon <= acc.epsilon:
            spent, dlt, accountant = rdp.epsilon, rdp.delta, "renyi"
        else:
            spent, dlt, accountant = acc.epsilon, acc.delta, "theorem-dp"
    if kappa is not None and spent > eps * (1 + _SLACK):
        raise ValueError(f"kappa={kap:g} spends epsilon {spent:.6g} > epsilon={eps:g}")
    p_tilde = min(1.0, acc.p - math.expm1(-2 * acc.log_phi))
    closeness = dl / (60 * t**2)
    tail = 2 * big_g * dd * t * (math.exp(-p_tilde * t) + 3 * closeness * t)
    clip_free = acc.log_phi >= beta * big_g * dd
    return PCOMWParameters(
        beta=beta,
        lam=lam,
        kappa=kap,
        log_phi=acc.log_phi,
        p=acc.p,
        budget=acc.budget,
        epsilon=spent,
        delta=dlt,
        certified=mode == "strict",
        expected_switches=min(
            _switch_rate(acc.p, acc.log_phi, clip_free) * (t - 1), math.ceil(acc.budget)
        ),
        regret_bound=_regret(lam, beta, big_g, dd, d, t, tail),
        accountant=accountant,
        clip_free=clip_free,
    )


@dataclass(frozen=True)
class PCOMWCalibration:
    """The calibrated dp tuning's ``kappa`` and forced-resample probability ``p``."""

    kappa: float
    p: float


def _check_calibration(
    cal: PCOMWCalibration, horizon: int, dim: int, epsilon: float, delta: float
) -> str:
    """Why a calibration read from the disk cache cannot be used ("" when it can).

    The Renyi accountant certifies the loaded ``(kappa, p)`` again (a few ms, no bisection).
    """
    if not (cal.kappa > 0.0 and 0.0 < cal.p < 1.0):
        return f"kappa={cal.kappa!r}, p={cal.p!r} are outside kappa > 0, 0 < p < 1"
    log_phi = cal.kappa * math.sqrt(2 * horizon + 2 * dim * math.log(horizon) / cal.kappa)
    spent = pcomw_rdp_account(
        cal.kappa, horizon, delta, p=cal.p, log_phi=log_phi, beta_gd=log_phi
    ).epsilon
    if not spent <= epsilon * (1 + _SLACK):
        return f"the accountant gives epsilon {spent:.6g} for it, above epsilon={epsilon:g}"
    return ""


@public_cache(check=_check_calibration)
def pcomw_calibration(horizon: int, dim: int, epsilon: float, delta: float) -> PCOMWCalibration:
    """:func:`~dp_experts_env.privacy.accountant_oco.pcomw_calibrated`, kept on disk.

    The same floats; a new process reads them from the signed calibration cache
    (docs/architecture.md, "Calibrations on disk, validated") instead of the bisection's ~50
    Renyi searches, and re-certifies what it reads.
    """
    kappa, p = pcomw_calibrated(horizon, dim, epsilon, delta)
    return PCOMWCalibration(kappa, p)


def _dp_renyi(t, d, dd, big_g, eps, dl, kappa) -> PCOMWParameters:
    """The calibrated dp setting (strict): Renyi accountant, ``ln Phi = beta G D``."""
    if kappa is None:
        cal = pcomw_calibration(t, d, eps, dl)
        kap, p = cal.kappa, cal.p
    else:
        kap = check_float("kappa", kappa, minimum=0.0, min_inclusive=False)
        p = pcomw_best_p(kap, t, d, dl)
    lam = big_g / dd * math.sqrt(2 * t + 2 * d * math.log(t) / kap)
    beta = kap * lam / big_g**2
    log_phi = beta * big_g * dd
    rdp = pcomw_rdp_account(kap, t, dl, p=p, log_phi=log_phi, beta_gd=log_phi)
    if kappa is not None and rdp.epsilon > eps * (1 + _SLACK):
        raise ValueError(f"kappa={kap:g} spends epsilon {rdp.epsilon:.6g} > epsilon={eps:g}")
    p_tilde = min(1.0, p - math.expm1(-2 * log_phi))
    budget = 3.0 * p_tilde * t
    tail = 2 * big_g * dd * t * math.exp(-p_tilde * t)
    return PCOMWParameters(
        beta=beta,
        lam=lam,
        kappa=kap,
        log_phi=log_phi,
        p=p,
        budget=budget,
        epsilon=rdp.epsilon,
        delta=rdp.delta,
        certified=True,
        expected_switches=min(_switch_rate(p, log_phi, True) * (t - 1), math.ceil(budget)),
        regret_bound=_regret(lam, beta, big_g, dd, d, t, tail),
        accountant="renyi",
        clip_free=True,
    )


@register(
    "p-comw",
    private=True,
    summary="P-COMW (Agarwal-Kale-Singh-Thakurta): Gibbs sampling on a box/ball, lazy rejection",
)
class PCOMW(OCOAgent):
    """P-COMW on ``DPExperts-OCO-v0``: exact Gibbs samples, resampled rarely.

    Source: Agarwal, Kale, Singh & Thakurta, "Improved Differentially Private and Lazy Online Convex
    Optimization", Algorithm 1 with Theorem 4.1 (``setting="dp"``) or 4.2 (``setting="lazy"``);
    docs/algorithms.md ("P-COMW") has the derivations, modes and tunings.

    The point is kept unless a forced coin (p) fires or the stay coin ``Ber(Pi(r_t / Phi))`` fails;
    a switch draws the Gibbs law ``mu_{t+1}`` exactly and spends one unit of the budget B. Privacy
    (dp): ``(epsilon_out, delta)``-DP of the played points (one gradient replaced, ``||g|| <= G``)
    against adaptive adversaries, ``epsilon_out`` what the named accountant certifies;
    ``epsilon=math.inf`` plays ``ftrl-oco``'s leader. Deviations: ``x_1 ~ mu_1`` (E-AKST-4); linear
    losses only.

    Args:
        n_experts: d (also ``horizon`` T >= 2 and the geometry: as :class:`~agents._oco.OCOAgent`).
        setting: ``"dp"`` (default) or ``"lazy"`` (not private).
        epsilon: privacy target (dp; ``delta`` in (0, 1/2], default 1e-5).
        switch_budget: S (lazy; default ``sqrt(d T)``).
        mode: ``"strict"`` or ``"paper"`` (E-AKST-1..3, uncertified).
        tuning: ``"calibrated"`` (:func:`pcomw_parameters`) or ``"paper"``.
        kappa: explicit ``beta G^2/lambda`` (dp).
        noise: ``"fast"`` only (the exact samplers draw floats).
        noise_multiplier: audit only: the Gibbs spread scaled, the claim kept and marked
            uncertified.

    Attributes:
        parameters: the :class:`PCOMWParameters` (``beta``, ``lam``, ``p``, ``budget`` and
            ``log_phi`` also as attributes); per episode ``resamples`` and ``switches`` (B,).
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # OCOAgent.play_block calls _block, which plays these hooks (or defers to an override).
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_block", "_choose", "_init_state", "_learn"}
    )

    #: noise backends the learner draws from; others are refused (nothing to put on a lattice).
    noise_backends: tuple[str, ...] = ("fast",)
    noise_refusal = (
        "its privacy comes from sampling probabilities (exact Gibbs draws by float inverse CDF or "
        "rejection, and the stay coins), not from a Laplace release, so the lattice backend has "
        "nothing to replace"
    )

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        *,
        dim: int | None = None,
        body: str = "box",
        radius: float = 1.0,
        grad_bound: float = 1.0,
        setting: str = "dp",
        epsilon: float = 1.0,
        delta: float = 1e-5,
        switch_budget: float | None = None,
        mode: str = "strict",
        tuning: str | None = None,
        kappa: float | None = None,
        noise: str = "fast",
        noise_multiplier: float = 1.0,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        super().__init__(
            n_experts,
            horizon,
            dim=dim,
            body=body,
            radius=radius,
            grad_bound=grad_bound,
            num_envs=num_envs,
            seed=seed,
            n_arms=n_arms,
        )
        self.setting = check_choice("setting", setting, SETTINGS)
        self.mode = check_choice("mode", mode, ("strict", "paper"))
        self.tuning = check_choice("tuning", tuning or "calibrated", ("calibrated", "paper"))
        self.epsilon = check_learner_epsilon("epsilon", epsilon)
        self.delta = check_delta("delta", delta)
        if noise not in self.noise_backends:
            raise ValueError(
                f"noise={noise!r} does not apply to {getattr(self, 'name', 'p-comw')} (it accepts "
                f"{', '.join(map(repr, self.noise_backends))}): {self.noise_refusal}"
            )
        self.noise_multiplier = check_float("noise_multiplier", noise_multiplier, minimum=0.0)
        if self.setting == "lazy" and (kappa is not None):
            raise ValueError("kappa= is a dp-setting override; setting='lazy' takes switch_budget")
        if self.setting == "dp" and switch_budget is not None:
            raise ValueError("switch_budget= is for setting='lazy'; the dp budget B is derived")
        self.leader_only = self.setting == "dp" and math.isinf(self.epsilon)
        if self.leader_only:  # noise removed: FTRL with the same regulariser
            lam = self.grad_bound / self.diameter * math.sqrt(2 * self.horizon)
            self.parameters = PCOMWParameters(
                math.inf,
                lam,
                math.inf,
                0.0,
                1.0,
                math.inf,
                math.inf,
                0.0,
                True,
                float(self.horizon - 1),
                self.grad_bound * self.diameter * math.sqrt(2 * self.horizon),
            )
        else:
            self.parameters = pcomw_parameters(
                self.setting,
                self.dim,
                self.horizon,
                diameter=self.diameter,
                grad_bound=self.grad_bound,
                epsilon=self.epsilon,
                delta=self.delta,
                switch_budget=switch_budget,
                tuning=self.tuning,
                mode=self.mode,
                kappa=kappa,
            )
        prm = self.parameters
        self.beta, self.lam, self.p, self.budget = prm.beta, prm.lam, prm.p, prm.budget
        self.log_phi = prm.log_phi
        if self.noise_multiplier == 0.0:
            self.leader_only = True
        elif not self.leader_only:
            self.beta = prm.beta / self.noise_multiplier**2
        self.scale = 0.0 if self.leader_only else 1.0 / math.sqrt(self.beta * self.lam)
        self.reset(seed)
        if self.mode == "paper" and self.noise_multiplier == 1.0:
            claim = self.privacy
            if claim.is_private and not claim.certified:
                warnings.warn(
                    f"{self.name} with mode='paper' is NOT CERTIFIED: {claim.accountant}",
                    UserWarning,
                    stacklevel=2,
                )

    @property
    def privacy(self) -> PrivacyClaim:
        """The accountant's certificate (dp); not private in the lazy setting or at eps=inf."""
        if self.setting == "lazy" or (math.isinf(self.epsilon) and self.setting == "dp"):
            return no_privacy("full")
        prm = self.parameters
        mutant = self.noise_multiplier != 1.0
        notes = (
            f"kappa={prm.kappa:.4g}, ln Phi={prm.log_phi:.4g}, p={prm.p:.4g}, B={prm.budget:.4g}; "
            f"requested epsilon={self.epsilon:g}; regret bound vs oblivious losses only"
        )
        if mutant:
            notes += (
                f"; AUDIT MUTANT: Gibbs spread x{self.noise_multiplier:g}, the epsilon is that of "
                "the unscaled learner"
            )
        declared = account(self.declaration)
        return claim(
            epsilon=declared.epsilon,
            delta=declared.delta,
            neighbouring="replace one round's gradient g_t (||g_t|| <= G)",
            feedback="full",
            certified=prm.certified and not mutant and prm.epsilon <= self.epsilon * (1 + _SLACK),
            accountant=declared.accountant,
            holds_against="adaptive",
            noise_backend="fast",
            requested_epsilon=self.epsilon,
            notes=notes,
        )

    @property
    def declaration(self) -> Mechanism | None:
        """The lazy Gibbs sampler: a coin per round + resamples (None when not private)."""
        if self.setting == "lazy" or math.isinf(self.epsilon):
            return None
        prm = self.parameters
        how = {
            "renyi": "Renyi accountant for linear losses (exact per-round coin and Gibbs-sample "
            "bounds, composed, converted at delta)",
            "theorem-dp": "Theorem DP (Agarwal-Kale-Singh-Thakurta): 1.5 S2 + sqrt(6 S2 "
            "ln(2/delta)), pre-simplified S2 (E-AKST-2), delta/2 + T(4d' + 9Td' + "
            "3e^{-ptilde T}) (E-AKST-3)",
            "printed": "Theorem DP as printed (errata E-AKST-2, E-AKST-3: not certified)",
        }[prm.accountant]
        return SamplingSteps(
            f"lazy Gibbs sampling on the {self.body} (a coin per round, switch budget B = "
            f"{prm.budget:.4g})",
            epsilon=prm.epsilon,
            delta=prm.delta,
            accountant=how,
        )

    def path_log_likelihood(self, points: np.ndarray, gradients: np.ndarray) -> np.ndarray:
        """Log-density of released paths under a gradient sequence (the audit's statistic).

        Args:
            points: (n, T, d) released paths (or (T, d)).
            gradients: (T, d); row t is ``g_{t+1}`` (the last row is never read).

        Returns:
            (n,) log-densities (``-inf`` for paths the learner cannot produce).
        """
        if self.leader_only:
            raise ValueError("the regularised leader (noise removed) has no path density")
        x = np.asarray(points, dtype=np.float64)
        x = x[None] if x.ndim == 2 else x
        g = np.asarray(gradients, dtype=np.float64)
        n, horizon, d = x.shape
        if g.shape != (horizon, d) or d != self.dim:
            raise ValueError(f"points (n, T, {self.dim}) and gradients (T, {self.dim}) must "
                             f"match, got {x.shape} and {g.shape}")  # fmt: skip
        cum = np.vstack([np.zeros((1, d)), np.cumsum(g, axis=0)])  # cum[t] = L_t
        log_z = self._log_z_of(cum)  # (T + 1,)

        def log_density(t: int, y: np.ndarray) -> np.ndarray:  # log mu_{t+1}(y), L_t
            quad = self.beta * (dot(y, cum[t]) + self.lam / 2 * np.einsum("ni,ni->n", y, y))
            return -quad - log_z[t]

        total = log_density(0, x[:, 0])
        used = np.zeros(n)
        for t in range(horizon - 1):
            log_r = -self.beta * dot(x[:, t], g[t]) - (log_z[t + 1] - log_z[t])
            log_stay = math.log1p(-self.p) + np.clip(log_r - self.log_phi, -2.0 * self.log_phi, 0.0)
            moved = np.any(x[:, t + 1] != x[:, t], axis=1)
            left = used < self.budget
            with np.errstate(divide="ignore"):
                stay = np.where(left, log_stay, 0.0)
                move = np.where(left, log1mexp(log_stay) + log_density(t + 1, x[:, t + 1]), -np.inf)
            total = total + np.where(moved, move, stay)
            used = used + moved
        return total

    def _init_state(self) -> None:
        b, d = self.num_envs, self.dim
        self.cum = np.zeros((b, d))
        self.point = np.zeros((b, d))
        self.resamples = np.zeros(b, dtype=np.int64)
        self.switches = np.zeros(b, dtype=np.int64)
        self._log_z = None
        self._log_r = np.zeros(b)

    def _log_z_of(self, cum: np.ndarray) -> np.ndarray:
        return log_normaliser(self.body, cum, self.beta, self.lam, self.radius)

    def _sample(self, rows: np.ndarray, u: np.ndarray | None) -> np.ndarray:
        """Fresh exact draws from the current Gibbs law for the given runs."""
        mean = -self.cum[rows] / self.lam
        if self.body == "box":
            return box_sample(mean, self.scale, self.radius, u[rows])
        return (
            np.stack(
                [
                    ball_sample(mean[i], self.scale, self.radius, self._sampler_gens[r], _MAX_TRIES)
                    for i, r in enumerate(rows)
                ]
            )
            if rows.size
            else np.zeros((0, self.dim))
        )

    def _learn(self, g: np.ndarray) -> None:
        if self.leader_only:
            self.cum += g
            return
        new_cum = self.cum + g
        if self._log_z is None:
            self._log_z = self._log_z_of(self.cum)
        new_log_z = self._log_z_of(new_cum)
        self._log_r = -self.beta * np.einsum("bi,bi->b", g, self.point) - (new_log_z - self._log_z)
        self.cum, self._log_z = new_cum, new_log_z

    def _choose(self, g: np.ndarray) -> np.ndarray:
        if self.leader_only:
            new = project(-self.cum / self.lam, self.body, self.radius)
            if self.t > 0:
                self.switches += np.any(new != self.point, axis=1)
            self.point = new
            return self.point
        # Fixed draws per round and run, whatever the data: 2 coins (+ d uniforms on the box).
        coins = self.rng.random((2,))
        u = self.rng.random((self.dim,)) if self.body == "box" else None
        all_rows = np.arange(self.num_envs)
        if self.t == 0:
            self.point = self._sample(all_rows, u)
            return self.point
        log_stay = np.clip(self._log_r - self.log_phi, -2.0 * self.log_phi, 0.0)
        attempt = (coins[:, 0] < self.p) | (coins[:, 1] >= np.exp(log_stay))
        move = attempt & (self.resamples < self.budget)
        rows = np.flatnonzero(move)
        if rows.size:
            self.point = self.point.copy()
            self.point[rows] = self._sample(rows, u)
            self.resamples[rows] += 1
            self.switches[rows] += 1
        return self.point

    def _block(self, grads: np.ndarray) -> np.ndarray:
        """K rounds at once: the box's chain compiled (:func:`~agents._oco_kernels.pcomw_path`)."""
        hooks = ("_learn", "_choose", "_sample", "_log_z_of", "_init_state")
        if not own_hooks(self, PCOMW, hooks):
            return oco_hook_loop(self, grads)
        if self.leader_only:
            return self._leader_block(grads)
        if self.body != "box" or not jit_enabled():
            return oco_hook_loop(self, grads)
        k, runs, d = grads.shape
        first = self.t == 0
        cums = accumulate(self.cum, grads, not first)
        u = np.ascontiguousarray(round_uniforms(self.rng, k, 2 + d))  # 2 coins, d uniforms
        coins = np.ascontiguousarray(u[..., :2])
        unif = np.ascontiguousarray(u[..., 2:])
        fresh = box_sample(-cums / self.lam, self.scale, self.radius, unif)
        lo = int(first)
        dz = np.zeros((k, runs))
        if k > lo:
            if self._log_z is None:
                self._log_z = self._log_z_of(self.cum)
            log_z = self._log_z_of(cums[lo:])
            dz[lo:] = log_z - np.concatenate([self._log_z[None], log_z[:-1]])
        state = np.stack([self.resamples, self.switches])
        params = (self.beta, self.log_phi, self.p, self.budget)
        points, log_r = pcomw_path(grads, dz, coins, fresh, self.point, params, first, state)
        self.resamples, self.switches = state[0].copy(), state[1].copy()
        self.cum = cums[-1].copy()
        self.point = points[-1].copy()
        if k > lo:
            self._log_z = log_z[-1].copy()
            self._log_r = log_r[-1].copy()
        return points

    def _leader_block(self, grads: np.ndarray) -> np.ndarray:
        """The regularised leader's K rounds: sums in order, projections at once."""
        cums = accumulate(self.cum, grads, self.t > 0)
        points = project(-cums / self.lam, self.body, self.radius)
        moved = np.any(points != np.concatenate([self.point[None], points[:-1]]), axis=2)
        if self.t == 0:
            moved[0] = False
        self.switches += moved.sum(axis=0)
        self.cum = cums[-1].copy()
        self.point = points[-1].copy()
        return points


@register(
    "p-comw-lazy",
    private=False,
    summary="P-COMW lazy setting (Thm 4.2): Gibbs sampling with at most S switches in expectation",
)
class PCOMWLazy(PCOMW):
    """P-COMW in its lazy, non-private setting: ``p-comw`` with ``setting="lazy"``.

    Source: Agarwal, Kale, Singh & Thakurta, "Improved Differentially Private and Lazy Online Convex
    Optimization", Algorithm 1 with Theorem 4.2 (see :class:`PCOMW`). A name of its own so that
    grids run it once per seed, not per epsilon; ``epsilon`` and ``delta`` are ignored.
    """

    def __init__(self, n_experts: int | None = None, horizon: int | None = None, **kwargs):
        kwargs.pop("setting", None)
        kwargs.pop("epsilon", None)
        kwargs.pop("delta", None)
        super().__init__(n_experts, horizon, setting="lazy", **kwargs)
