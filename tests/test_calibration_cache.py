"""Calibrations computed once: P-COMW's calibrated ``(kappa, p)`` kept in the signed disk cache.

``agents.p_comw.pcomw_calibration`` memoises
``dp_experts_env.privacy.accountant_oco.pcomw_calibrated`` (about 0.25 s of Renyi searches per
call) in process and on disk (``agents._public_cache``): a fresh interpreter that builds p-comw
(`dp-experts list`, the CLI, plug-in and doc subprocesses) reads it instead of bisecting again.
Each test names what it would catch: a cache that answers other inputs' result, that recomputes,
that hands out a mutable object, or that serves a loaded calibration the accountant does not
certify.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest
from _public_cache import fresh_public_cache

from agents import _public_cache as cache
from agents import p_comw
from agents.p_comw import PCOMWCalibration, pcomw_calibration, pcomw_parameters
from dp_experts_env.privacy.accountant_oco import pcomw_calibrated

# (T, d, epsilon, delta); the first is p-comw's registered default (T = 1000, d = 4).
BASE = (1000, 4, 1.0, 1e-5)
ONE_CHANGED = [(8, 4, 1.0, 1e-5), (1000, 3, 1.0, 1e-5), (1000, 4, 0.5, 1e-5), (1000, 4, 1.0, 1e-6)]


def _uncached(t, d, eps, delta):
    return pcomw_calibrated.__wrapped__(t, d, eps, delta)  # the bisection itself, no memo


@pytest.fixture
def disk(monkeypatch, tmp_path):
    """A fresh cache folder and signing key under tmp_path; memos and warnings forgotten."""
    yield from fresh_public_cache(monkeypatch, tmp_path, [pcomw_calibration])


def _entries(folder):
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def test_equal_to_the_uncached_bisection_and_one_input_changes_the_result(disk):
    """Mutant caught: a key missing an input (the changed case would get BASE's answer)."""
    results = {args: pcomw_calibration(*args) for args in [BASE, *ONE_CHANGED]}
    first = results[BASE]
    assert (first.kappa, first.p) == _uncached(*BASE)  # the same floats, bit for bit
    for args, got in results.items():
        assert (got.kappa, got.p) == pcomw_calibrated(*args), args
    for args in ONE_CHANGED:
        assert results[args] != results[BASE], f"{args} gave the result of {BASE}"
    assert len(_entries(disk)) == 1 + len(ONE_CHANGED)  # one signed entry per key
    # Read back from disk (a new process: the memo emptied), every key gives its own floats.
    pcomw_calibration.cache_clear()
    for args, got in results.items():
        assert pcomw_calibration(*args) == got, args


def test_a_second_call_does_not_recompute_in_process_or_from_disk(disk, monkeypatch):
    calls = []

    def spy(*args):
        calls.append(args)
        return pcomw_calibrated(*args)

    monkeypatch.setattr(p_comw, "pcomw_calibrated", spy)
    first = pcomw_calibration(*BASE)
    assert pcomw_calibration(*BASE) is first and len(calls) == 1  # the memo
    pcomw_calibration.cache_clear()  # a new process
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pcomw_calibration(*BASE) == first
    assert len(calls) == 1, "read from disk, not bisected again"
    # Another type of an argument is another key (1 and 1.0 never share an entry).
    pcomw_calibration(1000, 4, 1, 1e-5)
    assert len(calls) == 2


def test_the_returned_calibration_cannot_be_mutated(disk):
    first = pcomw_calibration(*BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.kappa = 1.0  # type: ignore[misc]
    assert pcomw_calibration(*BASE).kappa == pcomw_calibrated(*BASE)[0]


def test_the_parameters_built_from_a_read_calibration_are_bit_for_bit(disk, monkeypatch):
    """The learner's parameters (its claim) through disk equal those computed with no cache."""
    through_disk = pcomw_parameters("dp", 4, 1000, diameter=2.0, grad_bound=1.5)
    pcomw_calibration.cache_clear()
    again = pcomw_parameters("dp", 4, 1000, diameter=2.0, grad_bound=1.5)  # read from disk
    monkeypatch.setenv("DP_EXPERTS_CACHE_DIR", "off")
    pcomw_calibration.cache_clear()
    fresh = pcomw_parameters("dp", 4, 1000, diameter=2.0, grad_bound=1.5)
    assert through_disk == again == fresh
    assert fresh.epsilon <= 1.0 and fresh.accountant == "renyi"


def test_a_signed_calibration_the_accountant_refuses_is_recomputed(disk):
    """Mutant: an entry signed with the user's key whose kappa spends far more than epsilon."""
    first = pcomw_calibration(*BASE)
    (path,) = _entries(disk)
    record = json.loads(path.read_bytes().partition(b"\n")[2])
    record["fields"]["kappa"] = first.kappa * 100
    cache.write_entry(path.name, "calibration", json.dumps(record).encode())
    pcomw_calibration.cache_clear()
    with pytest.warns(RuntimeWarning, match=f"{path.name} refused: the accountant gives"):
        assert pcomw_calibration(*BASE) == first
    # Harmless: the same values signed again are served, with no warning.
    record["fields"]["kappa"] = first.kappa
    cache.write_entry(path.name, "calibration", json.dumps(record).encode())
    pcomw_calibration.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pcomw_calibration(*BASE) == first
    # Out of range (p = 1) is refused before the accountant is asked.
    record["fields"]["p"] = 1.0
    cache.write_entry(path.name, "calibration", json.dumps(record).encode())
    pcomw_calibration.cache_clear()
    cache._WARNED.clear()
    with pytest.warns(RuntimeWarning, match="outside kappa > 0, 0 < p < 1"):
        assert pcomw_calibration(*BASE) == first
    assert isinstance(first, PCOMWCalibration)


def test_the_bisection_keeps_the_p_it_found_at_its_last_kappa(monkeypatch):
    """The bisection returns the p of its last accepted kappa without searching it again.

    Known answer: the p returned is the one-kappa search's (``pcomw_best_p``) at the returned
    kappa, as when it searched again; the calls counted are 1 + 1 + 48 (the ends, the steps),
    two at an epsilon the top kappa already meets. Mutant caught: a p kept from another step.
    """
    from dp_experts_env.privacy import accountant_oco
    from dp_experts_env.privacy.accountant_oco import pcomw_best_p

    calls = []
    real = accountant_oco._best_p

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(accountant_oco, "_best_p", spy)
    for args, n_calls in [
        ((1000, 4, 1.0, 1e-5), 50),
        ((8, 1, 0.3, 1e-6), 50),
        ((50, 2, 1e6, 1e-5), 2),
    ]:
        calls.clear()
        kappa, p = _uncached(*args)
        assert len(calls) == n_calls, args
        t, d, _, delta = args
        monkeypatch.setattr(accountant_oco, "_best_p", real)
        assert p == pcomw_best_p(kappa, t, d, delta), args
        monkeypatch.setattr(accountant_oco, "_best_p", spy)
