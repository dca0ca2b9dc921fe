"""Baselines for ``DPExperts-OCO-v0``: OGD, FTRL and private tree-aggregated FTRL."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from agents._kernels import (
    accumulate,
    own_hooks,
    plain_fast_backend,
    round_uniforms,
    tree_block,
)
from agents._oco import OCOAgent, claim, project
from agents._oco_kernels import oco_hook_loop, ogd_box_rounds
from agents.base import PrivacyClaim, no_privacy
from agents.registry import register
from dp_experts_env import samplers
from dp_experts_env._jit import jit_enabled
from dp_experts_env._validation import (
    check_choice,
    check_delta,
    check_float,
    check_learner_epsilon,
)
from dp_experts_env.privacy.declaration import Mechanism, PostProcessing, TreeAggregation, account
from dp_experts_env.privacy.mechanisms import TreeCounter, tree_levels
from dp_experts_env.privacy.noise import NoiseBackend, get_backend, root_backend

__all__ = ["OGD", "FTRLOCO", "DPFTRLOCO", "TreeFTRLOCO"]


@register("ogd", private=False, summary="projected online gradient descent, step D/(G sqrt T)")
class OGD(OCOAgent):
    """Projected online gradient descent on the box or ball.

    Source: Zinkevich 2003, "Online convex programming and generalized infinitesimal gradient
    ascent" (Theorem 1), the ``GD sqrt(T)`` reference rate of Agarwal, Kale, Singh & Thakurta (§1).
    Plays ``x_1 = 0``, ``x_{t+1} = Proj_K(x_t - eta g_t)`` with ``eta = D / (G sqrt T)`` (``step=``
    overrides). Deterministic, not private, no deviation.

    Args: as :class:`~agents._oco.OCOAgent`, plus ``step``.
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # OCOAgent.play_block calls _block, which plays these hooks (or defers to an override).
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_block", "_choose", "_init_state", "_learn"}
    )

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        *,
        step: float | None = None,
        **kwargs,
    ) -> None:
        seed = kwargs.pop("seed", None)
        super().__init__(n_experts, horizon, seed=seed, **kwargs)
        default = self.diameter / (self.grad_bound * math.sqrt(self.horizon))
        self.step = default if step is None else check_float("step", step, minimum=0.0)
        self.reset(seed)

    @property
    def privacy(self) -> PrivacyClaim:
        """Not private."""
        return no_privacy("full")

    def _init_state(self) -> None:
        self.point = np.zeros((self.num_envs, self.dim))

    def _learn(self, g: np.ndarray) -> None:
        self.point = project(self.point - self.step * g, self.body, self.radius)

    def _choose(self, g: np.ndarray) -> np.ndarray:
        return self.point

    def _block(self, grads: np.ndarray) -> np.ndarray:
        # The box's step and clip compiled; the ball's radial shrink needs numpy's einsum.
        if self.body != "box" or not own_hooks(self, OGD) or not jit_enabled():
            return oco_hook_loop(self, grads)
        out = np.empty(grads.shape)
        point = self.point.copy()
        ogd_box_rounds(grads, point, float(self.step), float(self.radius), self.t > 0, out)
        self.point = point
        return out


