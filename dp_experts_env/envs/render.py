"""Minimal rendering of the single env: a text line (``"ansi"``) or a bar chart (``"rgb_array"``).

It exists so tools that ask for a render mode (Stable-Baselines3's ``make_vec_env``) work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RENDER_MODES", "render_ansi", "render_rgb"]

RENDER_MODES = ("ansi", "rgb_array")

_HEIGHT = 64
_BAR = 8  # pixels per action
_PLAYED = np.array([200, 30, 30], dtype=np.uint8)
_OTHER = np.array([90, 90, 90], dtype=np.uint8)


def render_ansi(horizon: int, last: dict[str, Any] | None) -> str:
    """One line: round, action, loss, cumulative loss and regrets of the last round."""
    if last is None:
        return f"round 0/{horizon} (no round played yet)\n"
    info = last["info"]
    return (
        f"round {info['round']}/{horizon}  action {last['action']}  loss {info['loss']:.3f}  "
        f"cumulative {info['cumulative_loss']:.3f}  static regret {info['static_regret']:.3f}  "
        f"dynamic regret {info['dynamic_regret']:.3f}\n"
    )


def render_rgb(n_actions: int, last: dict[str, Any] | None) -> np.ndarray:
    """Bars of the last revealed losses (the played one in red; bandit feedback: that one only)."""
    frame = np.full((_HEIGHT, _BAR * n_actions, 3), 255, dtype=np.uint8)
    if last is None:
        return frame
    feedback = last["feedback"]  # (n_actions,), NaN where nothing was revealed
    for a in np.flatnonzero(np.isfinite(feedback)):
        height = int(round(float(feedback[a]) * (_HEIGHT - 1)))
        colour = _PLAYED if a == last["action"] else _OTHER
        frame[_HEIGHT - height :, a * _BAR + 1 : (a + 1) * _BAR - 1] = colour
    return frame
