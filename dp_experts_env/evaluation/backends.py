"""Where cells run: in this process, a local process pool, or a Ray cluster.

Every backend maps the pure function :func:`~dp_experts_env.evaluation.episode.run_cells` over
*units* of work and yields ``(cell, rows)`` as units finish; the caller stores each result as it
arrives, so an interrupted sweep keeps every finished unit. A unit is a list of cells that play
one episode together (same env, seeds and recorded rounds: :func:`plan_units`), so a loss stream
is simulated once per unit, not once per cell. Results do not depend on the backend nor on how
cells are grouped: a cell's seeds come from the cell itself.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from dp_experts_env._validation import check_choice, check_int
from dp_experts_env.evaluation.episode import group_key, run_cells
from dp_experts_env.evaluation.grid import Cell

__all__ = ["BACKENDS", "execute", "plan_units"]

BACKENDS = ("local", "serial", "ray")

Result = tuple[Cell, list[dict[str, Any]]]


def plan_units(cells: Sequence[Cell], n_units: int = 1) -> list[list[Cell]]:
    """Group cells that can share one episode, split so there are about ``n_units`` units.

    Cells with the same env, seed indices and recorded rounds form a group (in the order they
    first appear). Each group is one unit, unless fewer groups than ``n_units`` exist: then the
    largest groups are split (each part simulates the loss stream again, so splitting buys
    parallel workers with a little extra work). A split keeps a learner's cells together and
    deals learners out to the parts in turn, heaviest first (private learners have one cell per
    epsilon).
    """
    groups: dict[Any, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(group_key(cell), []).append(cell)
    units = list(groups.values())
    while len(units) < n_units:
        largest = max(units, key=len)
        learners: dict[str, list[Cell]] = {}
        for cell in largest:
            learners.setdefault(cell.agent.key, []).append(cell)
        if len(learners) < 2:
            break
        parts: list[list[Cell]] = [[], []]
        for block in sorted(learners.values(), key=len, reverse=True):
            min(parts, key=len).extend(block)
        units.remove(largest)
        units.extend(parts)
    return units


def _serial(units: Sequence[list[Cell]]) -> Iterator[Result]:
    for unit in units:
        yield from run_cells(unit)


_BROKEN_POOL = (
    "a worker process of backend='local' died. Workers are started with 'spawn', which re-imports "
    'the calling script: a script that calls run_grid needs an `if __name__ == "__main__":` '
    "guard. Otherwise the worker ran out of memory or crashed; backend='serial' runs the cells in "
    "this process and shows the error"
)


def _watch_parent(parent_pid: int, interval: float = 0.5) -> None:
    """Exit this worker as soon as its parent is gone (a daemon thread polls the parent id).

    Without it a worker of a killed sweep plays its cell to the end as an orphan (a pool worker
    notices the lost parent only when it next reads its task queue).
    """
    while True:
        time.sleep(interval)
        if os.getppid() != parent_pid:
            os._exit(1)


def _load_plugins() -> None:
    """Register the outside learners and families in this (worker) process.

    A spawned or Ray worker starts with the built-ins only: the learners of ``DP_EXPERTS_PLUGINS``
    modules and of installed entry points register here, before any cell looks a name up.
    """
    from agents.registry import load_plugins
    from dp_experts_env.adversaries.registry import load_family_plugins

    load_plugins()
    load_family_plugins()


def _run_unit(unit: Sequence[Cell]) -> list[Result]:
    """:func:`run_cells` in a worker: plug-ins first (Ray workers run no initializer)."""
    _load_plugins()
    return run_cells(unit)


def _init_worker(parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group; the parent reports it and stops the workers, so
    # the workers ignore it instead of each printing a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    _load_plugins()


def _local(units: Sequence[list[Cell]], n_jobs: int) -> Iterator[Result]:
    """``n_jobs`` processes play the units: this one and ``n_jobs - 1`` pool workers.

    A spawned worker pays its interpreter start and imports (about 2 s of CPU) before its first
    cell; this process has paid them already, so it plays the first unit itself while the
    workers play the others, then takes over any unit no worker has started.
    """
    # "spawn" keeps workers free of the parent's threads and state (numpy/BLAS, matplotlib).
    context = multiprocessing.get_context("spawn")
    own, rest = units[0], list(units[1:])
    try:
        with ProcessPoolExecutor(
            max_workers=max(1, min(n_jobs - 1, len(rest))),
            mp_context=context,
            initializer=_init_worker,
            initargs=(os.getpid(),),
        ) as pool:
            futures = [pool.submit(_run_unit, unit) for unit in rest]
            try:
                yield from run_cells(own)
                for future, unit in zip(futures, rest, strict=True):
                    if future.cancel():  # not started by a worker yet: play it here
                        yield from run_cells(unit)
                for future in as_completed([f for f in futures if not f.cancelled()]):
                    yield from future.result()
            except BaseException:
                for future in futures:
                    future.cancel()
                # Running cells cannot be cancelled; without this the pool's exit would wait
                # for them (a Ctrl-C that hangs until the slowest cell ends).
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.terminate()
                raise
    except BrokenProcessPool as err:
        from dp_experts_env.evaluation.store import SweepError  # pandas: not in every worker

        raise SweepError(_BROKEN_POOL) from err


def _ray(units: Sequence[list[Cell]], address: str | None) -> Iterator[Result]:
    try:
        import ray
    except ImportError as err:  # pragma: no cover - depends on the extra
        raise RuntimeError("backend='ray' needs Ray: pip install 'dp-experts-env[ray]'") from err
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
    from dp_experts_env.plugins import worker_env

    # Ray workers are fresh processes that may not share this one's environment (a cluster):
    # the plug-in modules and their folders travel with every task.
    carried = worker_env()
    remote = ray.remote(_run_unit)
    if carried:
        remote = remote.options(runtime_env={"env_vars": carried})
    pending = {remote.remote(unit): unit for unit in units}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                pending.pop(ref)
                yield from ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref)
        if started_here:
            ray.shutdown()


def execute(
    cells: Sequence[Cell],
    *,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
) -> Iterator[Result]:
    """Run cells on a backend, yielding ``(cell, rows)`` as their units finish.

    Args:
        cells: the cells to run.
        backend: ``local`` (process pool, default), ``serial`` (this process) or ``ray``.
        n_jobs: worker processes for ``local`` (default: the number of CPUs).
        address: Ray cluster address (default: ``RAY_ADDRESS`` or a local Ray instance).
    """
    check_choice("backend", backend, BACKENDS)
    if not cells:
        return iter(())
    if backend == "serial":
        return _serial(plan_units(cells))
    if backend == "ray":
        return _ray(plan_units(cells, os.cpu_count() or 1), address)
    jobs = (os.cpu_count() or 1) if n_jobs is None else check_int("n_jobs", n_jobs, minimum=1)
    units = plan_units(cells, jobs)
    if jobs == 1 or len(units) == 1:
        return _serial(units)
    return _local(units, min(jobs, len(units)))
