"""The behaviour locks hold under other CPU kernels: numpy at most AVX2 and OpenBLAS's Haswell.

CI runs README's test command on one machine; this test emulates others. It runs the env and
learner lock files in a subprocess (``pytest.main`` after a probe, ``_PROBE_THEN_PYTEST``) with
both of

* numpy's CPU dispatch restricted to AVX2 (``NPY_DISABLE_CPU_FEATURES`` naming every dispatch
  target above AVX2: ``X86_V4``, ``AVX512_*``), which changes numpy's log, exp and cos kernels
  in the last bit;
* OpenBLAS's kernel forced to ``Haswell`` (``OPENBLAS_CORETYPE``), which sums dot products in
  another order.

The process that runs the locks first reports what it runs on (numpy's runtime dispatch list,
OpenBLAS's reported architecture), and the test checks that each setting took effect there; a
setting this CPU cannot express (no AVX-512 to disable, no AVX2 for the Haswell kernel) is left
out, the test skipped (with the reason) when neither can be. The locks must pass: floats within
their stated tolerance, integers exactly. The defaults are the suite's own process, where the
lock files run anyway. Until session 11 each change ran alone too (three subprocesses); the
test's docstring says why one suffices.
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
#: The lock run's child: the probe's line first (what that very process runs on), then pytest.
_PROBE_THEN_PYTEST = _PROBE + "import sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
#: pytest plug-ins the lock files never use, not loaded in the lock run (hypothesis's imports
#: hypothesis, ~0.3 s a process); blocking one that is not installed is a no-op.
NO_UNUSED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:benchmark")
#: The variables that choose numpy's and OpenBLAS's kernels (the children's are set here).
_KERNEL_VARIABLES = ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")


def _probe(env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def _above_avx2(targets: list[str]) -> list[str]:
    return [t for t in targets if t.startswith(_ABOVE_AVX2)]


def _environment() -> dict[str, str]:
    """The suite's environment with numpy at most AVX2 and OpenBLAS's Haswell kernel.

    Each part applies where this CPU can express it (a dispatch target above AVX2 to disable;
    AVX2 and FMA3 for the Haswell kernel); skipped when neither can.
    """
    env = {k: v for k, v in os.environ.items() if k not in _KERNEL_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    default = _probe(env)
    above = _above_avx2(default["found"])
    if above:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(above)
    features = default["features"]
    if features.get("AVX2") and features.get("FMA3"):
        env["OPENBLAS_CORETYPE"] = "Haswell"
    if not above and "OPENBLAS_CORETYPE" not in env:
        pytest.skip(
            f"this CPU has no numpy dispatch target above AVX2 (found {default['found']}) and "
            "cannot run OpenBLAS's Haswell kernel (no AVX2/FMA3): its default run is the only one"
        )
    return env


def _check_took_effect(env: dict[str, str], probe: dict) -> None:
    """Each setting of ``env`` took effect in the process ``probe`` describes."""
    if "NPY_DISABLE_CPU_FEATURES" in env:
        assert _above_avx2(probe["found"]) == [], (
            f"NPY_DISABLE_CPU_FEATURES={env['NPY_DISABLE_CPU_FEATURES']!r} did not restrict "
            f"numpy to AVX2: dispatch targets still found {probe['found']}"
        )
    if "OPENBLAS_CORETYPE" in env and probe["openblas"] is not None:
        assert probe["openblas"] and all(a == "Haswell" for a in probe["openblas"]), (
            f"OPENBLAS_CORETYPE=Haswell did not take effect: OpenBLAS reports {probe['openblas']}"
        )


@pytest.mark.slow
def test_locks_hold_under_other_cpu_kernels() -> None:
    """Both changes in one run: every numpy ufunc on its AVX2 kernel, every BLAS call on Haswell.

    It runs the kernels the single-change runs did (a computation reaches numpy's kernels or
    OpenBLAS's, and here runs the one the single-change run varying that library ran), so a
    value one change moves past the locks' tolerance (floats 1e-9, integers exactly) is moved
    here too unless the other change cancels it exactly, in another computation. Lost: which
    change moved a value (set one of the two variables by hand to tell). The settings are
    checked in the process that runs the locks (its first line of output), before its result.
    """
    env = _environment()
    setting = {k: env[k] for k in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE") if k in env}
    run = subprocess.run(
        # The numpy reference path (DP_EXPERTS_NO_JIT) is checked by the locks themselves; the
        # CPU kernels are what this test varies, on the default path.
        [
            *(sys.executable, "-c", _PROBE_THEN_PYTEST, "-q", "-p", "no:cacheprovider"),
            *NO_UNUSED_PLUGINS,
            *("-k", "not numpy", *LOCK_FILES),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    first, _, output = run.stdout.partition("\n")
    try:
        probe = json.loads(first)
    except json.JSONDecodeError:
        raise AssertionError(
            f"the lock run's probe printed no line:\n{run.stderr[-2000:]}"
        ) from None
    _check_took_effect(env, probe)
    assert run.returncode == 0, (
        f"the behaviour locks fail under {setting or 'the default kernels'}:\n"
        + "\n".join(output.splitlines()[-40:])
        + run.stderr[-2000:]
    )


def test_a_setting_that_did_not_take_effect_is_caught() -> None:
    """The check on the lock run's probe line: a numpy still dispatching above AVX2, or an
    OpenBLAS on another kernel, fails naming the setting; the restricted process passes (and
    a process without threadpoolctl, which cannot report OpenBLAS's kernel, is not failed)."""
    env = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL", "OPENBLAS_CORETYPE": "Haswell"}
    took = {"found": ["SSE42", "AVX2", "FMA3"], "openblas": ["Haswell"]}
    _check_took_effect(env, took)
    _check_took_effect(env, {**took, "openblas": None})
    _check_took_effect({"OPENBLAS_CORETYPE": "Haswell"}, {**took, "found": ["AVX512_ICL"]})
    with pytest.raises(AssertionError, match="did not restrict numpy to AVX2.*AVX512_ICL"):
        _check_took_effect(env, {**took, "found": ["AVX2", "AVX512_ICL"]})
    with pytest.raises(AssertionError, match="Haswell did not take effect.*SkylakeX"):
        _check_took_effect(env, {**took, "openblas": ["Haswell", "SkylakeX"]})
    with pytest.raises(AssertionError, match="Haswell did not take effect"):
        _check_took_effect(env, {**took, "openblas": []})