@register(
    "ftrl-oco",
    private=False,
    summary="FTRL with the L2 regulariser of P-COMW: Proj_K(-L/lambda), lambda=(G/D)sqrt(2T)",
)
class FTRLOCO(OCOAgent):
    """Follow-the-regularised-leader with ``lambda/2 ||x||^2`` (P-COMW's regulariser).

    Source: the FTRL analysis used by Agarwal, Kale, Singh & Thakurta (Lemma A.2 and their regret
    theorem). Plays ``Proj_K(-L_t/lambda)`` with ``lambda = (G/D) sqrt(2T)`` (``lam=`` overrides);
    P-COMW at ``epsilon=math.inf``. Deterministic, not private, no deviation.
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # OCOAgent.play_block calls _block, which plays these hooks (or defers to an override).
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_block", "_choose", "_init_state", "_learn"}
    )

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        *,
        lam: float | None = None,
        **kwargs,
    ) -> None:
        seed = kwargs.pop("seed", None)
        super().__init__(n_experts, horizon, seed=seed, **kwargs)
        default = self.grad_bound / self.diameter * math.sqrt(2 * self.horizon)
        self.lam = (
            default if lam is None else check_float("lam", lam, minimum=0.0, min_inclusive=False)
        )
        self.reset(seed)

    @property
    def privacy(self) -> PrivacyClaim:
        """Not private."""
        return no_privacy("full")

    def _init_state(self) -> None:
        self.cum = np.zeros((self.num_envs, self.dim))

    def _learn(self, g: np.ndarray) -> None:
        self.cum += g

    def _choose(self, g: np.ndarray) -> np.ndarray:
        return project(-self.cum / self.lam, self.body, self.radius)

    def _block(self, grads: np.ndarray) -> np.ndarray:
        # Running sums in order, the K projections at once (elementwise or per row).
        if not own_hooks(self, FTRLOCO):
            return oco_hook_loop(self, grads)
        cums = accumulate(self.cum, grads, self.t > 0)
        self.cum = cums[-1].copy()
        return project(-cums / self.lam, self.body, self.radius)


class TreeFTRLOCO(OCOAgent):
    """FTRL on binary-tree noisy gradient sums: what the (unregistered) DP-FTRL learners share.

    Round t + 1 plays ``Proj_K(-L~_t / lambda)``, ``L~_t`` the running sum released by a binary tree
    over the ``T - 1`` gradients a game feeds it, with Laplace
    (:class:`~dp_experts_env.privacy.mechanisms.TreeCounter`) or ``N(0, sigma^2 I)`` node noise.
    ``lambda = sqrt(2 T G^2 + 2 d levels v) / D``, v the per-coordinate node variance. The claim is
    the accounted declaration; ``noise_multiplier`` (audit only) scales the node noise and marks the
    claim uncertified. Subclasses set the calibration (:meth:`_calibrate`), deltas, backends and the
    Gaussian accountant.
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py):
    # OCOAgent.play_block calls _block, which plays these hooks (or defers to an override).
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_block", "_choose", "_init_state", "_learn"}
    )

    #: node laws a subclass accepts (``law=``)
    laws: tuple[str, ...] = ("gaussian",)
    #: tunings a subclass accepts
    tunings: tuple[str, ...] = ("calibrated",)
    #: noise backends of each law
    noise_backends: tuple[str, ...] = ("fast",)
    #: how a Gaussian tree's levels are converted to (epsilon, delta): "gdp" (exact) or "zcdp"
    gaussian_profile: str = "gdp"
    #: appended to the claim's accountant text
    claim_source: str = ""

    @classmethod
    def noise_backends_for(cls, params: dict) -> tuple[str, ...]:
        """Backends the learner uses with these parameters: the Gaussian law draws its own."""
        return ("fast",) if params.get("law", cls.laws[0]) == "gaussian" else cls.noise_backends

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        law: str | None = None,
        lam: float | None = None,
        noise_multiplier: float = 1.0,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed, **kwargs)
        self.epsilon = check_learner_epsilon("epsilon", epsilon)
        self.law = check_choice("law", self.laws[0] if law is None else law, self.laws)
        self.delta = self._check_delta(delta)
        self.mode = check_choice("mode", mode, ("strict", "paper"))
        self.tuning = check_choice("tuning", tuning or "calibrated", self.tunings)
        self.noise = get_backend(noise)
        kind = getattr(root_backend(self.noise), "name", "")
        if kind and kind not in self.noise_backends_for({"law": self.law}):
            raise ValueError(self._backend_refusal(kind))
        self.noise_multiplier = check_float("noise_multiplier", noise_multiplier, minimum=0.0)
        # The tree holds the T - 1 gradients a game feeds it: one level fewer at T = 2^k.
        self.items = max(1, self.horizon - 1)
        self.levels = tree_levels(self.items)
        self.node_scale = 0.0 if math.isinf(self.epsilon) else self._calibrate()
        node_var = self.node_scale**2 * (1.0 if self.law == "gaussian" else 2.0)
        extra = 2.0 * self.dim * self.levels * node_var
        default = math.sqrt(2.0 * self.horizon * self.grad_bound**2 + extra) / self.diameter
        self.lam = (
            default if lam is None else check_float("lam", lam, minimum=0.0, min_inclusive=False)
        )
        self.reset(seed)

    def _check_delta(self, delta: float | None) -> float:
        """The validated delta (``self.law`` and ``self.epsilon`` are set)."""
        raise NotImplementedError

    def _calibrate(self) -> float:
        """The node scale at finite epsilon (``self.levels`` is set)."""
        raise NotImplementedError

    def _backend_refusal(self, kind: str) -> str:
        return f"noise={kind!r} does not apply to {getattr(self, 'name', type(self).__name__)}"

    def _sensitivity(self) -> float:
        """The declared node sensitivity: L2 ``2G`` (Gaussian), L1 ``2G sqrt(d)`` (Laplace)."""
        if self.law == "gaussian":
            return 2.0 * self.grad_bound
        l1 = 2.0 * self.grad_bound * math.sqrt(self.dim)
        return self.noise.effective_sensitivity(l1, self.dim)

    @property
    def declaration(self) -> Mechanism | None:
        """A binary tree of the running gradient sums, calibrated scale (None at epsilon = inf)."""
        if math.isinf(self.epsilon):
            return None
        gaussian = self.law == "gaussian"
        return PostProcessing(
            TreeAggregation(
                "the running gradient sums",
                leaves=self.items,
                levels=self.levels,
                shape=(self.dim,),
                sensitivity=self._sensitivity(),
                scale=float(self.node_scale),
                noise=self.law,
                delta=self.delta if gaussian else 0.0,
                profile=self.gaussian_profile if gaussian else "zcdp",
            ),
            "the FTRL plays",
        )

    @property
    def privacy(self) -> PrivacyClaim:
        """The accounted declaration; not private at epsilon = inf."""
        if math.isinf(self.epsilon):
            return no_privacy("full")
        extra = {}
        if self.noise_multiplier != 1.0:
            extra = {
                "certified": False,
                "notes": f"AUDIT MUTANT: node noise x{self.noise_multiplier:g}, the epsilon is "
                "that of the unscaled learner",
            }
        declared = account(self.declaration, source=self.claim_source)
        gaussian = self.law == "gaussian"
        return claim(
            # a Gaussian scale solved for the request is equal up to the solver's precision
            epsilon=min(declared.epsilon, self.epsilon) if gaussian else declared.epsilon,
            delta=self.delta if gaussian else 0.0,
            neighbouring="replace one round's gradient g_t (||g_t|| <= G)",
            feedback="full",
            accountant=declared.accountant,
            holds_against="adaptive",
            noise_backend="fast" if gaussian else getattr(self.noise, "name", "fast"),
            requested_epsilon=self.epsilon,
            **extra,
        )

    def _init_state(self) -> None:
        self.noisy_sum = np.zeros((self.num_envs, self.dim))
        if self.law == "gaussian":
            shape = (self.num_envs, self.levels, self.dim)
            self._exact, self._noisy, self._count = np.zeros(shape), np.zeros(shape), 0
            return
        self.tree = TreeCounter(
            self.items,
            self.dim,
            l1_sensitivity=2.0 * self.grad_bound * math.sqrt(self.dim),
            epsilon=self.epsilon,
            rng=self.rng,
            noise=self.noise,
        )
        self.tree.node_scale *= self.noise_multiplier  # the claim reads the guarantee, not this

    def _learn(self, g: np.ndarray) -> None:
        if self.law == "laplace":
            self.noisy_sum = np.asarray(self.tree.add(g)).reshape(self.num_envs, self.dim)
        else:
            self._gaussian_step(g)

    def _gaussian_step(self, g: np.ndarray) -> None:
        # Gaussian nodes, TreeCounter's dyadic blocks: d normals per run every round (fixed
        # consumption, so batches equal single runs).
        self._count += 1
        t = self._count
        level = (t & -t).bit_length() - 1
        node = self._exact[:, :level].sum(axis=1) + g
        self._exact[:, level] = node
        self._exact[:, :level] = 0.0
        if self.node_scale > 0.0:
            z = self.rng.normal((self.dim,))
            self._noisy[:, level] = node + self.noise_multiplier * self.node_scale * z
        else:
            self._noisy[:, level] = node
        bits = [j for j in range(self.levels) if (t >> j) & 1]
        self.noisy_sum = self._noisy[:, bits].sum(axis=1)

    def _choose(self, g: np.ndarray) -> np.ndarray:
        return project(-self.noisy_sum / self.lam, self.body, self.radius)

    def _block(self, grads: np.ndarray) -> np.ndarray:
        """The tree's K releases in one kernel call (:func:`agents._kernels.tree_block`).

        Laplace nodes read the stream once (:func:`dp_experts_env.samplers.laplace`), Gaussian ones
        ``BatchRNG.normal`` a round at a time; one coordinate, the lattice backend and subclasses'
        own hooks play round by round.
        """
        hooks = ("_learn", "_choose", "_gaussian_step", "_init_state")
        gaussian = self.law == "gaussian"
        if (
            self.dim < 2
            or not jit_enabled()
            or not own_hooks(self, TreeFTRLOCO, hooks)
            or (not gaussian and not plain_fast_backend(self.tree.backend))
        ):
            return oco_hook_loop(self, grads)
        first = self.t == 0
        learn = grads[int(first) :]
        sums = np.empty(grads.shape)
        if first:
            sums[0] = self.noisy_sum
        m, runs, d = learn.shape
        if m:
            if gaussian:
                noise = np.empty((0, runs, d))
                if self.node_scale > 0.0:
                    # A round at a time: one call for the block would reorder Box-Muller's uniforms.
                    z = np.stack([self.rng.normal((d,)) for _ in range(m)])
                    noise = self.noise_multiplier * self.node_scale * z
                tree_block(learn, noise, self._exact, self._noisy, self._count, sums[int(first) :])
                self._count += m
            else:
                tree = self.tree
                noise = np.empty((0, runs, d))
                if tree._run_epsilons is not None or tree.node_scale > 0.0:
                    per_round = d * samplers.LAPLACE_UNIFORMS
                    u = np.ascontiguousarray(round_uniforms(self.rng, m, per_round))
                    noise = samplers.laplace(u, tree.node_scale)
                tree_block(learn, noise, tree._exact, tree._noisy, tree.t, sums[int(first) :])
                tree.t += m
                tree._value = sums[-1].copy()
            self.noisy_sum = sums[-1].copy()
        return project(-sums / self.lam, self.body, self.radius)


