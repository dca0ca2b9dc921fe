"""Non-private bandit baselines: EXP3, Tsallis-INF (HTINF), FTPL-GR and EXP4.

They wrap the cores of :mod:`agents.bandit_core`. The K-armed ones take ``over``: ``"arms"``
(default: play the K arms, ignore the advice) or ``"experts"`` (the N experts are meta-arms,
"Faster Rates for Private Adversarial Bandits" Algorithm 5: the core picks J, the learner plays
``I ~ advice[J]`` with one extra uniform and feeds I's loss back as J's). ``play_bandit_block``
is the bandit block protocol (docs/architecture.md). The constructors' ``n_experts`` (N),
``horizon`` (T), ``n_arms`` (K >= 2), ``num_envs`` and ``seed`` are :class:`~agents.base.Agent`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from agents.bandit_core import (
    BanditCore,
    Exp3Core,
    Exp4Core,
    FtplGRCore,
    TsallisInfCore,
    default_exp3_eta,
)
from agents.base import Agent, BanditObs, PrivacyClaim, no_privacy
from agents.registry import register
from dp_experts_env._validation import check_choice, check_float, check_int, check_probability

#: Most Laplace draws a round of FTPL-GR may make per run (max_resamples x arms).
_MAX_DRAWS = 10**8

__all__ = ["BanditBaseline", "Exp3", "TsallisInf", "FtplGR", "Exp4", "OVER"]

OVER = ("arms", "experts")
RATES = ("fixed", "anytime")
_any_true = np.logical_or.reduce


class BanditBaseline(Agent):
    """Base of the non-private bandit learners (here and in :mod:`agents.ucb`).

    Bandit feedback, no privacy; ``_check_step`` refuses an observation whose ``last_action`` is
    not the arm played (agent and env out of step).
    """

    feedback = "bandit"
    _CLAIM = no_privacy("bandit")

    @property
    def privacy(self) -> PrivacyClaim:
        """Not private: ``epsilon = inf``, model ``none``."""
        return self._CLAIM

    def _check_step(self, obs: BanditObs) -> None:
        # np.array_equal without its Python layers (act parsed both as (B,) arrays).
        if _any_true(np.not_equal(obs.last_action, self.last_actions)):
            raise ValueError(
                f"obs['last_action'] {obs.last_action.tolist()} differs from the arms this agent "
                f"played {self.last_actions.tolist()}; a bandit learner needs the loss of its own "
                "arm (reset the agent whenever the env is reset)"
            )

    def _checked_loss(self, obs: BanditObs) -> np.ndarray:
        """The feedback ``_learn`` hands the core, after its checks (block play's round 1)."""
        self._check_step(obs)
        return obs.last_loss


class _CoreBandit(BanditBaseline):
    """A K-armed core played over the arms or over the experts (meta-arms)."""

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        over: str,
        num_envs: int,
        seed: int | Sequence[int] | None,
        n_arms: int | None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.over = check_choice("over", over, OVER)

    @property
    def n_core_arms(self) -> int:
        """m: K when playing arms, N when playing experts as meta-arms."""
        return self.n_arms if self.over == "arms" else self.n_experts

    def _make_core(self) -> BanditCore:
        raise NotImplementedError

    def _init_state(self) -> None:
        self.core = self._make_core()
        self.core_choices = np.zeros(self.num_envs, dtype=np.int64)
        self._last_law: np.ndarray | None = None

    def _learn(self, obs: BanditObs) -> None:
        self._check_step(obs)
        self.core.update(self.core_choices, obs.last_loss)

    def _choose(self, obs: BanditObs) -> np.ndarray:
        self.core_choices = self.core.sample()
        if self.over == "arms":
            return self.core_choices
        advice = obs.advice[np.arange(self.num_envs), self.core_choices]  # (B, K)
        if not isinstance(self.core, FtplGRCore):  # FTPL has no closed-form law
            self._last_law = np.einsum("bn,bnk->bk", self.core.distribution(), obs.advice)
        return self.rng.categorical(advice)

    def _arms_kernel_ready(self) -> bool:
        """Whether the core's compiled block kernel can play (learners that have one say so)."""
        return False

    def _run_arms_block(
        self,
        choice: np.ndarray,
        losses: np.ndarray,
        rows: np.ndarray,
        loss0: np.ndarray,
        learn_first: bool,
    ) -> np.ndarray:
        """The compiled block over the arms: (K, B) actions; ``choice`` left at the last."""
        raise NotImplementedError

    def play_bandit_block(
        self,
        first: Mapping[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """K rounds of :meth:`act` in one call, compiled over the arms when a kernel is ready.

        Args:
            first: the observation of the block's first round (keys as in ``act``).
            advice: (K, B, N, K_arms) the rounds' advice, or None (``first["advice"]``).
            losses: (K, S, K_arms) the block's losses (read at the played arms only).
            rows: (B,) the loss stream of each run.

        Returns:
            (K, B) int64 actions.
        """
        from agents import _bandit_kernels as kernels

        k = len(losses)
        if not k or self.over != "arms" or not self._arms_kernel_ready():
            return kernels.act_loop(self, first, advice, losses, rows)
        batch, _, _, _ = kernels.block_inputs(self, first, advice, k, uses_advice=False)
        learn_first = self.t > 0
        loss0 = self._checked_loss(batch) if learn_first else np.zeros(self.num_envs)
        choice = np.array(self.core_choices, dtype=np.int64)
        actions = self._run_arms_block(choice, losses, rows, loss0, learn_first)
        self.core_choices = choice
        self.t += k
        self.last_actions = actions[-1].copy()
        return actions

    def action_distribution(self) -> np.ndarray:
        """(B, K) law of the last action (``over="arms"``: also before the first act)."""
        if self.over == "arms":
            return self.core.distribution()
        if self._last_law is None:
            raise RuntimeError("over='experts': the arm law needs advice; call act() first")
        return self._last_law


@register(
    "exp3",
    private=False,
    summary="EXP3 over arms (or experts as meta-arms), rate sqrt(2 ln K/(TK)), mixing gamma",
)
class Exp3(_CoreBandit):
    """EXP3 with mixing.

    Source: Auer, Cesa-Bianchi, Freund & Schapire 2002; the private-bandit paper's Algorithm 3
    (core :class:`~agents.bandit_core.Exp3Core`).

    Args:
        eta: fixed rate (``rate="fixed"`` only); default ``sqrt(2 ln m / (T m))``, m the core's
            arms.
        rate: ``"fixed"`` (default) or ``"anytime"`` (``eta_t = sqrt(ln m / (t m))``, Bubeck &
            Cesa-Bianchi 2012, Thm 3.1).
        gamma: uniform mixing in [0, 1], default 0.
        over: ``"arms"`` (default) or ``"experts"`` (module docstring).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        eta: float | None = None,
        rate: str = "fixed",
        gamma: float = 0.0,
        over: str = "arms",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, over=over, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.rate = check_choice("rate", rate, RATES)
        if eta is not None and self.rate == "anytime":
            raise ValueError("eta applies to rate='fixed' only; rate='anytime' uses its schedule")
        m = self.n_core_arms
        self.eta = default_exp3_eta(m, horizon) if eta is None else _positive("eta", eta)
        self.gamma = check_probability("gamma", gamma)
        self.reset(seed)

    def _make_core(self) -> BanditCore:
        m = self.n_core_arms
        if self.rate == "anytime":
            log_m = math.log(m) if m > 1 else 1.0

            def schedule(n: np.ndarray) -> np.ndarray:
                return np.sqrt(log_m / (n * m))

            return Exp3Core(self.rng, m, eta=schedule, gamma=self.gamma)
        return Exp3Core(self.rng, m, eta=self.eta, gamma=self.gamma)

    def play_bandit_block(
        self,
        first: Mapping[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """K rounds of :meth:`act` in one call (EXP3's compiled kernel over the arms)."""
        from agents import _bandit_kernels as kernels

        if (
            not len(losses)
            or type(self.core) is not Exp3Core
            or self.over != "arms"
            or not kernels.kernel_ready()
        ):
            return kernels.act_loop(self, first, advice, losses, rows)
        return kernels.play_exp3_core(self, first, losses, rows, loss0_of=self._checked_loss)

    def regret_bound(self, n_switches: int = 0) -> float | None:
        """Proven bound on the expected static regret over the m core arms (losses in [0, 1]).

        Fixed rate: ``ln m / eta + eta T m / 2``; anytime: ``2 sqrt(T m ln m)``. None for
        gamma > 0 or a switching comparator.
        """
        if n_switches or self.gamma > 0.0:
            return None
        m, t = self.n_core_arms, self.horizon
        if self.rate == "anytime":
            return 2.0 * math.sqrt(t * m * math.log(m))
        return math.log(m) / self.eta + self.eta * t * m / 2.0


@register(
    "tsallis-inf",
    private=False,
    summary="Tsallis-INF / HTINF (alpha=2, Newton-normalised), over arms or experts",
)
class TsallisInf(_CoreBandit):
    """1/2-Tsallis-INF with HTINF's skipping (base learner of Cor. 2 and 8).

    Source: Huang, Dai & Huang 2022, Alg. 1 (HTINF) with alpha = 2 (core
    :class:`~agents.bandit_core.TsallisInfCore`). Deviation: a reconstruction (the private-bandit
    paper quotes only Thm 21; erratum E-PAB-11); with a small sigma skipping also drops early
    large clean losses.

    Args:
        horizon: T (horizon-free; only validated).
        sigma: heavy-tail scale, default 1 (right for losses in [0, 1]); HTINF's bound is
            ``30 sigma sqrt(m (T + 1))``.
        skip: apply the skipping threshold (default True; False is Zimmert & Seldin's).
        over: ``"arms"`` (default) or ``"experts"`` (module docstring).
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # _CoreBandit.play_bandit_block calls these hooks itself (its kernel is _run_arms_block, over
    # _make_core's core).
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_arms_kernel_ready", "_make_core", "_run_arms_block"}
    )

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        sigma: float = 1.0,
        skip: bool = True,
        over: str = "arms",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, over=over, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.sigma = _positive("sigma", sigma)
        if not isinstance(skip, bool):
            raise TypeError(f"skip must be a bool, got {type(skip).__name__}")
        self.skip = skip
        self.reset(seed)

    def _make_core(self) -> BanditCore:
        return TsallisInfCore(self.rng, self.n_core_arms, sigma=self.sigma, skip=self.skip)

    def _arms_kernel_ready(self) -> bool:
        from agents import _bandit_tsallis as tsallis

        return tsallis.tsallis_ready()

    def _run_arms_block(
        self,
        choice: np.ndarray,
        losses: np.ndarray,
        rows: np.ndarray,
        loss0: np.ndarray,
        learn_first: bool,
    ) -> np.ndarray:
        """:mod:`agents._bandit_tsallis`'s kernel (the private conversions' too): no noise."""
        from agents import _bandit_tsallis as tsallis

        learns = np.ones(len(losses), dtype=bool)
        learns[0] = learn_first
        return tsallis.run_tsallis_block(
            self.core, self.rng, choice=choice, batch_sum=np.zeros(self.num_envs),
            learns=learns, releases=learns, samples=np.ones(len(losses), dtype=bool),
            scale=0.0, private=False, tau=1, losses=losses, rows=rows, loss0=loss0,
            first_advice=None, block_advice=None,
        )  # fmt: skip


@register(
    "ftpl-gr",
    private=False,
    summary="bandit FTPL with Laplace perturbations and geometric resampling (Neu-Bartok)",
)
class FtplGR(_CoreBandit):
    """Follow the perturbed leader with geometric resampling.

    Source: Neu & Bartók 2016; the private-bandit paper's Algorithm 4 with erratum E-PAB-12's
    fixes (core :class:`~agents.bandit_core.FtplGRCore`).

    Args:
        eta: perturbation rate (Laplace scale ``1 / eta``); default Lemma 25 at lambda = 0:
            ``min(sqrt(ln m / (m T)), 1 / M)``.
        max_resamples: M; default ``ceil(sqrt(m T))``, at most ``1e8 / m``.
        over: ``"arms"`` (default) or ``"experts"`` (module docstring).
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # _CoreBandit.play_bandit_block calls these hooks itself (its kernel is _run_arms_block, over
    # _make_core's core); act never calls action_distribution.
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_arms_kernel_ready", "_make_core", "_run_arms_block", "action_distribution"}
    )

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        eta: float | None = None,
        max_resamples: int | None = None,
        over: str = "arms",
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, over=over, num_envs=num_envs, seed=seed, n_arms=n_arms)
        m = self.n_core_arms
        # Cap a round's max_resamples x m Laplace draws so that no round runs for ever.
        self.max_resamples = (
            math.ceil(math.sqrt(m * horizon))
            if max_resamples is None
            else check_int(
                "max_resamples", max_resamples, minimum=1, maximum=max(1, _MAX_DRAWS // m)
            )
        )
        default_eta = min(
            math.sqrt(max(math.log(m), 1e-12) / (m * horizon)), 1 / self.max_resamples
        )
        self.eta = default_eta if eta is None else _positive("eta", eta)
        self.reset(seed)

    def _make_core(self) -> BanditCore:
        return FtplGRCore(
            self.rng, self.n_core_arms, eta=self.eta, max_resamples=self.max_resamples
        )

    def _arms_kernel_ready(self) -> bool:
        from agents import _ftpl_gr as ftpl

        return ftpl.ftpl_ready()

    def _run_arms_block(
        self,
        choice: np.ndarray,
        losses: np.ndarray,
        rows: np.ndarray,
        loss0: np.ndarray,
        learn_first: bool,
    ) -> np.ndarray:
        """:mod:`agents._ftpl_gr`'s kernel."""
        from agents import _ftpl_gr as ftpl

        return ftpl.run_ftpl_block(
            self.core, choice=choice, losses=losses, rows=rows, loss0=loss0,
            learn_first=learn_first,
        )  # fmt: skip

    def action_distribution(self) -> np.ndarray:
        """Not available for FTPL (no closed-form law)."""
        return self.core.distribution()  # raises NotImplementedError with an explanation


@register(
    "exp4",
    private=False,
    summary="EXP4: exponential weights over experts mixed through the advice",
)
class Exp4(BanditBaseline):
    """EXP4 (exponential weights for bandits with expert advice).

    Source: Auer, Cesa-Bianchi, Freund & Schapire 2002 (core
    :class:`~agents.bandit_core.Exp4Core`).

    Args:
        eta: fixed rate (``rate="fixed"`` only); default ``sqrt(2 ln N / (T K))``.
        rate: ``"fixed"`` (default) or ``"anytime"`` (``eta_t = sqrt(ln N / (t K))``).
        gamma: uniform mixing over arms in [0, 1], default 0.
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        *,
        n_arms: int | None = None,
        eta: float | None = None,
        rate: str = "fixed",
        gamma: float = 0.0,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, n_arms=n_arms)
        self.rate = check_choice("rate", rate, RATES)
        if eta is not None and self.rate == "anytime":
            raise ValueError("eta applies to rate='fixed' only; rate='anytime' uses its schedule")
        log_n = math.log(n_experts) if n_experts > 1 else 1.0
        default_eta = math.sqrt(2.0 * log_n / (horizon * self.n_arms))
        self.eta = default_eta if eta is None else _positive("eta", eta)
        self.gamma = check_probability("gamma", gamma)
        self.reset(seed)

    def _init_state(self) -> None:
        if self.rate == "anytime":
            log_n = math.log(self.n_experts) if self.n_experts > 1 else 1.0
            k = self.n_arms

            def schedule(n: np.ndarray) -> np.ndarray:
                return np.sqrt(log_n / (n * k))

            eta = schedule
        else:
            eta = self.eta
        self.core = Exp4Core(self.rng, self.n_experts, self.n_arms, eta=eta, gamma=self.gamma)

    def _learn(self, obs: BanditObs) -> None:
        self._check_step(obs)
        self.core.update(self.core.estimate(obs.last_loss))

    def _choose(self, obs: BanditObs) -> np.ndarray:
        return self.core.sample(obs.advice)

    def play_bandit_block(
        self,
        first: Mapping[str, np.ndarray],
        advice: np.ndarray | None,
        losses: np.ndarray,
        rows: np.ndarray,
    ) -> np.ndarray:
        """K rounds of :meth:`act` in one compiled call (:mod:`agents._bandit_kernels`)."""
        from agents import _bandit_kernels as kernels

        if not len(losses) or not kernels.kernel_ready():
            return kernels.act_loop(self, first, advice, losses, rows)
        return kernels.play_exp4_core(
            self, first, advice, losses, rows, loss0_of=self._checked_loss, scale=0.0,
            clip=False,
        )

    def action_distribution(self) -> np.ndarray:
        """(B, K) law of the last action."""
        if self.core.last_q is None:
            raise RuntimeError("the arm law needs advice; call act() first")
        return self.core.last_q


def _positive(name: str, value: float) -> float:
    return check_float(name, value, minimum=0.0, min_inclusive=False)
