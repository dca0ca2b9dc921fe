"""Issue 39, validated caches: a planted or edited cache entry is ignored and named.

The disk cache of ``agents._public_cache`` (calibrations, the meta-expert tables, the parsed
import lists of the run keys) may sit in a shared folder. Each test plants an entry (a damaged
one, one signed without the user's key, one signed with it but spending more than epsilon)
and checks that it is named in a warning, never served, and that what is computed instead
equals a fresh computation; the harmless controls (a valid entry, a touched file) are served.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest
from _public_cache import fresh_public_cache

from agents import _public_cache as cache
from agents import meta_expert_tuning
from agents.private_dartboard import dartboard_parameters
from agents.private_lazy_hedge import PrivateLazyHedge, lazy_hedge_parameters
from dp_experts_env.evaluation import fingerprints as fp_mod
from dp_experts_env.evaluation import store as store_mod

ARGS = (10, 1000, 1.0, 1e-6)


@pytest.fixture
def disk(monkeypatch, tmp_path):
    """A fresh cache folder and signing key under tmp_path; memos and warnings forgotten."""
    memos = [lazy_hedge_parameters, dartboard_parameters, meta_expert_tuning.public_tables]
    yield from fresh_public_cache(monkeypatch, tmp_path, memos)


def _entry(folder, kind="calibration"):
    found = [p for p in folder.iterdir() if not p.name.startswith(".")]
    assert len(found) == 1, found
    return found[0]


def _resign(path, payload: bytes, kind="calibration"):
    """Rewrite an entry with ``payload``, signed with the user's own key (a worst case)."""
    code = cache.code_stamp()
    mac = cache._mac(cache._secret(), kind, path.name, code, payload)
    head = json.dumps({"layout": 1, "kind": kind, "code": code, "mac": mac}).encode()
    path.write_bytes(head + b"\n" + payload)


