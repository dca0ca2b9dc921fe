"""The default command's fixed cost (issue 25 item 4): no worker for small grids, PNG by default,
no ``scipy.stats`` for a summary. Known answers, no timings."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid, backends, default_grid
from dp_experts_env.evaluation.stats import _rowwise, iqm

ENV_ID = "DPExperts-Shift-v0"


def test_trim_mean_equals_scipy_bit_for_bit():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for n in range(1, 30):
        x = rng.standard_normal(n) * 1e3
        assert iqm(x) == float(stats.trim_mean(x, 0.25))
        m = rng.standard_normal((20, n))
        assert np.array_equal(_rowwise("iqm", m), stats.trim_mean(m, 0.25, axis=1))


def test_small_grids_play_in_this_process_large_ones_get_workers():
    cells = default_grid().cells()
    # 60 cells x 10 seeds x 10^4 rounds = 6e6 run-rounds: no worker pays for itself.
    assert backends.estimate_work(cells) == 60 * 10 * 10_000
    assert backends.worth_processes(cells) == 1
    big = default_grid(horizon=1_000_000, seeds=10).cells()
    assert backends.worth_processes(big) == 30  # 6e8 / 2e7 (capped at the CPUs by execute)
    # An env without an explicit horizon counts its registered one, or 10^4.
    grid = Grid(agents=[AgentEntry("hedge")], envs=[EnvEntry(ENV_ID)], n_seeds=3)
    assert backends.estimate_work(grid.cells()) > 0


def test_local_backend_starts_no_worker_for_a_small_grid(monkeypatch):
    def no_pool(*args, **kwargs):
        raise AssertionError("a worker pool was started for a grid of a few seconds")

    monkeypatch.setattr(backends, "_local", no_pool)
    grid = Grid(
        agents=[AgentEntry("hedge"), AgentEntry("uniform")],
        envs=[EnvEntry(ENV_ID, {"horizon": 50, "n_experts": 4})],
        n_seeds=2,
    )
    results = list(backends.execute(grid.cells(), backend="local"))
    assert len(results) == 2


def test_summary_and_cli_import_no_scipy_stats():
    code = (
        "import sys\n"
        "from dp_experts_env.cli import build_parser\n"
        "build_parser()\n"
        "import dp_experts_env.evaluation.sweep, dp_experts_env.evaluation.report\n"
        # `dp-experts list` (declaration_of) and dp_experts_env.testing: ~0.7 s each before
        "import dp_experts_env.testing\n"
        "from dp_experts_env.evaluation.audit import declaration_of\n"
        "assert 'scipy.stats' not in sys.modules, 'scipy.stats imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_calibrations_are_cached_on_disk_and_equal(tmp_path, monkeypatch):
    from agents import _public_cache
    from agents.private_dartboard import dartboard_parameters

    monkeypatch.setenv("DP_EXPERTS_CACHE_DIR", str(tmp_path))
    args = (10, 1000, 0.75, 0.0)
    dartboard_parameters.cache_clear()
    first = dartboard_parameters(*args, tuning="calibrated")
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1
    dartboard_parameters.cache_clear()  # a new process: the memo is empty, the file is read
    calls = []
    monkeypatch.setattr(_public_cache, "_store", lambda *a: calls.append(a))
    again = dartboard_parameters(*args, tuning="calibrated")
    assert again == first and calls == []  # read, not computed and stored again
    # A damaged file is named, ignored and computed again; other code (another stamp) is another
    # key.
    files[0].write_text("{not json")
    dartboard_parameters.cache_clear()
    _public_cache._WARNED.clear()
    with pytest.warns(RuntimeWarning, match=files[0].name):
        assert dartboard_parameters(*args, tuning="calibrated") == first and len(calls) == 1
    fn = dartboard_parameters.__wrapped__
    before = _public_cache._key(fn, args, {"tuning": "calibrated"})
    monkeypatch.setattr(_public_cache, "code_stamp", lambda: "edited")
    assert _public_cache._key(fn, args, {"tuning": "calibrated"}) != before
    monkeypatch.setenv("DP_EXPERTS_CACHE_DIR", "off")
    assert _public_cache.cache_dir() is None
    dartboard_parameters.cache_clear()


@pytest.mark.slow
def test_one_shared_pool_serves_every_grid_of_a_block():
    grid = Grid(
        agents=[AgentEntry("hedge"), AgentEntry("uniform"), AgentEntry("fixed-share")],
        envs=[EnvEntry(ENV_ID, {"horizon": 40, "n_experts": 3})],
        n_seeds=2,
    )
    cells = grid.cells()
    serial = {c.cell_id: rows for c, rows in backends.execute(cells, backend="serial")}
    pools = []
    with backends.shared_pool():
        for _ in range(2):
            rows = {c.cell_id: r for c, r in backends.execute(cells, backend="local", n_jobs=2)}
            assert rows == serial
            pools.append(backends._SHARED.pool)
    assert pools[0] is not None and pools[0] is pools[1]  # started once
    assert backends._SHARED is None  # and shut down with the block


def test_parsed_imports_cached_on_disk_give_the_same_fingerprint(tmp_path, monkeypatch):
    from dp_experts_env.evaluation import fingerprints

    monkeypatch.setenv("DP_EXPERTS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fingerprints, "_PARSED", {})
    monkeypatch.setattr(fingerprints, "_PARSED_STATE", {"loaded": False, "dirty": False})
    fingerprints.forget_fingerprints()
    first = fingerprints.code_fingerprint("hedge", ENV_ID)
    assert (tmp_path / fingerprints._PARSED_FILE).is_file()
    parsed = dict(fingerprints._PARSED)
    # A new process: nothing in memory, every file's statements read from disk, none parsed.
    fingerprints._PARSED.clear()
    fingerprints._PARSED_STATE.update(loaded=False, dirty=False)
    fingerprints.forget_fingerprints()
    monkeypatch.setattr(fingerprints.ast, "parse", lambda *a: pytest.fail("parsed again"))
    assert fingerprints.code_fingerprint("hedge", ENV_ID) == first
    assert fingerprints._PARSED == parsed
    monkeypatch.undo()
    fingerprints.forget_fingerprints()


def test_importing_the_packages_imports_no_scipy_and_no_numba():
    # scipy.special (~0.25 s) is imported by the functions that use it; numba (~0.3 s, plus
    # ~1 s to load cached kernels) only when a grid is large enough to pay for it.
    code = (
        "import sys\n"
        "import dp_experts_env, agents\n"
        "from dp_experts_env.cli import build_parser\n"
        "build_parser()\n"
        "import dp_experts_env.evaluation.sweep, dp_experts_env.evaluation.report\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('scipy', 'numba')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_kernels_load_without_scipy_linalg_and_numba_keeps_blas():
    # numba's numpy implementations would import scipy.linalg (~0.3 s) to look for BLAS; the
    # suite's kernels never use it, and a BLAS-backed numba function compiled later still works.
    pytest.importorskip("numba")
    pytest.importorskip("scipy.linalg")
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from agents import _kernels\n"
        "from dp_experts_env import _jit\n"
        "assert _jit.jit_enabled()\n"
        "e = np.arange(24.0).reshape(1, 2, 3, 4)\n"
        "total = np.empty((1, 2, 3))\n"
        "_kernels.row_sums(e, total)\n"
        "assert np.array_equal(total, e.sum(axis=-1))\n"
        "assert 'numba.np.arraymath' in sys.modules\n"
        "assert 'scipy.linalg' not in sys.modules, 'scipy.linalg imported'\n"
        "import numba\n"
        "dot = numba.njit(lambda a, b: np.dot(a, b))\n"
        "assert dot(np.ones(3), np.arange(3.0)) == 3.0\n"
        "assert 'scipy.linalg.cython_blas' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=_jit_env())


def _jit_env() -> dict[str, str]:
    """This environment without the switches that force the numpy path."""
    import os

    off = ("DP_EXPERTS_NO_JIT", "DP_EXPERTS_NUMBA")
    return {k: v for k, v in os.environ.items() if k not in off}


def test_a_small_grid_plays_on_the_numpy_path_a_large_one_compiled(monkeypatch):
    from dp_experts_env import _jit

    seen = []

    def fake_run_cells(unit):
        seen.append(_jit._NUMPY_ONLY[0] > 0)
        return [(cell, []) for cell in unit]

    monkeypatch.setattr(backends, "run_cells", fake_run_cells)
    monkeypatch.setattr(backends, "_numba_loaded", lambda: False)  # a fresh process
    small = Grid(agents=[AgentEntry("hedge")], envs=[EnvEntry(ENV_ID, {"horizon": 50})])
    large = Grid(
        agents=[AgentEntry("hedge")],
        envs=[EnvEntry(ENV_ID, {"horizon": backends.JIT_MIN_WORK})],
        n_seeds=1,
    )
    list(backends.execute(small.cells(), backend="serial"))
    list(backends.execute(large.cells(), backend="serial"))
    assert seen == [True, False]
    with backends.shared_pool():  # a command of many grids (reproduce) loads numba once
        list(backends.execute(small.cells(), backend="serial"))
    monkeypatch.setattr(backends, "_numba_loaded", lambda: True)  # loaded already: use it
    list(backends.execute(small.cells(), backend="serial"))
    assert seen == [True, False, False, False]
    assert _jit._NUMPY_ONLY[0] == 0  # the block ended with the unit
    with _jit.numpy_path():
        assert not _jit.jit_enabled()


def test_small_grid_rows_equal_on_the_numpy_and_compiled_paths():
    pytest.importorskip("numba")
    from dp_experts_env import _jit
    from dp_experts_env.evaluation.episode import run_cells

    grid = Grid(
        agents=[AgentEntry("hedge"), AgentEntry("fixed-share")],
        envs=[EnvEntry(ENV_ID, {"horizon": 300, "n_experts": 5})],
        n_seeds=3,
    )
    compiled = run_cells(grid.cells())
    with _jit.numpy_path():
        reference = run_cells(grid.cells())
    assert [rows for _, rows in compiled] == [rows for _, rows in reference]


def test_round_matrix_equals_pivot_table():
    import pandas as pd

    from dp_experts_env.evaluation.figure_bands import round_matrix as _round_matrix

    rng = np.random.default_rng(1)
    rows = pd.DataFrame(
        {"round": np.repeat([3, 1, 2], 4), "seed": np.tile([2, 0, 3, 1], 3)}
    ).assign(m=rng.standard_normal(12))
    cases = {
        "complete": rows,
        "shuffled": rows.sample(frac=1.0, random_state=0),
        "missing value": rows.assign(m=rows["m"].where(rows.index != 5)),
        "repeated pair": pd.concat([rows, rows.iloc[:3].assign(m=7.0)]),
        "missing pair": rows.iloc[1:],
    }
    for name, group in cases.items():
        table = group.pivot_table(index="round", columns="seed", values="m")
        rounds, matrix = _round_matrix(group, "m")
        assert np.array_equal(rounds, table.index.to_numpy()), name
        assert np.array_equal(matrix, table.to_numpy(), equal_nan=True), name


def test_cached_seeds_and_ids_equal_the_uncached_derivation():
    """derive_seed's memo and Cell.cell_id's cache give what a fresh computation gives."""
    import hashlib
    import zlib

    from dp_experts_env.evaluation.grid import Cell, _canonical, derive_seed

    def uncached(base: int, *key: object) -> int:
        words = [base] + [
            int(k) if isinstance(k, int) else zlib.crc32(str(k).encode()) for k in key
        ]
        state = np.random.SeedSequence(words).generate_state(1, np.uint64)[0]
        return int(state >> np.uint64(1))

    keys = [(0, "env", "A", 3), (1, "env", "A", 3), (0, "agent", "A", "0.5", 3), (0, "env", 7)]
    for _ in range(2):  # the second pass is served from the memo
        seeds = [derive_seed(*k) for k in keys]
        assert seeds == [uncached(*k) for k in keys]
    assert len(set(seeds)) == len(seeds)  # the memo keys on the base seed and every part

    cell = default_grid(horizon=10, seeds=3).cells()[0]
    first = cell.cell_id
    assert first == cell.cell_id == Cell.from_dict(cell.to_dict()).cell_id
    assert first.endswith(hashlib.sha1(_canonical(cell.to_dict()).encode()).hexdigest()[:16])
    other = cell.with_seeds([0, 1])  # a new cell: its own id, not the cached one
    assert other.cell_id != first and other.cell_id == Cell.from_dict(other.to_dict()).cell_id
    assert cell.agent.key == AgentEntry(cell.agent.name, dict(cell.agent.params)).key
    assert cell.env.key == EnvEntry(cell.env.id, dict(cell.env.params)).key
