"""Where cells run: in this process, a local process pool, or a Ray cluster.

Every backend maps the pure function :func:`~dp_experts_env.evaluation.episode.run_one` over
cells and yields ``(cell, rows)`` as cells finish; the caller stores each result as it arrives,
so an interrupted sweep keeps every finished cell. Results do not depend on the backend: a cell's
seeds come from the cell itself.
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
from dp_experts_env.evaluation.episode import run_one
from dp_experts_env.evaluation.grid import Cell
from dp_experts_env.evaluation.store import SweepError

__all__ = ["BACKENDS", "execute"]

BACKENDS = ("local", "serial", "ray")

Result = tuple[Cell, list[dict[str, Any]]]


def _serial(cells: Sequence[Cell]) -> Iterator[Result]:
    for cell in cells:
        yield cell, run_one(cell)


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


def _init_worker(parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group; the parent reports it and stops the workers, so
    # the workers ignore it instead of each printing a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()


def _local(cells: Sequence[Cell], n_jobs: int) -> Iterator[Result]:
    # "spawn" keeps workers free of the parent's threads and state (numpy/BLAS, matplotlib).
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(
            max_workers=n_jobs,
            mp_context=context,
            initializer=_init_worker,
            initargs=(os.getpid(),),
        ) as pool:
            futures = {pool.submit(run_one, cell): cell for cell in cells}
            try:
                for future in as_completed(futures):
                    yield futures[future], future.result()
            except BaseException:
                for future in futures:
                    future.cancel()
                # Running cells cannot be cancelled; without this the pool's exit would wait
                # for them (a Ctrl-C that hangs until the slowest cell ends).
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.terminate()
                raise
    except BrokenProcessPool as err:
        raise SweepError(_BROKEN_POOL) from err


def _ray(cells: Sequence[Cell], address: str | None) -> Iterator[Result]:
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
    remote = ray.remote(run_one)
    pending = {remote.remote(cell): cell for cell in cells}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                cell = pending.pop(ref)
                yield cell, ray.get(ref)
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
    """Run cells on a backend, yielding results as they finish.

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
        return _serial(cells)
    if backend == "ray":
        return _ray(cells, address)
    jobs = (os.cpu_count() or 1) if n_jobs is None else check_int("n_jobs", n_jobs, minimum=1)
    if jobs == 1 or len(cells) == 1:
        return _serial(cells)
    return _local(cells, min(jobs, len(cells)))