def test_folder_0700_entries_0600_and_a_valid_entry_is_served(disk, monkeypatch):
    first = lazy_hedge_parameters(*ARGS, tuning="calibrated")
    assert os.stat(disk).st_mode & 0o777 == 0o700
    path = _entry(disk)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(cache.key_path()).st_mode & 0o777 == 0o600
    assert not cache.key_path().is_relative_to(disk)  # the key is kept outside the folder
    lazy_hedge_parameters.cache_clear()  # a new process
    monkeypatch.setattr(cache, "write_entry", lambda *a: pytest.fail("computed again"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lazy_hedge_parameters(*ARGS, tuning="calibrated") == first  # control: served


def test_a_planted_calibration_is_ignored_named_and_the_claim_recomputed(disk):
    """The issue's case: p 0.018 -> 0.999 and budget 38 -> 500 kept "(1, 1e-06)-DP"."""
    fresh = PrivateLazyHedge(n_experts=10, horizon=1000, epsilon=1.0, seed=0)
    path = _entry(disk)
    record = json.loads(path.read_bytes().partition(b"\n")[2])
    record["fields"].update(p=0.999, budget=500.0)  # epsilon_spent left as it was
    planted = json.dumps(record).encode()
    path.write_bytes(path.read_bytes().partition(b"\n")[0] + b"\n" + planted)  # old MAC
    lazy_hedge_parameters.cache_clear()
    with pytest.warns(RuntimeWarning, match=f"{path.name} fails its signature"):
        agent = PrivateLazyHedge(n_experts=10, horizon=1000, epsilon=1.0, seed=0)
    assert agent.parameters == fresh.parameters and agent.privacy == fresh.privacy
    # Signed with the user's own key (the key leaked, or the user planted it): the spend is
    # recomputed from the loaded p and budget, which spend far more than epsilon = 1.
    _resign(path, planted)
    lazy_hedge_parameters.cache_clear()
    cache._WARNED.clear()
    with pytest.warns(RuntimeWarning, match=f"{path.name} refused: the accountant gives"):
        agent = PrivateLazyHedge(n_experts=10, horizon=1000, epsilon=1.0, seed=0)
    assert agent.parameters == fresh.parameters and agent.privacy == fresh.privacy
    assert json.loads(path.read_bytes().partition(b"\n")[2]) == json.loads(
        json.dumps({"type": "LazyHedgeParameters", "fields": fresh.parameters.__dict__})
    )  # rewritten with the computed values


def test_a_resigned_dartboard_calibration_is_rechecked(disk):
    first = dartboard_parameters(*ARGS)
    path = _entry(disk)
    record = json.loads(path.read_bytes().partition(b"\n")[2])
    record["fields"]["eta"] = 0.4
    record["fields"]["p"] = 0.45
    _resign(path, json.dumps(record).encode())
    dartboard_parameters.cache_clear()
    with pytest.warns(RuntimeWarning, match=f"{path.name} refused: the accountant gives"):
        assert dartboard_parameters(*ARGS) == first
    # Harmless: the same values re-signed (a rewrite that changes nothing) are served.
    record = json.loads(path.read_bytes().partition(b"\n")[2])
    _resign(path, json.dumps(record).encode())
    dartboard_parameters.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dartboard_parameters(*ARGS) == first


def test_a_planted_table_is_ignored_and_named(disk):
    log_count, table = meta_expert_tuning.public_tables(4, 60, 2)
    path = _entry(disk)
    raw = bytearray(path.read_bytes())
    raw[-40] ^= 1  # one bit of the stored table
    path.write_bytes(bytes(raw))
    meta_expert_tuning.public_tables.cache_clear()
    with pytest.warns(RuntimeWarning, match=f"{path.name} fails its signature"):
        again = meta_expert_tuning.public_tables(4, 60, 2)
    assert again[0] == log_count and np.array_equal(again[1], table)


def test_a_planted_import_list_cannot_hide_a_module_from_the_key(disk, monkeypatch):
    monkeypatch.setattr(fp_mod, "_PARSED", {})
    monkeypatch.setattr(fp_mod, "_PARSED_STATE", {"loaded": False, "dirty": False})
    store_mod.forget_fingerprints()
    first = store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0")
    path = disk / fp_mod._PARSED_FILE
    records = json.loads(path.read_bytes().partition(b"\n")[2])
    for record in records:
        record[2] = []  # every module "imports nothing": the key would cover the roots only
    path.write_bytes(path.read_bytes().partition(b"\n")[0] + b"\n" + json.dumps(records).encode())
    fp_mod._PARSED.clear()
    fp_mod._PARSED_STATE.update(loaded=False, dirty=False)
    store_mod.forget_fingerprints()
    with pytest.warns(RuntimeWarning, match=f"{path.name} fails its signature"):
        assert store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0") == first
    store_mod.forget_fingerprints()


@pytest.mark.parametrize("case", ["symlink", "group-writable", "key-readable"])
def test_an_unsafe_folder_or_key_is_not_used(disk, tmp_path, case):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if case == "symlink":
        disk.symlink_to(elsewhere)
        named = "is a symbolic link"
    elif case == "group-writable":
        disk.mkdir()
        os.chmod(disk, 0o777)
        named = "is writable by other users"
    else:
        cache._secret()  # made 0600 ...
        os.chmod(cache.key_path(), 0o644)  # ... then opened to everyone
        cache._secret.cache_clear()
        named = "readable by other users"
    with pytest.warns(RuntimeWarning, match=named):
        first = lazy_hedge_parameters(*ARGS)
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    if case != "key-readable":
        assert not any(p.suffix == ".json" for p in disk.iterdir())
    lazy_hedge_parameters.cache_clear()
    cache.cache_dir()  # still computed, equal
    assert lazy_hedge_parameters(*ARGS) == first


def test_the_code_stamp_changes_with_the_platform_computing(monkeypatch):
    """An entry computed under another numpy/scipy version or CPU architecture is not served
    (its floats may differ in their last bits); the same platform gives the same stamp."""
    import platform
    from importlib import metadata

    from agents import _public_cache

    here = _public_cache.code_stamp.__wrapped__()
    assert _public_cache.code_stamp.__wrapped__() == here
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda d: "0.0.1" if d == "scipy" else real(d))
    assert _public_cache.code_stamp.__wrapped__() != here
    monkeypatch.setattr(metadata, "version", real)
    monkeypatch.setattr(platform, "machine", lambda: "other-cpu")
    assert _public_cache.code_stamp.__wrapped__() != here
