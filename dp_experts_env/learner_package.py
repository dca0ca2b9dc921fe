"""Find the suite's learner package ``agents`` and refuse a foreign module of that name.

A user's own ``agents`` folder earlier on ``sys.path`` would shadow the learners and fail much
later with an unhelpful ``AttributeError``; the layers above the learners call
:func:`check_learner_package` before they import ``agents``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["ForeignAgentsPackage", "check_learner_package", "expected_learner_package"]


class ForeignAgentsPackage(ImportError):
    """The module ``agents`` that Python finds is not this suite's learner package."""


def expected_learner_package() -> Path:
    """The folder of the suite's ``agents`` package: the sibling of ``dp_experts_env``."""
    return Path(__file__).resolve().parent.parent / "agents"


def check_learner_package() -> None:
    """Raise :class:`ForeignAgentsPackage` when ``import agents`` would not load the suite's.

    Side-effect free: an imported ``agents`` is checked by its file, else the import system is
    asked where it would load it from.

    Raises:
        ForeignAgentsPackage: naming the foreign module's file and the expected folder.
    """
    module = sys.modules.get("agents")
    if module is not None:
        origin = getattr(module, "__file__", None)
    else:
        spec = importlib.util.find_spec("agents")
        origin = None if spec is None else spec.origin
    expected = expected_learner_package()
    if origin is not None and Path(origin).resolve().parent == expected:
        return
    found = origin or "no file (a namespace package or a module built in memory)"
    raise ForeignAgentsPackage(
        f"the module 'agents' that Python imports is {found}, not dp-experts-env's learner "
        f"package ({expected}): a folder or module named 'agents' earlier on sys.path (often "
        "the current directory) shadows it. Rename your own 'agents' folder or module, or run "
        "from another directory."
    )
