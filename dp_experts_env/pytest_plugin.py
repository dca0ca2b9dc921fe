"""A pytest plug-in for packages that ship their own learners: the contract as fixtures.

In the ``conftest.py`` of your package::

    pytest_plugins = ["dp_experts_env.pytest_plugin"]

then a test takes the fixture ``check_agent`` (the function
:func:`dp_experts_env.testing.check_agent`)::

    def test_my_learner(check_agent):
        check_agent("my-ftpl")

``dp_experts_env.testing.contract_tests`` gives one test case per check instead. The option
``--dp-audit-runs N`` sets the audit's test runs per side (default 20,000; the CLI's audit uses
100,000 and detects smaller violations).
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
