"""Train a learned adversary against a learner and hold it against the families and the bound.

:func:`run_attack` trains PPO, evaluates it, a random adversary and the families on fresh seeds
(from ``EVAL_SEED_BASE + 1000 * seed``), and flags *defects* (docs/attack.md).
"""

from __future__ import annotations

import io
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dp_experts_env._validation import check_choice, check_int
from dp_experts_env.attack.bounds import declared_bound
from dp_experts_env.attack.env import ATTACK_ID, REWARDS, AttackVectorEnv, build_learner
from dp_experts_env.attack.model import MODEL_FILE, save_policy
from dp_experts_env.evaluation.store import UnsafeResultsFolder, plain_dir, write_atomic
from dp_experts_env.kinds import KINDS, kinds_of

__all__ = [
    "AttackConfig",
    "EVAL_SEED_BASE",
    "FAMILY_KINDS",
    "family_kinds",
    "train_adversary",
    "play_policy",
    "random_curves",
    "family_curves",
    "family_variants",
    "replay_curves",
    "find_defects",
    "exact_comparison",
    "run_attack",
]

EVAL_SEED_BASE = 1_000_000
#: ``--kind`` choices: ``full`` (every full-information kind), one such kind, or ``bandit``.
FAMILY_KINDS: tuple[str, ...] = ("full", *kinds_of("full"), "bandit")


def feedback_of(kind: str) -> str:
    """The attack env's feedback for a ``--kind``: ``bandit`` or ``full``."""
    return "bandit" if kind == "bandit" else "full"


def family_kinds(kind: str, oblivious: bool) -> tuple[str, ...]:
    """The kinds whose families an attack is compared with (oblivious attacks: oblivious kinds)."""
    check_choice("kind", kind, FAMILY_KINDS)
    if kind == "bandit":
        return ("bandit",)
    kinds = kinds_of("full") if kind == "full" else (kind,)
    if oblivious:
        kinds = tuple(k for k in kinds if KINDS[k].oblivious_only)
        if not kinds:
            raise ValueError(
                f"kind {kind!r} has no oblivious families; an oblivious attack needs one of "
                f"{['full', *(k for k in kinds_of('full') if KINDS[k].oblivious_only)]}"
            )
    return kinds


