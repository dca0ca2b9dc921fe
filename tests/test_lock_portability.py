"""The behaviour locks hold under other CPU kernels: two numpy dispatch levels x two BLAS kernels.

CI runs README's test command on one machine; this test emulates others. It runs the env and
learner lock files in subprocesses (``sys.executable -m pytest``) under each combination of

* numpy's CPU dispatch: the default (every SIMD target this CPU has) and restricted to AVX2
  (``NPY_DISABLE_CPU_FEATURES`` naming every dispatch target above AVX2: ``X86_V4``,
  ``AVX512_*``), which changes numpy's log, exp and cos kernels in the last bit;
* OpenBLAS's kernel: chosen by OpenBLAS for the CPU (``OPENBLAS_CORETYPE`` unset) and forced
  to ``Haswell``, which sums dot products in another order.

Before each run, a child process checks that the setting took effect (numpy's runtime dispatch
list, OpenBLAS's reported architecture); a setting this CPU cannot express (no AVX-512 to
disable, no AVX2 for the Haswell kernel) is skipped with the reason. The locks must pass in every
combination: floats within their stated tolerance, integers exactly. The combination of both
defaults is the suite's own process, where the lock files run anyway: it is not run again here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCK_FILES = ["tests/test_env_lock.py", "tests/test_learner_lock.py"]
#: Dispatch targets above AVX2, by the names numpy 1.x and 2.x use.
_ABOVE_AVX2 = ("X86_V4", "AVX512", "AVX10")

_PROBE = """
import json
try:
    from numpy._core import _multiarray_umath as m
except ImportError:  # numpy 1.x
    from numpy.core import _multiarray_umath as m
found = [t for t in m.__cpu_dispatch__ if m.__cpu_features__.get(t)]
try:
    import threadpoolctl
    blas = [i.get("architecture") for i in threadpoolctl.threadpool_info()
            if i.get("internal_api") == "openblas"]
except ImportError:
    blas = None
print(json.dumps({"found": found, "features": m.__cpu_features__, "openblas": blas}))
"""


def _probe(env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def _above_avx2(targets: list[str]) -> list[str]:
    return [t for t in targets if t.startswith(_ABOVE_AVX2)]


def _environment(numpy_level: str, coretype: str | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    default = _probe(env)
    if numpy_level == "avx2":
        above = _above_avx2(default["found"])
        if not above:
            pytest.skip(
                f"this CPU has no numpy dispatch target above AVX2 (found {default['found']}): "
                "the default run already is the AVX2 run"
            )
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(above)
    if coretype is not None:
        features = default["features"]
        if not (features.get("AVX2") and features.get("FMA3")):
            pytest.skip(f"this CPU cannot run OpenBLAS's {coretype} kernel (no AVX2/FMA3)")
        env["OPENBLAS_CORETYPE"] = coretype
    probe = _probe(env)
    if numpy_level == "avx2":
        assert _above_avx2(probe["found"]) == [], (
            f"NPY_DISABLE_CPU_FEATURES={env['NPY_DISABLE_CPU_FEATURES']!r} did not restrict "
            f"numpy to AVX2: dispatch targets still found {probe['found']}"
        )
    if coretype is not None and probe["openblas"] is not None:
        assert probe["openblas"] and all(a == coretype for a in probe["openblas"]), (
            f"OPENBLAS_CORETYPE={coretype} did not take effect: OpenBLAS reports "
            f"{probe['openblas']}"
        )
    return env


#: The settings other than the machine's own (numpy's default dispatch with OpenBLAS's own
#: kernel), which the lock files themselves run in the suite's process: replayed once per run.
SETTINGS = [("default", "Haswell"), ("avx2", None), ("avx2", "Haswell")]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("numpy_level", "coretype"),
    SETTINGS,
    ids=[f"numpy-{n}-openblas-{c or 'auto'}" for n, c in SETTINGS],
)
def test_locks_hold_under_other_cpu_kernels(numpy_level: str, coretype: str | None) -> None:
    env = _environment(numpy_level, coretype)
    setting = {k: env[k] for k in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE") if k in env}
    run = subprocess.run(
        # The numpy reference path (DP_EXPERTS_NO_JIT) is checked by the locks themselves; the
        # CPU kernels are what this test varies, on the default path.
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("-k", "not numpy", *LOCK_FILES),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, (
        f"the behaviour locks fail under {setting or 'the default kernels'}:\n"
        + "\n".join(run.stdout.splitlines()[-40:])
        + run.stderr[-2000:]
    )
