"""Where cells run: in this process, a local process pool, or a Ray cluster.

Every backend maps the pure :func:`~dp_experts_env.evaluation.episode.run_cells` over *units*
(cells that play one episode together: :func:`plan_units`) and yields each unit's results as it
finishes. Results do not depend on the backend nor on the grouping. docs/grid.md ("Backends").
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from dp_experts_env._jit import numpy_path
from dp_experts_env._validation import check_choice, check_int
from dp_experts_env.evaluation import episode as episode_mod
from dp_experts_env.evaluation.episode import group_key, run_cells
from dp_experts_env.evaluation.grid import Cell

__all__ = [
    "BACKENDS",
    "CellCompletion",
    "execute",
    "execute_units",
    "plan_units",
    "estimate_work",
    "estimate_seconds",
    "ray_tasks",
    "worth_processes",
    "shared_pool",
]

BACKENDS = ("local", "serial", "ray")

Result = tuple[Cell, list[dict[str, Any]]]
#: A cell (or a seed block of one) and its runs: ``{seed index: run columns}``.
UnitResult = tuple[Cell, dict[int, Any]]


#: Run-rounds of work that pay for one more process (a worker's start-up under a tenth of it).
ROUNDS_PER_PROCESS = 20_000_000
#: Run-rounds below which a grid plays on the numpy path (loading numba would cost more).
JIT_MIN_WORK = 150_000
_DEFAULT_HORIZON = 10_000  # assumed for an env whose horizon is neither given nor declared


def _horizon(cell: Cell) -> int:
    horizon = cell.env.params.get("horizon")
    if horizon is None:
        import gymnasium as gym

        try:
            horizon = gym.spec(cell.env.id).kwargs.get("horizon")
        except Exception:  # an unknown id fails later, with the grid's own message
            horizon = None
    try:
        return max(1, int(horizon))
    except (TypeError, ValueError):
        return _DEFAULT_HORIZON


def estimate_work(cells: Sequence[Cell]) -> int:
    """Run-rounds of ``cells``: seeds x horizon, summed (what a sweep's CPU grows with)."""
    return sum(len(cell.seed_indices) * _horizon(cell) for cell in cells)


def _numpy_pays(cells: Sequence[Cell]) -> bool:
    """True below :data:`JIT_MIN_WORK` run-rounds, unless numba is loaded or a pool is shared."""
    return _SHARED is None and not _numba_loaded() and estimate_work(cells) < JIT_MIN_WORK


def _numba_loaded() -> bool:
    return "numba" in sys.modules


def worth_processes(cells: Sequence[Cell]) -> int:
    """How many processes the work of ``cells`` pays for: one per :data:`ROUNDS_PER_PROCESS`."""
    return max(1, estimate_work(cells) // ROUNDS_PER_PROCESS)


#: CPU nanoseconds per run-round of the built-in learners (``benchmarks/learner_costs.py``),
#: the weights of the Ray planner; a learner not listed (a plug-in) counts :data:`DEFAULT_NS`.
#: ppo's weight is its frozen policy's block play; its training (once per process) is not in it.
LEARNER_NS = {
    "limited-updates": 420, "randomized-prefix-softmax": 490, "ldp-exp4": 510,
    "private-lazy-hedge": 510, "adap-ucb": 510, "exp3": 520, "private-shrinking-dartboard": 530,
    "exp4": 530, "private-batched-exp4": 550, "dp-se": 550,
    "batched-private-shrinking-dartboard": 550, "uniform": 570, "dp-klucb": 600,
    "follow-the-leader": 600, "shrinking-dartboard": 670, "hedge": 720, "dp-ftrl-tree": 870,
    "private-fixed-share": 900, "ftpl-gr": 960, "tsallis-inf": 1_000, "fixed-share": 1_000,
    "noisy-clipped-hedge": 1_000, "gaussian-tree-hedge": 1_100, "private-batched-bandit": 1_200,
    "private-bandit-over-experts": 1_200, "meta-expert-reduction": 1_800, "kl-ucb": 2_100,
    "lazy-ftrl-oco": 2_300, "ogd": 2_300, "ftrl-oco": 2_300, "dp-ftrl-oco": 2_400,
    "svt-restart": 2_500, "p-comw": 3_100, "p-comw-lazy": 3_200, "ucb1": 480,
    "gaussian-dp-ftrl-oco": 3_500, "thompson": 5_500, "randomized-prefix-softmax:paper": 470,
    "dp-klucb:paper": 590, "private-batched-exp4:paper": 790, "svt-restart:paper": 4_400,
    "ppo": 2_600,
}  # fmt: skip
DEFAULT_NS = 1_000
#: Estimated CPU seconds a Ray task carries at least (a worker's start-up near a tenth of it);
#: ``DP_EXPERTS_RAY_TASK_SECONDS`` overrides it (``0``: one task per cluster CPU).
RAY_TASK_SECONDS = 20.0


def _cell_seconds(cell: Cell) -> float:
    ns = LEARNER_NS.get(cell.agent.name, DEFAULT_NS)
    return len(cell.seed_indices) * _horizon(cell) * ns * 1e-9


def estimate_seconds(cells: Sequence[Cell]) -> float:
    """Estimated CPU seconds of ``cells``: their run-rounds weighed by :data:`LEARNER_NS`."""
    return sum(_cell_seconds(cell) for cell in cells)


def _task_seconds() -> float:
    text = os.environ.get("DP_EXPERTS_RAY_TASK_SECONDS")
    if text is None:
        return RAY_TASK_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(
            f"DP_EXPERTS_RAY_TASK_SECONDS must be a finite number >= 0 (seconds), got {text!r}"
        )
    return value


def ray_tasks(
    cells: Sequence[Cell], cpus: int, task_seconds: float | None = None
) -> list[list[list[Cell]]]:
    """The Ray backend's tasks: lists of units, one per ``task_seconds`` of work, 1 to ``cpus``.

    ``task_seconds`` defaults to :data:`RAY_TASK_SECONDS` (``0``: ``cpus`` tasks). Surplus units
    are dealt heaviest first, each to the lightest task. Pure planning (no Ray).
    """
    floor = _task_seconds() if task_seconds is None else task_seconds
    cpus = check_int("cpus", cpus, minimum=1)
    n = cpus if floor <= 0 else max(1, min(cpus, int(estimate_seconds(cells) // floor)))
    units = plan_units(cells, n, seed_blocks=True)
    if len(units) <= n:
        return [[unit] for unit in units]
    tasks: list[list[list[Cell]]] = [[] for _ in range(n)]
    loads = [0.0] * n
    for unit in sorted(units, key=estimate_seconds, reverse=True):
        i = loads.index(min(loads))
        tasks[i].append(unit)
        loads[i] += estimate_seconds(unit)
    return tasks


#: Seeds a unit keeps before learners are split instead (smaller batches cost more per run).
MIN_SEED_BLOCK = 16


def _split_seeds(units: list[list[Cell]], n_units: int, min_block: int) -> None:
    """Halve the seed block of the heaviest unit until ``n_units`` (no work is repeated)."""
    while len(units) < n_units:
        largest = max(units, key=estimate_seconds)
        seeds = largest[0].seed_indices
        if len(seeds) < 2 * min_block:
            return
        half = len(seeds) // 2
        units.remove(largest)
        units.append([c.with_seeds(seeds[:half]) for c in largest])
        units.append([c.with_seeds(seeds[half:]) for c in largest])


def plan_units(
    cells: Sequence[Cell], n_units: int = 1, *, seed_blocks: bool = False
) -> list[list[Cell]]:
    """Group cells that can share one episode, split so there are about ``n_units`` units.

    Groups (same :func:`~dp_experts_env.evaluation.episode.group_key`) are split between
    learners, heaviest first, while there are fewer than ``n_units``. With ``seed_blocks`` (Ray)
    seed blocks are halved first down to :data:`MIN_SEED_BLOCK` seeds, and after the learner
    split down to one seed.
    """
    groups: dict[Any, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(group_key(cell), []).append(cell)
    units = list(groups.values())
    if seed_blocks:
        _split_seeds(units, n_units, MIN_SEED_BLOCK)
    _split_learners(units, n_units)
    if seed_blocks:
        _split_seeds(units, n_units, 1)
    return units


def _split_learners(units: list[list[Cell]], n_units: int) -> None:
    while len(units) < n_units:
        largest = max(units, key=estimate_seconds)
        learners: dict[str, list[Cell]] = {}
        for cell in largest:
            learners.setdefault(cell.agent.key, []).append(cell)
        if len(learners) < 2:
            break
        parts: list[list[Cell]] = [[], []]
        for block in sorted(learners.values(), key=estimate_seconds, reverse=True):
            min(parts, key=estimate_seconds).extend(block)
        units.remove(largest)
        units.extend(parts)


#: ``callback(index of the unit, fraction of its current episode played)``.
Progress = Callable[[int, float], None]
_REPORT_EVERY = 0.5  # seconds between progress reports of one process


def _reporter(send: Callable[[int, float], None]) -> Callable[[int, int], None]:
    """An episode hook that calls ``send(unit, t / T)`` at most every half second."""
    last = [0.0]

    def hook(t: int, horizon: int) -> None:
        now = time.monotonic()
        if now - last[0] >= _REPORT_EVERY:
            last[0] = now
            send(_UNIT[0], t / horizon)

    return hook


_UNIT = [0]  # index of the unit this process is playing (read by its progress hook)


def _shipped(results: list[Result], as_columns: bool) -> list[Any]:
    """A unit's results as they leave the process: rows, or per seed columns of arrays."""
    if not as_columns:
        return results
    from dp_experts_env.evaluation.columns import by_seed

    return [(cell, by_seed(rows)) for cell, rows in results]


def _play(
    unit: list[Cell], index: int, numpy_only: bool = False, as_columns: bool = False
) -> list[Any]:
    """Play one unit, on the numpy path if ``numpy_only``; results as columns or rows."""
    _UNIT[0] = index
    if numpy_only:
        with numpy_path():
            return _shipped(run_cells(unit), as_columns)
    return _shipped(run_cells(unit), as_columns)


def _serial(
    units: Sequence[list[Cell]],
    progress: Progress | None = None,
    numpy_only: bool = False,
    as_columns: bool = False,
) -> Iterator[list[Any]]:
    with _hooked(progress):
        for index, unit in enumerate(units):
            yield _play(unit, index, numpy_only, as_columns)


@contextlib.contextmanager
def _hooked(progress: Progress | None) -> Iterator[None]:
    """Report this process's episodes to ``progress`` while the block runs."""
    if progress is None:
        yield
        return
    previous = episode_mod.progress_hook
    episode_mod.progress_hook = _reporter(progress)
    try:
        yield
    finally:
        episode_mod.progress_hook = previous


_BROKEN_POOL = (
    "a worker process of backend='local' died. Workers are started with 'spawn', which re-imports "
    'the calling script: a script that calls run_grid needs an `if __name__ == "__main__":` '
    "guard. Otherwise the worker ran out of memory or crashed; backend='serial' runs the cells in "
    "this process and shows the error"
)


def _watch_parent(parent_pid: int, interval: float = 0.5) -> None:
    """Exit this worker as soon as its parent is gone, rather than finish its cell as an orphan."""
    while True:
        time.sleep(interval)
        if os.getppid() != parent_pid:
            os._exit(1)


def _load_plugins() -> None:
    """Register the outside learners and families in this (spawned or Ray) worker process."""
    from agents.registry import load_plugins
    from dp_experts_env.adversaries.registry import load_family_plugins

    load_plugins()
    load_family_plugins()


def _run_task(task: Sequence[Sequence[Cell]], as_columns: bool = False) -> list[Any]:
    """:func:`run_cells` over a Ray task's units: plug-ins first (Ray runs no initializer)."""
    _load_plugins()
    return _shipped([pair for unit in task for pair in run_cells(unit)], as_columns)


def _init_worker(parent_pid: int, reports: Any = None) -> None:
    # Ctrl-C reaches the whole process group; the parent alone reports it and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    _load_plugins()
    if reports is not None:  # progress inside a unit goes to the parent through a queue
        episode_mod.progress_hook = _reporter(lambda unit, frac: reports.put((unit, frac)))


def _local(
    units: Sequence[list[Cell]],
    n_jobs: int,
    progress: Progress | None = None,
    as_columns: bool = False,
) -> Iterator[list[Any]]:
    """``n_jobs`` processes play the units: this one (the first and unstarted ones) and workers."""
    # "spawn" keeps workers free of the parent's threads and state (numpy/BLAS, matplotlib).
    context = multiprocessing.get_context("spawn")
    own, rest = units[0], list(units[1:])
    reports = context.Queue() if progress is not None else None

    def drain() -> None:
        while reports is not None:
            try:
                progress(*reports.get_nowait())  # type: ignore[misc]
            except queue.Empty:
                return

    def relay(unit: int, frac: float) -> None:  # this process's own episodes, and the queue
        progress(unit, frac)  # type: ignore[misc]
        drain()

    if _SHARED is not None:  # one pool for every grid of the block (shared_pool)
        reports = None  # the pool outlives this call: its workers do not report progress
        pool = _SHARED.get(max(1, n_jobs - 1), context)
        owned: contextlib.AbstractContextManager[Any] = contextlib.nullcontext(pool)
    else:
        owned = ProcessPoolExecutor(
            max_workers=max(1, min(n_jobs - 1, len(rest))),
            mp_context=context,
            initializer=_init_worker,
            initargs=(os.getpid(), reports),
        )
    try:
        with owned as pool:
            # Futures dropped once yielded: a finished one keeps its rows until the pool exits.
            futures = {
                pool.submit(_play, unit, i + 1, False, as_columns): i + 1
                for i, unit in enumerate(rest)
            }
            try:
                with _hooked(relay if progress is not None else None):
                    yield _play(own, 0, False, as_columns)
                    for future, index in list(futures.items()):
                        if future.cancel():  # not started by a worker yet: play it here
                            del futures[future]
                            yield _play(rest[index - 1], index, False, as_columns)
                while futures:
                    done, _ = wait(
                        list(futures), timeout=_REPORT_EVERY, return_when=FIRST_COMPLETED
                    )
                    drain()
                    for future in done:
                        del futures[future]
                        yield future.result()
            except BaseException:
                for future in list(futures):
                    future.cancel()
                # Running cells cannot be cancelled: the pool's exit would wait for them.
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.terminate()
                if _SHARED is not None:
                    _SHARED.drop()
                raise
    except BrokenProcessPool as err:
        from dp_experts_env.evaluation.store import SweepError  # pandas: not in every worker

        raise SweepError(_BROKEN_POOL) from err


class _SharedPool:
    """A process pool started at the first grid that needs one and kept for the next grids."""

    def __init__(self) -> None:
        self.pool: ProcessPoolExecutor | None = None
        self.workers = 0

    def get(self, workers: int, context: Any) -> ProcessPoolExecutor:
        if self.pool is None or workers > self.workers:
            self.drop()  # a larger grid than the pool was started for: a larger pool
            self.pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=_init_worker,
                initargs=(os.getpid(), None),
            )
            self.workers = workers
        return self.pool

    def drop(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool, self.workers = None, 0


_SHARED: _SharedPool | None = None


@contextlib.contextmanager
def shared_pool() -> Iterator[None]:
    """Every ``local`` run inside the block uses one process pool; nested blocks share it."""
    global _SHARED
    if _SHARED is not None:
        yield
        return
    _SHARED = _SharedPool()
    try:
        yield
    finally:
        shared, _SHARED = _SHARED, None
        shared.drop()


def _ray(
    cells: Sequence[Cell], address: str | None, as_columns: bool = False
) -> Iterator[list[Any]]:
    """Play the cells as Ray tasks (below :data:`RAY_TASK_SECONDS` of work: here, no Ray)."""
    try:
        import ray
    except ImportError as err:  # pragma: no cover - depends on the extra
        raise RuntimeError("backend='ray' needs Ray: pip install 'dp-experts-env[ray]'") from err
    if 0 < _task_seconds() and estimate_seconds(cells) < _task_seconds():
        yield from _serial(plan_units(cells, 1), None, _numpy_pays(cells), as_columns)
        return
    address = address or os.environ.get("RAY_ADDRESS")
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        else:
            ray.init(
                num_cpus=os.cpu_count(),
                include_dashboard=False,
                log_to_driver=False,
                ignore_reinit_error=True,
            )
    # The cluster's CPUs, not this machine's (a 2-CPU head fills a 64-CPU cluster).
    cpus = int(ray.cluster_resources().get("CPU", 0)) or (os.cpu_count() or 1)
    tasks = ray_tasks(cells, cpus)
    from dp_experts_env.plugins import worker_env

    # A cluster's workers may not share this environment: the plug-ins travel with each task.
    carried = worker_env()
    remote = ray.remote(_run_task)
    if carried:
        remote = remote.options(runtime_env={"env_vars": carried})
    pending = [remote.remote(task, as_columns) for task in tasks]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref)
        if started_here:
            ray.shutdown()


class CellCompletion:
    """Which cell each returned part (a cell or a seed block of one) is from; when it is whole."""

    def __init__(self, cells: Sequence[Cell]) -> None:
        self._by_seed = {
            (seedless, i): c for c in cells for seedless in [_seedless(c)] for i in c.seed_indices
        }
        self._left = {c.cell_id: len(c.seed_indices) for c in cells}

    def whole(self, part: Cell) -> Cell:
        """The cell ``part`` was cut from (``part`` itself when it was not split)."""
        if part.cell_id in self._left:
            return part
        return self._by_seed[(_seedless(part), part.seed_indices[0])]

    def add(self, part: Cell) -> Cell | None:
        """Count ``part``'s seeds as returned; the whole cell once all its seeds are back."""
        whole = self.whole(part)
        self._left[whole.cell_id] -= len(part.seed_indices)
        return whole if self._left[whole.cell_id] == 0 else None


def _seedless(cell: Cell) -> str:
    return cell.with_seeds(()).cell_id


def _merge(whole: Cell, parts: list[tuple[Cell, list[dict[str, Any]]]]) -> Result:
    """The whole cell and its rows from its seed blocks, in seed order."""
    parts.sort(key=lambda part: part[0].seed_indices[0])
    return whole, [row for _, played in parts for row in played]


def _plan(cells: Sequence[Cell], backend: str, n_jobs: int | None) -> tuple[int, list[list[Cell]]]:
    if backend == "serial":
        jobs = 1
    elif n_jobs is None:  # as many processes as the work pays for, at most one per CPU
        jobs = min(os.cpu_count() or 1, worth_processes(cells))
    else:
        jobs = check_int("n_jobs", n_jobs, minimum=1)
    return jobs, plan_units(cells, jobs)


def _units(
    cells: Sequence[Cell],
    backend: str,
    n_jobs: int | None,
    address: str | None,
    progress: Callable[[list[Cell], float], None] | None,
    as_columns: bool,
) -> Iterator[list[Any]]:
    check_choice("backend", backend, BACKENDS)
    if not cells:
        return iter(())
    if backend == "ray":
        return _ray(cells, address, as_columns)
    jobs, units = _plan(cells, backend, n_jobs)
    report = None if progress is None else (lambda i, frac: progress(units[i], frac))
    if jobs == 1 or len(units) == 1:
        return _serial(units, report, _numpy_pays(cells), as_columns)
    return _local(units, min(jobs, len(units)), report, as_columns)


def execute_units(
    cells: Sequence[Cell],
    *,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    progress: Callable[[list[Cell], float], None] | None = None,
) -> Iterator[list[UnitResult]]:
    """Run cells on a backend, yielding each unit's results as the unit finishes.

    A unit's results are ``(cell, {seed index: run columns})`` pairs
    (:func:`~dp_experts_env.evaluation.columns.by_seed`); on ``ray`` a cell may come back in
    seed blocks (:class:`CellCompletion`). Arguments as :func:`execute`.
    """
    return _units(cells, backend, n_jobs, address, progress, True)


def execute(
    cells: Sequence[Cell],
    *,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    progress: Callable[[list[Cell], float], None] | None = None,
) -> Iterator[Result]:
    """Run cells on a backend, yielding ``(cell, rows)`` as their units finish.

    Args:
        cells: the cells to run.
        backend: ``local`` (process pool, default), ``serial`` (this process) or ``ray``.
        n_jobs: processes for ``local`` (default: the CPUs, at most :func:`worth_processes`).
        address: Ray cluster address (default: ``RAY_ADDRESS`` or a local Ray instance).
        progress: ``progress(unit's cells, fraction of its episode played)``, about every half
            second, in this process; not on ``ray``.

    Yields:
        ``(cell, rows)`` pairs.
    """
    units = _units(cells, backend, n_jobs, address, progress, False)
    if backend != "ray":
        return (result for unit in units for result in unit)
    return _whole_cells(cells, units)


def _whole_cells(cells: Sequence[Cell], units: Iterator[list[Result]]) -> Iterator[Result]:
    """Each cell once, whole, from the seed blocks the Ray units return."""
    completion = CellCompletion(cells)
    parts: dict[str, list[Result]] = {}
    for unit in units:
        for part, rows in unit:
            whole = completion.whole(part)
            parts.setdefault(whole.cell_id, []).append((part, rows))
            if completion.add(part) is not None:
                yield _merge(whole, parts.pop(whole.cell_id))