@dataclass
class AttackConfig:
    """What to attack and how hard (every field validated by name in :meth:`validate`).

    Attributes:
        learner: registered full-information learner.
        epsilon: its epsilon (None: the learner's default; private learners only).
        learner_params: the learner's other knobs.
        kind: ``full``, a full-information kind or ``bandit``: the families compared with.
        n_experts: N.
        horizon: T.
        timesteps: PPO training steps (env rounds over all training runs).
        oblivious: train an oblivious adversary (export its loss sequence).
        n_switches: 0 attacks static regret; S > 0 the S-switch dynamic regret.
        seed: training seed (PPO and episodes); evaluation seeds are derived from it.
        train_reward: ``"realized"``, ``"expected"`` or ``"auto"`` (expected where the learner
            has ``action_distribution()``); evaluation is always realized.
        train_envs: runs per PPO rollout.
        eval_runs: evaluation runs (learner seeds) per adversary.
        ppo: extra keywords for ``stable_baselines3.PPO``.
    """

    learner: str
    epsilon: float | None = None
    learner_params: dict[str, Any] = field(default_factory=dict)
    kind: str = "full"
    n_experts: int = 2
    horizon: int = 200
    timesteps: int = 100_000
    oblivious: bool = False
    n_switches: int = 0
    seed: int = 0
    train_reward: str = "auto"
    train_envs: int = 8
    eval_runs: int = 64
    ppo: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> AttackConfig:
        """Check every field (a ValueError/TypeError names it); returns self."""
        check_int("n_experts", self.n_experts, minimum=2)
        check_int("horizon", self.horizon, minimum=2)
        check_int("timesteps", self.timesteps, minimum=1)
        check_int("n_switches", self.n_switches, minimum=0)
        check_int("seed", self.seed, minimum=0)
        check_int("train_envs", self.train_envs, minimum=1)
        check_int("eval_runs", self.eval_runs, minimum=2)
        self.check_sizes()
        check_choice("kind", self.kind, FAMILY_KINDS)
        check_choice("train_reward", self.train_reward, ("auto", *REWARDS))
        if not isinstance(self.oblivious, bool):
            raise TypeError(f"oblivious must be True or False, got {self.oblivious!r}")
        family_kinds(self.kind, self.oblivious)
        agent = self.learner_instance()
        if self.train_reward == "expected" and not _has_law(agent):
            raise ValueError(
                f"train_reward='expected' needs {self.learner!r}'s action_distribution(); it "
                "has none (use 'realized' or 'auto')"
            )
        return self

    def check_sizes(self) -> None:
        """Refuse sizes that could not run, before anything is built (ValueError naming them).

        ``n_switches`` below the horizon; the evaluation (about 8 (2N + 1) T + 400 N bytes per
        run) and the PPO rollout (``train_envs`` x T x (7N + 1) float32) within
        :data:`~dp_experts_env._validation.MEMORY_LIMIT`.
        """
        from dp_experts_env._validation import check_memory

        n, t = int(self.n_experts), int(self.horizon)
        if self.n_switches >= t:
            raise ValueError(
                f"--switches (n_switches) must be below the horizon T={t} (at most {t - 1} "
                f"switches fit in T rounds), got {self.n_switches}"
            )
        runs = int(self.eval_runs)
        check_memory(
            f"--eval-runs {runs} x --horizon {t} x --n-experts {n} (evaluation)",
            runs * (8.0 * (2 * n + 1) * t + 400.0 * n),
        )
        check_memory(
            f"train_envs {self.train_envs} x --horizon {t} x --n-experts {n} (PPO rollout)",
            self.train_envs * t * (4.0 * (7 * n + 1) + 32.0) + 400.0 * n * self.train_envs,
        )

    def learner_instance(self) -> Any:
        """The attacked learner, built for one run (validation, bound, claim)."""
        return build_learner(
            self.learner,
            self.n_experts,
            self.horizon,
            1,
            epsilon=self.epsilon,
            learner_params=self.learner_params,
            feedback=self.feedback,
        )

    @property
    def feedback(self) -> str:
        """``full`` or ``bandit`` (from ``kind``)."""
        return feedback_of(self.kind)

    def resolved_reward(self) -> str:
        """The training env's reward: ``train_reward`` with ``"auto"`` resolved."""
        if self.train_reward != "auto":
            return self.train_reward
        return "expected" if _has_law(self.learner_instance()) else "realized"

    def env_kwargs(self) -> dict[str, Any]:
        """The attack env's keywords."""
        return {
            "learner": self.learner,
            "n_experts": self.n_experts,
            "horizon": self.horizon,
            "epsilon": self.epsilon,
            "learner_params": dict(self.learner_params),
            "oblivious": self.oblivious,
            "n_switches": self.n_switches,
            "feedback": self.feedback,
        }

    def eval_seeds(self) -> list[int]:
        """Fresh learner seeds of the evaluation (never a training episode's)."""
        start = EVAL_SEED_BASE + 1000 * self.seed
        return list(range(start, start + self.eval_runs))

    @property
    def metric(self) -> str:
        """``static_regret`` or ``dynamic_regret`` (the env's reward)."""
        return "dynamic_regret" if self.n_switches else "static_regret"


def _has_law(agent: Any) -> bool:
    return callable(getattr(agent, "action_distribution", None))


