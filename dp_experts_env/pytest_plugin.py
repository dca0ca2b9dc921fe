"""A pytest plug-in for packages that ship their own learners: the contract as fixtures.

``pytest_plugins = ["dp_experts_env.pytest_plugin"]`` in your ``conftest.py`` gives the fixture
``check_agent`` (:func:`dp_experts_env.testing.check_agent`) and the option ``--dp-audit-runs N``
(the audit's runs per side, default 20,000). See docs/own_learner.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    """``--dp-audit-runs``: test runs per side of the privacy audit in ``check_agent``."""
    parser.addoption(
        "--dp-audit-runs",
        type=int,
        default=20_000,
        help="dp-experts-env check_agent: audit test runs per side (default 20000)",
    )


@pytest.fixture
def check_agent(request: Any) -> Callable[..., Any]:
    """:func:`dp_experts_env.testing.check_agent` with the session's audit size."""
    from dp_experts_env.testing import check_agent as run

    return functools.partial(run, audit_runs=request.config.getoption("--dp-audit-runs"))