@register(
    "dp-ftrl-oco",
    private=True,
    summary="prior-work DP baseline: L2-FTRL on binary-tree (Laplace) noisy gradient sums",
)
class DPFTRLOCO(TreeFTRLOCO):
    """Private FTRL for OCO: the regularised leader on tree-aggregated noisy gradient sums.

    Source: DP-FTRL of Kairouz, McMahan, Song, Thakkar, Thakurta & Xu 2021 ("Practical and private
    (deep) learning without sampling or shuffling") and Jain & Thakurta's tree-based private online
    learning, the baseline of Agarwal, Kale, Singh & Thakurta's Table 1. Plays as
    :class:`TreeFTRLOCO`.

    Privacy: pure ``epsilon``-DP of the played points (one gradient replaced, ``||g|| <= G``),
    against adaptive adversaries: a gradient enters at most ``levels`` nodes of L1 sensitivity
    ``2 G sqrt(d)``, composed. ``law="gaussian"``: ``N(0, sigma^2 I)`` nodes calibrated by zCDP, the
    claim by the exact Gaussian-DP profile. Deviations from Kairouz et al.: Laplace by default; no
    tree-completion trick. Calibration: docs/algorithms.md.

    Args: as :class:`~agents._oco.OCOAgent`, plus ``law``, ``lam`` (overrides lambda), ``delta``
    (Gaussian only, default 1e-5), ``noise`` (``"fast"`` or ``"grid"``; Gaussian: ``"fast"``),
    ``mode`` (no effect) and ``noise_multiplier`` (audit only, the claim marked uncertified).
    """

    # The overrides the inherited block path accounts for (dp_experts_env/block_entry.py): set
    # up in __init__ only (delta, backend refusal, node scale, the sensitivity it reads), read by
    # both paths from the object.
    _block_path_covers: ClassVar[frozenset[str]] = frozenset(
        {"_backend_refusal", "_calibrate", "_check_delta", "l1_sensitivity"}
    )

    laws = ("laplace", "gaussian")
    tunings = ("calibrated", "paper")
    #: noise backends of the Laplace law (the Gaussian law takes "fast" only).
    noise_backends = ("fast", "grid")

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        mode: str = "strict",
        tuning: str | None = None,
        noise: str | NoiseBackend = "fast",
        law: str = "laplace",
        lam: float | None = None,
        noise_multiplier: float = 1.0,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        **kwargs,
    ) -> None:
        self.rho = math.inf  # the zCDP rho of the Gaussian law (set by _calibrate)
        super().__init__(
            n_experts,
            horizon,
            epsilon=epsilon,
            delta=delta,
            mode=mode,
            tuning=tuning,
            noise=noise,
            law=law,
            lam=lam,
            noise_multiplier=noise_multiplier,
            num_envs=num_envs,
            seed=seed,
            **kwargs,
        )

    @property
    def l1_sensitivity(self) -> float:
        """L1 change of one node under a replaced gradient: ``2 G sqrt(d)``."""
        return 2.0 * self.grad_bound * math.sqrt(self.dim)

    def _check_delta(self, delta: float | None) -> float:
        if self.law != "gaussian":
            return 0.0 if delta is None else float(delta)
        value = check_delta("delta", 1e-5 if delta is None else delta)
        if not value > 0:
            raise ValueError("law='gaussian' needs delta > 0 (zCDP converts to (eps, delta))")
        return value

    def _calibrate(self) -> float:
        if self.law == "gaussian":
            log_d = math.log(1.0 / self.delta)
            self.rho = (math.sqrt(log_d + self.epsilon) - math.sqrt(log_d)) ** 2
            return 2.0 * self.grad_bound * math.sqrt(self.levels / (2.0 * self.rho))
        return self.levels * self._sensitivity() / self.epsilon

    def _backend_refusal(self, kind: str) -> str:
        return (
            f"noise={kind!r} does not apply to dp-ftrl-oco with law='gaussian' (it accepts "
            "'fast'): its Gaussian node noise is drawn by the learner's own generator, and "
            "the lattice backend has Laplace noise only"
        )