def _progress_callback(total: int, stream: Any) -> Any:
    """A text progress bar (steps, rate, last episodes' mean regret) on ``stream``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class _Progress(BaseCallback):
        def _on_training_start(self) -> None:
            self._start = time.perf_counter()
            self._shown = -1

        def _on_step(self) -> bool:
            done = min(self.num_timesteps, total)
            percent = int(100 * done / total)
            if percent != self._shown:
                self._shown = percent
                rate = done / max(time.perf_counter() - self._start, 1e-9)
                returns = [e["r"] for e in self.model.ep_info_buffer] or [math.nan]
                bar = "#" * (percent // 4) + "." * (25 - percent // 4)
                stream.write(
                    f"\rtraining [{bar}] {percent:3d}% {done}/{total} steps, {rate:,.0f}/s, "
                    f"regret {np.mean(returns[-32:]):.1f}"
                )
                stream.flush()
            return True

        def _on_training_end(self) -> None:
            stream.write("\n")
            stream.flush()

    return _Progress()


def train_adversary(config: AttackConfig, progress: bool = False) -> tuple[Any, float]:
    """Train PPO as the adversary; returns (model, CPU seconds of this process)."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    from dp_experts_env.sb3 import make_sb3_vec_env, quiet_logger

    torch.set_num_threads(1)
    cpu = time.process_time()
    config.validate()
    env_kwargs = {**config.env_kwargs(), "reward": config.resolved_reward()}
    venv = VecMonitor(make_sb3_vec_env(ATTACK_ID, config.train_envs, **env_kwargs))
    venv.seed(config.seed)
    kwargs: dict[str, Any] = {
        "n_steps": config.horizon,  # one episode per run and rollout
        "batch_size": config.horizon,  # a divisor of the rollout: train_envs minibatches
        "n_epochs": 10,
        "gamma": 0.99,
        "learning_rate": 1e-3,
        "policy_kwargs": {"net_arch": [64, 64]},
        "seed": config.seed,
        "device": "cpu",
        "verbose": 0,
    }
    kwargs.update(config.ppo)
    model = PPO("MlpPolicy", venv, **kwargs)
    model.set_logger(quiet_logger())  # no SB3-<date> folder left in the temporary folder
    callback = _progress_callback(config.timesteps, sys.stderr) if progress else None
    model.learn(config.timesteps, callback=callback)
    venv.close()
    return model, time.process_time() - cpu


def _play_attack(config: AttackConfig, seeds: Sequence[int], choose: Any) -> dict[str, Any]:
    """Play one episode per seed in the attack env; ``choose(obs) -> (B, N) actions``."""
    env = AttackVectorEnv(len(seeds), **config.env_kwargs())
    obs, _ = env.reset(seed=list(seeds))
    curve, losses = [], []
    for _ in range(config.horizon):
        actions = choose(obs)
        obs, _, _, _, info = env.step(actions)
        curve.append(np.asarray(info[config.metric], dtype=np.float64))
        losses.append(np.asarray(info["losses"], dtype=np.float64))
    return {"curve": np.stack(curve), "losses": np.stack(losses, axis=1)}


def play_policy(model: Any, config: AttackConfig, seeds: Sequence[int]) -> dict[str, Any]:
    """The trained adversary on ``seeds``: ``curve`` (T, R) and ``losses`` (R, T, N) played."""
    return _play_attack(config, seeds, lambda obs: model.predict(obs, deterministic=True)[0])


def random_curves(config: AttackConfig, seeds: Sequence[int]) -> np.ndarray:
    """(T, R) regret curves against i.i.d. uniform loss vectors (seeded by the first seed)."""
    rng = np.random.default_rng([int(seeds[0]), 0xADD])
    shape = (len(seeds), config.n_experts)
    return _play_attack(config, seeds, lambda obs: rng.uniform(-1.0, 1.0, shape))["curve"]


