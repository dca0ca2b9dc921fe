"""Experiment grids: agents x envs x epsilons x seeds, as a list of independent cells.

A :class:`Cell` is one (agent, env, epsilon) over a block of seed indices, played as one batch;
adversary seeds are keyed by (env, seed index) only (docs/grid.md, "Seeds and common random
numbers"). :class:`Grid` is built in Python or read from TOML and validated before any cell runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import numbers
import sys
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from dp_experts_env._validation import check_int, check_learner_epsilon, did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "AgentEntry",
    "EnvEntry",
    "Cell",
    "Grid",
    "derive_seed",
    "record_rounds",
    "canonical_json",
    "json_default",
    "plain_numbers",
]


def plain_numbers(value: Any) -> Any:
    """``value`` with numpy scalars as Python ones, recursively (arrays kept, mapping keys str)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): plain_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain_numbers(v) for v in value)
    return value


def json_default(value: Any) -> Any:
    """The ``default=`` of every ``json.dumps`` of grids, keys and stored headers.

    Returns a numpy array's content hash (``{"array_sha256", "shape", "dtype"}``), a numpy
    scalar's Python value, and ``str(value)`` for anything else JSON cannot write.
    """
    # An array's str() elides its middle: two loss matrices would share a key.
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return {"array_sha256": digest, "shape": list(value.shape), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def canonical_json(params: Mapping[str, Any]) -> str:
    """One JSON text per content: keys sorted, no spaces, numpy numbers as Python ones."""
    return json.dumps(
        plain_numbers(dict(params)), sort_keys=True, separators=(",", ":"), default=json_default
    )


# Deprecated aliases of the former private names, for one release (tests/test_seams.py).
_plain = plain_numbers
_json_default = json_default
_canonical = canonical_json


def derive_seed(base_seed: int, *key: Any) -> int:
    """A 63-bit seed from the base seed and a key (stable across processes and machines)."""
    words = [int(base_seed)]
    for part in key:
        if isinstance(part, (int, np.integer)) and not isinstance(part, bool):
            words.append(int(part))
        else:
            words.append(zlib.crc32(str(part).encode()))
    return _seed_of(tuple(words))


@functools.lru_cache(maxsize=1 << 16)
def _seed_of(words: tuple[int, ...]) -> int:
    # Cached: the same seeds are asked for by every agent, the store and the episode.
    state = np.random.SeedSequence(list(words)).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


def record_rounds(horizon: int, n_points: int = 64) -> np.ndarray:
    """At most ``n_points`` rounds of 1..T (always T) to keep: half log-, half evenly spaced."""
    horizon = check_int("horizon", horizon, minimum=1)
    n_points = check_int("n_points", n_points, minimum=2)
    half = max(1, n_points // 2)
    log_part = np.round(np.geomspace(1, horizon, n_points - half))
    even_part = np.round(np.linspace(horizon / half, horizon, half))
    rounds = np.union1d(log_part, even_part).astype(np.int64)
    return np.union1d(rounds[(rounds >= 1) & (rounds <= horizon)], [horizon])


@dataclass(frozen=True)
class AgentEntry:
    """An agent in a grid: registry name, keyword parameters and a display label."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.params, Mapping):
            object.__setattr__(self, "params", plain_numbers(self.params))

    @cached_property  # frozen: parameters cannot change (a replay's array is hashed once)
    def key(self) -> str:
        """Stable identity of the entry (name + parameters)."""
        return f"{self.name}{canonical_json(self.params)}" if self.params else self.name

    @property
    def display(self) -> str:
        """The label, or the name with its parameters."""
        if self.label:
            return self.label
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.name}[{inner}]"


@dataclass(frozen=True)
class EnvEntry:
    """An environment in a grid: registered id, constructor keywords and a display label."""

    id: str
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str):
            raise TypeError(f"env id must be a string, got {self.id!r}")
        if not isinstance(self.params, Mapping):
            raise TypeError(f"parameters of env {self.id!r} must be a table/dict")
        object.__setattr__(self, "params", plain_numbers(self.params))

    @cached_property  # frozen: parameters cannot change (a replay's array is hashed once)
    def key(self) -> str:
        """Stable identity of the entry (id + parameters)."""
        return f"{self.id}{canonical_json(self.params)}"

    @property
    def display(self) -> str:
        """The label, or the id with its parameters."""
        if self.label:
            return self.label
        if not self.params:
            return self.id
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.id}[{inner}]"


@dataclass(frozen=True)
class Cell:
    """One unit of work: an agent on an env at one epsilon over a block of seed indices."""

    agent: AgentEntry
    env: EnvEntry
    epsilon: float | None
    seed_indices: tuple[int, ...]
    base_seed: int = 0
    n_record: int = 64

    def with_seeds(self, seed_indices: Sequence[int]) -> Cell:
        """The same cell over other seed indices (a seed's rows do not depend on its batch)."""
        return replace(self, seed_indices=tuple(int(i) for i in seed_indices))

    def env_seeds(self) -> list[int]:
        """Adversary seeds: keyed by (env, seed index) only, shared by every agent and epsilon."""
        return [derive_seed(self.base_seed, "env", self.env.key, i) for i in self.seed_indices]

    def agent_seeds(self) -> list[int]:
        """Agent seeds: keyed by (agent, epsilon, seed index)."""
        eps = "none" if self.epsilon is None else repr(float(self.epsilon))
        return [
            derive_seed(self.base_seed, "agent", self.agent.key, eps, i) for i in self.seed_indices
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (stored next to the cell's results)."""
        return {
            "agent": {
                "name": self.agent.name,
                "params": dict(self.agent.params),
                "label": self.agent.label,
            },
            "env": {"id": self.env.id, "params": dict(self.env.params), "label": self.env.label},
            "epsilon": self.epsilon,
            "seed_indices": list(self.seed_indices),
            "base_seed": self.base_seed,
            "n_record": self.n_record,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cell:
        """Inverse of :meth:`to_dict`."""
        return cls(
            agent=AgentEntry(
                data["agent"]["name"], dict(data["agent"]["params"]), data["agent"].get("label", "")
            ),
            env=EnvEntry(
                data["env"]["id"], dict(data["env"]["params"]), data["env"].get("label", "")
            ),
            epsilon=data["epsilon"],
            seed_indices=tuple(int(i) for i in data["seed_indices"]),
            base_seed=int(data["base_seed"]),
            n_record=int(data.get("n_record", 64)),
        )

    @cached_property  # frozen; the store asks once per seed, the backends once per part
    def cell_id(self) -> str:
        """Content hash naming the cell's result file."""
        digest = hashlib.sha1(canonical_json(self.to_dict()).encode()).hexdigest()[:16]
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in self.agent.name)
        eps = "np" if self.epsilon is None else f"e{self.epsilon:g}"
        return f"{safe}-{eps}-{digest}"


def _check_agent_keywords(name: str, params: Mapping[str, Any]) -> None:
    """Name a misspelt or foreign learner parameter and list the ones the learner takes."""
    import inspect

    import agents as agents_pkg

    signature = inspect.signature(agents_pkg.spec(name).cls.__init__)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return
    accepted = sorted(k for k in signature.parameters if k != "self")
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"{', '.join(map(repr, unknown))} "
            f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
            f"of agent {name!r}; it accepts {accepted}"
        )


#: Most seeds a grid runs (a million is ~64 million rows per cell: more is a typo).
MAX_SEEDS = 1_000_000
#: Most recorded rounds per curve (each is a row per seed; figures need ~100).
MAX_RECORD = 100_000

_GRID_KEYS = {
    "agent",
    "env",
    "epsilons",
    "seeds",
    "base_seed",
    "seeds_per_cell",
    "n_record",
    "pairs",
    "output",
}


@dataclass
class Grid:
    """agents x envs x epsilons x seeds.

    Args:
        agents: agent entries (or plain names).
        envs: env entries (or plain ids).
        epsilons: privacy levels; non-private agents run once per seed, not once per epsilon.
        n_seeds: seeds per (agent, env, epsilon).
        base_seed: root of every derived seed.
        seeds_per_cell: seeds batched into one cell (None: all of them).
        n_record: log-spaced rounds kept per curve.
        pairs: only these ``(env display, epsilon)`` pairs of the cross product (None: all);
            non-private agents play each listed env once.
    """

    agents: Sequence[AgentEntry | str]
    envs: Sequence[EnvEntry | str]
    epsilons: Sequence[float] = (1.0,)
    n_seeds: int = 10
    base_seed: int = 0
    seeds_per_cell: int | None = None
    n_record: int = 64
    pairs: Sequence[tuple[str, float]] | None = None

    def __post_init__(self) -> None:
        self.agents = [a if isinstance(a, AgentEntry) else AgentEntry(a) for a in self.agents]
        self.envs = [e if isinstance(e, EnvEntry) else EnvEntry(e) for e in self.envs]
        if not self.agents:
            raise ValueError("agents must list at least one agent")
        if not self.envs:
            raise ValueError("envs must list at least one environment")
        for a in self.agents:
            if not isinstance(a.name, str):
                raise TypeError(f"agent name must be a string, got {a.name!r}")
            if not isinstance(a.params, Mapping):
                raise TypeError(f"parameters of agent {a.name!r} must be a table/dict")
        if isinstance(self.epsilons, numbers.Real):
            self.epsilons = [self.epsilons]
        if isinstance(self.epsilons, (str, bytes, Mapping)) or not hasattr(
            self.epsilons, "__iter__"
        ):
            raise TypeError(
                f"epsilons must be a number or a list of numbers, got {self.epsilons!r}"
            )
        # inf runs a private learner with its noise removed (the right end of its curve).
        self.epsilons = [check_learner_epsilon("epsilons", e) for e in self.epsilons]
        if not self.epsilons:
            raise ValueError("epsilons must list at least one value")
        self.n_seeds = check_int("seeds", self.n_seeds, minimum=1, maximum=MAX_SEEDS)
        self.base_seed = check_int("base_seed", self.base_seed, minimum=0, maximum=2**63 - 1)
        if self.seeds_per_cell is not None:
            self.seeds_per_cell = check_int(
                "seeds_per_cell", self.seeds_per_cell, minimum=1, maximum=MAX_SEEDS
            )
        self.n_record = check_int("n_record", self.n_record, minimum=2, maximum=MAX_RECORD)
        labels = [a.display for a in self.agents]
        dupes = {x for x in labels if labels.count(x) > 1}
        if dupes:
            raise ValueError(f"agent entries must be distinct; give a label to: {sorted(dupes)}")
        if self.pairs is not None:
            self.pairs = self._check_pairs(self.pairs)

    def _check_pairs(self, pairs: Any) -> list[tuple[str, float]]:
        if isinstance(pairs, (str, bytes, Mapping)) or not hasattr(pairs, "__iter__"):
            raise TypeError(f"pairs must be a list of [env label, epsilon], got {pairs!r}")
        envs = {e.display for e in self.envs}
        out = []
        for pair in pairs:
            if isinstance(pair, (str, bytes)) or len(pair) != 2:
                raise ValueError(f"pairs: each pair is [env label, epsilon], got {pair!r}")
            env, eps = pair[0], check_learner_epsilon("pairs", pair[1])
            if env not in envs:
                raise ValueError(f"pairs: {env!r} is not an env of the grid; envs: {sorted(envs)}")
            if eps not in self.epsilons:
                raise ValueError(f"pairs: epsilon {eps!r} is not in epsilons {self.epsilons}")
            out.append((env, eps))
        if not out:
            raise ValueError("pairs must list at least one [env label, epsilon] (or be omitted)")
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Grid:
        """Build from a mapping with the TOML layout (see docs/grid.md)."""
        unknown = set(data) - _GRID_KEYS
        if unknown:
            raise ValueError(
                f"unknown grid key(s) {sorted(unknown)}; allowed: {sorted(_GRID_KEYS)}"
            )
        output = data.get("output")
        if output is not None and not isinstance(output, str):
            raise ValueError(f"grid key 'output' must be a folder path string, got {output!r}")
        agents_raw = data.get("agent")
        envs_raw = data.get("env")
        if not agents_raw or not isinstance(agents_raw, list):
            raise ValueError("grid needs at least one [[agent]] table with a 'name'")
        if not envs_raw or not isinstance(envs_raw, list):
            raise ValueError("grid needs at least one [[env]] table with an 'id'")
        agents = []
        for i, entry in enumerate(agents_raw):
            if not isinstance(entry, Mapping) or "name" not in entry:
                raise ValueError(f"[[agent]] number {i + 1} needs a 'name'")
            params = {k: v for k, v in entry.items() if k not in ("name", "label")}
            agents.append(AgentEntry(entry["name"], params, entry.get("label", "")))
        envs = []
        for i, entry in enumerate(envs_raw):
            if not isinstance(entry, Mapping) or "id" not in entry:
                raise ValueError(f"[[env]] number {i + 1} needs an 'id'")
            params = {k: v for k, v in entry.items() if k not in ("id", "label")}
            envs.append(EnvEntry(entry["id"], params, entry.get("label", "")))
        return cls(
            agents=agents,
            envs=envs,
            epsilons=data.get("epsilons", [1.0]),
            n_seeds=data.get("seeds", 10),
            base_seed=data.get("base_seed", 0),
            seeds_per_cell=data.get("seeds_per_cell"),
            n_record=data.get("n_record", 64),
            pairs=data.get("pairs"),
        )

    @classmethod
    def from_toml(cls, path: str | Path) -> Grid:
        """Read a grid file; syntax errors and unknown keys name the file and the problem."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"grid file {str(path)!r} does not exist")
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"grid file {str(path)!r} is not valid TOML: {err}") from err
        except RecursionError as err:  # the parser recurses once per level of nesting
            raise ValueError(
                f"grid file {str(path)!r}: arrays or tables nested too deeply to parse (a grid "
                "needs two levels)"
            ) from err
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as err:
            raise type(err)(f"grid file {str(path)!r}: {err}") from err

    def cells(self) -> list[Cell]:
        """Every cell of the grid, in a stable order."""
        from agents import spec  # evaluation sits on top: it may see agents

        block = self.seeds_per_cell or self.n_seeds
        blocks = [
            tuple(range(start, min(start + block, self.n_seeds)))
            for start in range(0, self.n_seeds, block)
        ]
        wanted = None if self.pairs is None else set(self.pairs)
        out = []
        for env in self.envs:
            for agent in self.agents:
                private = spec(agent.name).private and "epsilon" not in agent.params
                epsilons: list[float | None] = list(self.epsilons) if private else [None]
                if wanted is not None:
                    listed = [e for e in self.epsilons if (env.display, e) in wanted]
                    epsilons = [e for e in epsilons if e in listed or (e is None and listed)]
                for eps in epsilons:
                    for seeds in blocks:
                        out.append(Cell(agent, env, eps, seeds, self.base_seed, self.n_record))
        return out

    def validate(self) -> None:
        """Fail before any cell runs: unknown names, incompatible feedback, bad parameters.

        Each (agent, env) pair is built once with one run, playing no round.

        Raises:
            ValueError: naming the env or agent and the problem.
        """
        import gymnasium as gym

        import agents as agents_pkg

        for env in self.envs:
            if "render_mode" in env.params:
                # The single env below would accept it; the vector envs cells play would not.
                raise ValueError(
                    f"env {env.display}: render_mode is not a grid parameter (cells run vector "
                    "envs, which do not render); remove it"
                )
            try:
                gym.spec(env.id)
            except gym.error.Error as err:
                ids = sorted(i for i in gym.registry if i.startswith("DPExperts"))
                raise ValueError(
                    f"unknown env id {env.id!r}{did_you_mean(env.id, ids)}; registered: {ids}"
                ) from err
            try:
                instance = gym.make(env.id, **dict(env.params))
            except (TypeError, ValueError) as err:
                # gymnasium appends its internal kwargs to the creator's own, clearer message.
                cause = err.__cause__ if isinstance(err.__cause__, TypeError) else err
                raise ValueError(f"env {env.display}: {cause}") from err
            for agent in self.agents:
                agents_pkg.spec(agent.name)  # unknown name -> ValueError listing the names
                params = dict(agent.params)
                if agents_pkg.spec(agent.name).private:
                    params.setdefault("epsilon", self.epsilons[0])
                _check_agent_keywords(agent.name, agent.params)
                try:
                    agents_pkg.make(agent.name, env=instance, seed=0, **params)
                except (TypeError, ValueError) as err:
                    raise ValueError(f"agent {agent.display} on {env.display}: {err}") from err
            self._check_batch_memory(env, instance.unwrapped)
            instance.close()

    def _check_batch_memory(self, env: EnvEntry, base: Any) -> None:
        """Refuse a cell batch whose env arrays would not fit (all learners, epsilons at once)."""
        from dp_experts_env._validation import check_memory

        block = self.seeds_per_cell or self.n_seeds
        runs = block * len(self.agents) * len(self.epsilons)
        dim = getattr(base, "dim", None)
        per_run = 64 * dim if dim is not None else 200 * (base.n_experts + (base.n_arms or 1))
        check_memory(f"env {env.display} with {block} seeds per cell x {runs // block} "
                     "learner/epsilon cells (seeds_per_cell)", per_run * runs)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The TOML layout as a dict (written next to results)."""
        return {
            "agent": [
                {"name": a.name, **dict(a.params), **({"label": a.label} if a.label else {})}
                for a in self.agents
            ],
            "env": [
                {"id": e.id, **dict(e.params), **({"label": e.label} if e.label else {})}
                for e in self.envs
            ],
            "epsilons": list(self.epsilons),
            "seeds": self.n_seeds,
            "base_seed": self.base_seed,
            "n_record": self.n_record,
            **({"seeds_per_cell": self.seeds_per_cell} if self.seeds_per_cell else {}),
            **({"pairs": [list(p) for p in self.pairs]} if self.pairs is not None else {}),
        }


def epsilon_label(epsilon: float | None) -> float:
    """Epsilon as stored in rows: ``inf`` for non-private agents."""
    return math.inf if epsilon is None else float(epsilon)