def _learner_on(env: Any, config: AttackConfig, seeds: Sequence[int]) -> np.ndarray:
    """(T, R) regret curves of the configured learner on a native vector env."""
    from dp_experts_env.evaluation.episode import play

    agent = build_learner(
        config.learner,
        config.n_experts,
        config.horizon,
        len(seeds),
        epsilon=config.epsilon,
        learner_params=config.learner_params,
        seed=list(seeds),
        feedback=config.feedback,
    )
    rounds = np.arange(1, config.horizon + 1)
    return play(env, agent, list(seeds), rounds)[config.metric]


def replay_curves(losses: np.ndarray, config: AttackConfig, seeds: Sequence[int]) -> np.ndarray:
    """(T, R) regret curves of the configured learner replaying ``losses`` (array or ``.npy``)."""
    import gymnasium as gym

    kind = "bandit" if config.feedback == "bandit" else "oblivious"
    env = gym.make_vec(
        KINDS[kind].env_id,
        num_envs=len(seeds),
        vectorization_mode="vector_entry_point",
        family="replay",
        losses=losses,
        n_switches=config.n_switches,
    )
    try:
        return _learner_on(env, config, seeds)
    finally:
        env.close()


def family_variants(kind: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``(label, family, knobs)`` of every family of ``kind`` played in a comparison.

    Each family at its defaults (``replay`` aside); the families declaring
    :class:`~dp_experts_env.adversaries.params.BaseLossParams` also with ``base="zeros"``
    (why: docs/attack.md, "Training and evaluation").
    """
    from dp_experts_env.adversaries import families, family_params
    from dp_experts_env.adversaries.params import BaseLossParams

    out: list[tuple[str, str, dict[str, Any]]] = []
    for name in families(kind):
        if name == "replay":
            continue
        out.append((f"{kind}/{name}", name, {}))
        if issubclass(family_params(kind, name), BaseLossParams):
            out.append((f"{kind}/{name}(base=zeros)", name, {"base": "zeros"}))
    return out


def family_curves(config: AttackConfig, seeds: Sequence[int]) -> dict[str, Any]:
    """Every hand-built family of the compared kinds, played by the configured learner.

    Returns ``"kind/family"`` or ``"kind/family(knob=value)"`` -> (T, R) curves, or the error
    message of a family that cannot be built at these sizes.
    """
    import gymnasium as gym

    out: dict[str, Any] = {}
    for kind in family_kinds(config.kind, config.oblivious):
        for label, name, knobs in family_variants(kind):
            try:
                env = gym.make_vec(
                    KINDS[kind].env_id,
                    num_envs=len(seeds),
                    vectorization_mode="vector_entry_point",
                    family=name,
                    n_experts=config.n_experts,
                    horizon=config.horizon,
                    n_switches=config.n_switches,
                    **knobs,
                )
            except (TypeError, ValueError) as err:
                out[label] = f"not built at N={config.n_experts}, T={config.horizon}: {err}"
                continue
            try:
                out[label] = _learner_on(env, config, seeds)
            finally:
                env.close()
    return out


def _summary(curves: np.ndarray, seed: int = 0) -> dict[str, float]:
    """Final regret: mean and 95% percentile-bootstrap interval over the runs."""
    from dp_experts_env.evaluation.stats import bootstrap_ci

    final = np.asarray(curves[-1], dtype=np.float64)
    mean, low, high = bootstrap_ci(final, "mean", seed=seed)
    return {"mean": float(mean), "ci_low": float(low), "ci_high": float(high), "runs": final.size}


def exact_comparison(config: AttackConfig, learned_regret: float) -> dict[str, Any]:
    """The learner's exact worst case and the learned adversary's share of it, where it applies.

    Where :func:`~dp_experts_env.evaluation.exact_worst_case.exact_worst_case` applies (N = 2,
    full information, static regret, T <= 256). Returns ``exact_worst_case`` (or None),
    ``learned_vs_exact`` and ``exact_note`` (what the number is, or why there is none).
    """
    from dp_experts_env.evaluation.exact_worst_case import MAX_HORIZON, exact_worst_case

    why = ""
    if config.n_experts != 2 or config.feedback != "full":
        why = "the exact program covers two experts with full information only"
    elif config.n_switches:
        why = "the exact program covers static regret only (no switches)"
    elif config.horizon > MAX_HORIZON:
        why = f"the exact program runs up to T = {MAX_HORIZON}"
    if not why:
        import agents  # lazy, as build_learner: the env registry must not import the learners

        params = dict(config.learner_params)
        if config.epsilon is not None and agents.spec(config.learner).private:
            params["epsilon"] = float(config.epsilon)  # as build_learner passes it
        try:
            worst = exact_worst_case(config.learner, config.horizon, params)
        except (ValueError, TypeError) as err:
            why = str(err)
    if why:
        return {"exact_worst_case": None, "learned_vs_exact": None, "exact_note": why}
    return {
        "exact_worst_case": worst.regret,
        "learned_vs_exact": learned_regret / worst.regret if worst.regret > 0 else None,
        "exact_note": "the largest expected static regret any adversary with {0, 1} losses "
        "forces (a dynamic program over (t, L0, L1)); losses in [0, 1] can force more, so a "
        "ratio above 1 is possible",
    }


def find_defects(results: Mapping[str, Mapping[str, float]], bound: float | None) -> list[str]:
    """Every adversary whose regret's whole 95% interval lies above the declared bound."""
    if bound is None:
        return []
    return [
        f"{name}: regret {row['mean']:.3f} (95% CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}]) "
        f"exceeds the learner's proven bound {bound:.3f}"
        for name, row in results.items()
        if row["ci_low"] > bound
    ]


def _figure(curves: Mapping[str, np.ndarray], bound: float | None, title: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    for label, curve in curves.items():
        mean = curve.mean(axis=1)
        rounds = np.arange(1, mean.size + 1)
        ax.plot(rounds, mean, label=label)
    if bound is not None:
        ax.axhline(bound, color="black", linestyle="--", linewidth=1.0, label="proven bound")
    ax.set_xlabel("round t")
    ax.set_ylabel("regret (mean over runs)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    from dp_experts_env.evaluation.plots import write_figure

    write_figure(fig, path, dpi=150)  # atomic, never through a planted link
    plt.close(fig)
    return path


def run_attack(
    config: AttackConfig,
    out_dir: str | Path | None = None,
    progress: bool = False,
    model: Any = None,
) -> dict[str, Any]:
    """Train (unless ``model`` is given), evaluate, write ``attack.json`` and files; return it."""
    config.validate()
    if out_dir is not None:
        check_outputs(out_dir)  # before training: a refused folder costs nothing
    cpu_seconds = 0.0
    if model is None:
        model, cpu_seconds = train_adversary(config, progress=progress)
    seeds = config.eval_seeds()
    played = play_policy(model, config, seeds)
    learned = played["curve"]
    rand = random_curves(config, seeds)
    fams = family_curves(config, seeds)
    bound = declared_bound(config)
    summaries = {"learned": _summary(learned), "random": _summary(rand)}
    family_rows: dict[str, Any] = {}
    for label, value in fams.items():
        family_rows[label] = value if isinstance(value, str) else _summary(value)
    built = {k: v for k, v in family_rows.items() if not isinstance(v, str)}
    best = max(built, key=lambda k: built[k]["mean"]) if built else None
    report: dict[str, Any] = {
        "learner": config.learner,
        "epsilon": config.epsilon,
        "certified_epsilon": config.learner_instance().privacy.epsilon,
        "learner_params": config.learner_params,
        "n_experts": config.n_experts,
        "horizon": config.horizon,
        "oblivious": config.oblivious,
        "metric": config.metric,
        "n_switches": config.n_switches,
        "kind": config.kind,
        "timesteps": config.timesteps,
        "train_seed": config.seed,
        "train_reward": config.resolved_reward(),
        "eval_seeds": [seeds[0], seeds[-1]],
        "train_cpu_seconds": cpu_seconds,
        "learned_regret": summaries["learned"]["mean"],
        "learned_ci": [summaries["learned"]["ci_low"], summaries["learned"]["ci_high"]],
        "random_regret": summaries["random"]["mean"],
        "random_ci": [summaries["random"]["ci_low"], summaries["random"]["ci_high"]],
        "families": family_rows,
        "best_family": best,
        "best_family_regret": built[best]["mean"] if best else None,
        "bound": bound,
    }
    report["learned_vs_best_family"] = (
        report["learned_regret"] / report["best_family_regret"]
        if best and report["best_family_regret"] > 0
        else None
    )
    sequence = None
    if config.oblivious:
        # The evaluation batch's sequence: another batch size may move near-ties (last bits).
        sequence = played["losses"][0]
        report["sequence_spread"] = float(np.abs(played["losses"] - sequence).max())
        replayed = _summary(replay_curves(sequence, config, seeds))
        report["replay_regret"] = replayed["mean"]
        report["replay_ci"] = [replayed["ci_low"], replayed["ci_high"]]
    report.update(exact_comparison(config, report["learned_regret"]))
    report["defects"] = find_defects({"learned": summaries["learned"], **built}, bound)
    for defect in report["defects"]:
        print(f"DEFECT in learner {config.learner!r} or its bound: {defect}", file=sys.stderr)
    if out_dir is not None:
        out = check_outputs(out_dir)
        policy = getattr(model, "policy", model)
        if _saveable(policy):
            save_policy(policy, out / MODEL_FILE)  # arrays + architecture: no pickle
            report["model"] = MODEL_FILE
        if sequence is not None:
            buffer = io.BytesIO()
            np.save(buffer, sequence, allow_pickle=False)
            write_atomic(out / "sequence.npy", lambda fh: fh.write(buffer.getvalue()), text=False)
            report["sequence"] = "sequence.npy"
        curves = {"learned": learned}
        if best:
            curves[f"best family ({best})"] = fams[best]
        curves["random"] = rand
        title = (
            f"{config.learner} (eps={config.epsilon}), N={config.n_experts}, T={config.horizon}, "
            f"{'oblivious' if config.oblivious else 'adaptive'} adversary"
        )
        report["figure"] = _figure(curves, bound, title, out / "attack.png").name
        text = json.dumps(report, indent=2, default=_json_default)
        write_atomic(out / "attack.json", lambda fh: fh.write(text))
    report["config"] = asdict(config)
    return report


#: What an attack writes into its output folder.
OUTPUTS = ("attack.json", "attack.png", "sequence.npy", MODEL_FILE)


def check_outputs(out_dir: str | Path) -> Path:
    """The output folder, made if missing; UnsafeResultsFolder if it or an output is a link."""
    out = plain_dir(out_dir)
    for name in OUTPUTS:
        if (out / name).is_symlink():
            raise UnsafeResultsFolder(
                f"{out / name} is a symbolic link; an attack never writes through a link "
                "(remove it, or use another --out)"
            )
    return out


def check_policy_fits(policy: Any, config: AttackConfig) -> None:
    """ValueError unless a loaded policy reads this attack's observations and plays N losses."""
    env = AttackVectorEnv(1, **config.env_kwargs())
    want = (env.single_observation_space.shape, env.single_action_space.shape)
    env.close()
    have = (policy.observation_space.shape, policy.action_space.shape)
    if have != want:
        raise ValueError(
            f"the saved adversary observes {have[0]} and plays {have[1]}; this attack "
            f"(--n-experts {config.n_experts}, {'oblivious' if config.oblivious else 'adaptive'})"
            f" needs {want[0]} and {want[1]}"
        )


def _saveable(policy: Any) -> bool:
    try:
        from stable_baselines3.common.policies import ActorCriticPolicy
    except ImportError:  # a model passed in without SB3 installed (a test double)
        return False
    return type(policy) is ActorCriticPolicy


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
