"""A card's pages: ``card.md`` and a self-contained ``card.html`` (inline SVG, ``data-value``)."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "SECTIONS",
    "axis_of",
    "bar_height",
    "capability_svg",
    "card_html",
    "card_markdown",
    "curve_y",
    "curves_svg",
]

_W, _H, _PAD, _PLOT_RIGHT = 680, 220, 40, 540


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if math.isfinite(value) else str(value)
    return str(value)


def axis_of(card: Mapping[str, Any]) -> tuple[float, float]:
    """The score axis: [-0.5, 1.5] widened by halves to every value drawn (none clipped)."""
    values = [0.0, 1.0]
    for entry in card["capabilities"].values():
        for s in entry["scores"].values():
            values += [s["mean"], s["mean_low"], s["mean_high"]]
    low = min(-0.5, math.floor(2 * min(values)) / 2)
    high = max(1.5, math.ceil(2 * max(values)) / 2)
    return low, high


def curve_y(value: float, axis: tuple[float, float]) -> float:
    """The SVG y coordinate of a score on an axis ``(low, high)`` (top = high)."""
    low, high = axis
    return _PAD + (_H - 2 * _PAD) * (high - value) / (high - low)


def bar_height(value: float, axis: tuple[float, float]) -> float:
    """Signed height of a bar from the zero line (positive up)."""
    return curve_y(0.0, axis) - curve_y(value, axis)


def _svg_open(kind: str, label: str, axis: tuple[float, float], height: int) -> list[str]:
    low, high = axis
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" role="img" '
        f'aria-label="{label}" class="{kind}" data-axis-low="{low!r}" data-axis-high="{high!r}">'
    ]
    n = int(round((high - low) / 0.5))
    step = 0.5 if n <= 8 else math.ceil(n / 8) * 0.5
    tick = low
    while tick <= high + 1e-9:
        y = curve_y(tick, axis)
        width = 1.5 if tick in (0.0, 1.0) else 0.5
        parts.append(
            f'<line x1="{_PAD}" x2="{_PLOT_RIGHT}" y1="{y:.2f}" y2="{y:.2f}" stroke="#ccc" '
            f'stroke-width="{width}"/>'
        )
        parts.append(f'<text x="4" y="{y + 4:.2f}" font-size="10">{tick:g}</text>')
        tick += step
    return parts


def capability_svg(card: Mapping[str, Any]) -> str:
    """Bars: each scored capability's mean score at the headline epsilon (whiskers: its CI)."""
    key = card["headline_epsilon"]
    axis = axis_of(card)
    caps = list(card["capabilities"].items())
    width = (_PLOT_RIGHT - _PAD) / max(len(caps), 1)
    parts = _svg_open("capabilities", "capability scores", axis, _H + 40)
    zero = curve_y(0.0, axis)
    for i, (capability, entry) in enumerate(caps):
        x = _PAD + i * width + width * 0.15
        label = html.escape(capability)
        parts.append(
            f'<text x="{x:.2f}" y="{_H + 5}" font-size="10" '
            f'transform="rotate(20 {x:.2f} {_H + 5})">{label}</text>'
        )
        score = entry["scores"].get(key)
        if score is None:
            parts.append(
                f'<text x="{x:.2f}" y="{zero - 4:.2f}" font-size="9">'
                f"{html.escape(entry['status'])}</text>"
            )
            continue
        value = score["mean"]
        top = min(zero, curve_y(value, axis))
        parts.append(
            f'<rect class="bar" data-capability="{label}" data-eps="{key}" '
            f'data-value="{value!r}" x="{x:.2f}" y="{top:.4f}" width="{width * 0.7:.2f}" '
            f'height="{abs(bar_height(value, axis)):.4f}" fill="#4477aa"/>'
        )
        mid = x + width * 0.35
        parts.append(
            f'<line x1="{mid:.2f}" x2="{mid:.2f}" y1="{curve_y(score["mean_low"], axis):.2f}" '
            f'y2="{curve_y(score["mean_high"], axis):.2f}" stroke="#222"/>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def curves_svg(card: Mapping[str, Any]) -> str:
    """Privacy-utility curves: each capability's mean score along epsilon (inf at the right)."""
    keys = list(card["epsilons"])
    axis = axis_of(card)
    step = (_PLOT_RIGHT - _PAD - 40) / max(len(keys) - 1, 1)
    xs = {k: _PAD + 20 + i * step for i, k in enumerate(keys)}
    colours = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000"]
    parts = _svg_open("curves", "privacy-utility curves", axis, _H + 20)
    for k, x in xs.items():
        parts.append(f'<text x="{x - 14:.2f}" y="{_H}" font-size="10">eps {k}</text>')
    row = 0
    for i, (capability, entry) in enumerate(card["capabilities"].items()):
        points = [(k, entry["scores"][k]["mean"]) for k in keys if k in entry["scores"]]
        if not points:
            continue
        colour, label = colours[i % len(colours)], html.escape(capability)
        path = " ".join(f"{xs[k]:.2f},{curve_y(v, axis):.4f}" for k, v in points)
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
        )
        for k, v in points:
            parts.append(
                f'<circle class="point" data-capability="{label}" data-eps="{k}" '
                f'data-value="{v!r}" cx="{xs[k]:.2f}" cy="{curve_y(v, axis):.4f}" r="3" '
                f'fill="{colour}"/>'
            )
        parts.append(
            f'<text x="{_PLOT_RIGHT + 15}" y="{_PAD + 14 * row}" font-size="11" '
            f'fill="{colour}">{label}</text>'
        )
        row += 1
    parts.append("</svg>")
    return "\n".join(parts)


def _fmt_eps(value: Any) -> str:
    """A certified epsilon: 6 significant digits (an accountant's 0.9999999999996 reads 1)."""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _status(status: str, reason: str) -> str:
    """A status with its reason, the status not repeated when the reason starts with it."""
    if not reason:
        return status
    return reason if reason.startswith(status) else f"{status}: {reason}"


def _table(headers: list[str], rows: list[list[str]], css: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _num(value: Any, **attrs: str) -> str:
    """A table cell's number with its exact value in ``data-value``."""
    if value is None:
        return "-"
    extra = "".join(f' data-{k}="{html.escape(v)}"' for k, v in attrs.items())
    return f'<span class="num"{extra} data-value="{value!r}">{_fmt(value)}</span>'


def _sections(card: Mapping[str, Any], board: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(id, title, HTML body) of each section, in page order."""
    key = card["headline_epsilon"]
    cap_rows = []
    for capability, entry in card["capabilities"].items():
        s = entry["scores"].get(key)
        cap_rows.append(
            [
                html.escape(capability),
                html.escape(entry["status"]),
                _num(s and s["mean"], capability=capability, eps=key, stat="mean"),
                "["
                + _num(s and s["mean_low"], capability=capability, eps=key, stat="mean_low")
                + ", "
                + _num(s and s["mean_high"], capability=capability, eps=key, stat="mean_high")
                + "]",
                _num(s and s["iqm"], capability=capability, eps=key, stat="iqm"),
                html.escape(entry["reason"]),
            ]
        )
    caps = capability_svg(card) + _table(
        ["capability", "status", f"mean score (eps {key})", "95% CI", "IQM", "reason"],
        cap_rows,
        "capabilities",
    )
    curve_rows = []
    for capability, entry in card["capabilities"].items():
        cells = [html.escape(capability)]
        for k in card["epsilons"]:
            s = entry["scores"].get(k)
            cells.append(_num(s and s["mean"], capability=capability, eps=k, stat="curve"))
        curve_rows.append(cells)
    curves = curves_svg(card) + _table(
        ["capability", *[f"eps {k}" for k in card["epsilons"]]], curve_rows, "curves"
    )
    task_rows = []
    for t in card["tasks"]:
        s = t["scores"].get(key) if t["scores"] else None
        sizes = ", ".join(f"{k}={v}" for k, v in t["sizes"].items())
        task_rows.append(
            [
                html.escape(t["name"]),
                html.escape(t["capability"]),
                html.escape(f"{t['env']} / {t['family']} ({sizes}); {t['seeds']} seeds"),
                html.escape(t["metric"]),
                _num(s and s["mean"], task=t["name"], eps=key),
                html.escape(_status(t["status"], t["reason"])),
            ]
        )
    tasks = _table(
        ["task", "capability", "env", "metric", f"score (eps {key})", "status"], task_rows, "tasks"
    )
    board_rows = [
        [
            str(r["rank"]),
            ("<b>" if r["this"] else "") + html.escape(r["label"]) + ("</b>" if r["this"] else ""),
            html.escape(r["feedback"]),
            "yes" if r["private"] else "no",
            r["headline_epsilon"],
            _num(r["overall"], learner=r["label"], stat="overall"),
        ]
        for r in board["rows"]
    ]
    leaderboard = _table(
        ["rank", "learner", "feedback", "private", "eps", "overall score"],
        board_rows,
        "leaderboard",
    )
    if board.get("note"):
        leaderboard += f"<p>{html.escape(board['note'])}</p>"
    privacy = card["privacy"]
    cert_rows = [
        [
            k,
            html.escape(_fmt_eps(v["certified_epsilon"])),
            html.escape(_fmt_eps(v.get("delta"))),
            "yes" if v["certified"] else "NO",
            html.escape(v.get("claim", "")),
        ]
        for k, v in privacy.get("certified", {}).items()
    ]
    audit = privacy.get("audit", {})
    priv = _table(
        ["requested eps", "certified eps (largest over tasks)", "delta", "certified", "the claim"],
        cert_rows,
        "certified",
    )
    priv += (
        f'<p class="audit">Audit at eps {_fmt_eps(audit.get("epsilon", ""))}: '
        f"<b>{html.escape(str(audit.get('verdict', '')))}</b></p>"
        f'<pre class="audit">{html.escape(str(audit.get("reason", "")))}</pre>'
    )
    claims = _table(
        ["claim", "source", "verdict", "reason"],
        [
            [
                html.escape(c["claim"]),
                html.escape(c["source"]),
                f"<b>{html.escape(c['verdict'])}</b>",
                html.escape(c["reason"]),
            ]
            for c in card["claims"]
        ],
        "claims",
    )
    p = card["protocol"]
    about = (
        f"<p>Protocol <b>{html.escape(p['version'])}</b>{' (quick)' if p['quick'] else ''}, "
        f"digest <code>{p['digest'][:16]}</code>, learner fingerprint "
        f"<code>{html.escape(card['learner']['fingerprint'])}</code>, scoring "
        f"<code>{html.escape(card['scoring'])}</code>, schema {card['schema']}.</p>"
        f'<p>Command: <code class="command">{html.escape(card["command"])}</code></p>'
    )
    return [
        ("capabilities", "Capability scores", caps),
        ("curves", "Privacy-utility curves", curves),
        ("leaderboard", "Leaderboard", leaderboard),
        ("tasks", "Tasks", tasks),
        ("privacy", "Privacy: certified epsilon and audit", priv),
        ("claims", "Claims", claims),
        ("protocol", "Protocol and command", about),
    ]


#: The section ids every card.html has, in order (the browser test looks for them).
SECTIONS = ("capabilities", "curves", "leaderboard", "tasks", "privacy", "claims", "protocol")


def card_html(card: Mapping[str, Any], board: Mapping[str, Any]) -> str:
    """The self-contained HTML page of a card and its leaderboard."""
    title = html.escape(
        f"Benchmark card: {card['learner']['label']} ({card['protocol']['version']})"
    )
    body = "".join(
        f'<section id="{sid}"><h2>{html.escape(t)}</h2>{inner}</section>'
        for sid, t, inner in _sections(card, board)
    )
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:60em;color:#111;background:#fff}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;"
        "padding:2px 6px;font-size:13px}code{font-size:12px}"
        "pre{white-space:pre-wrap;font-size:12px}"
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{style}</style></head><body><h1>{title}</h1>{body}</body></html>\n"
    )


def card_markdown(card: Mapping[str, Any], board: Mapping[str, Any]) -> str:
    """The card as Markdown (the same numbers as the HTML, without figures)."""
    key = card["headline_epsilon"]
    lines = [
        f"# Benchmark card: {card['learner']['label']}",
        "",
        f"Protocol {card['protocol']['version']}{' (quick)' if card['protocol']['quick'] else ''}"
        f", learner fingerprint {card['learner']['fingerprint']}, scoring {card['scoring']}"
        f", schema {card['schema']}.",
        "",
        f"Command: `{card['command']}`",
        "",
        f"## Capability scores (eps {key})",
        "",
        "| capability | status | mean | 95% CI | IQM | "
        + " | ".join(f"eps {k}" for k in card["epsilons"])
        + " |",
        "|---|---|---|---|---|" + "---|" * len(card["epsilons"]),
    ]
    for capability, entry in card["capabilities"].items():
        s = entry["scores"].get(key)
        curve = " | ".join(_fmt(entry["scores"].get(k, {}).get("mean")) for k in card["epsilons"])
        ci = f"[{_fmt(s['mean_low'])}, {_fmt(s['mean_high'])}]" if s else "-"
        status = _status(entry["status"], entry["reason"])
        lines.append(
            f"| {capability} | {status} | {_fmt(s and s['mean'])} | {ci} | "
            f"{_fmt(s and s['iqm'])} | {curve} |"
        )
    lines += [
        "",
        "## Leaderboard",
        "",
        "| rank | learner | feedback | private | eps | overall |",
        "|---|---|---|---|---|---|",
    ]
    for r in board["rows"]:
        name = f"**{r['label']}**" if r["this"] else r["label"]
        lines.append(
            f"| {r['rank']} | {name} | {r['feedback']} | {'yes' if r['private'] else 'no'}"
            f" | {r['headline_epsilon']} | {_fmt(r['overall'])} |"
        )
    if board.get("note"):
        lines += ["", board["note"]]
    audit = card["privacy"].get("audit", {})
    lines += [
        "",
        "## Privacy",
        "",
        "| requested eps | certified eps | delta | certified | claim |",
        "|---|---|---|---|---|",
    ]
    for k, v in card["privacy"].get("certified", {}).items():
        lines.append(
            f"| {k} | {_fmt_eps(v['certified_epsilon'])} | {_fmt_eps(v.get('delta'))} | "
            f"{'yes' if v['certified'] else 'NO'} | {v.get('claim', '')} |"
        )
    lines += [
        "",
        f"Audit at eps {_fmt_eps(audit.get('epsilon', ''))}: **{audit.get('verdict', '')}**",
        "",
        "```text",
        str(audit.get("reason", "")),
        "```",
        "",
        "## Claims",
        "",
        "| claim | verdict | reason |",
        "|---|---|---|",
    ]
    for c in card["claims"]:
        lines.append(f"| {c['claim']} | {c['verdict']} | {c['reason']} |")
    lines += ["", "## Tasks", "", "| task | capability | status |", "|---|---|---|"]
    for t in card["tasks"]:
        lines.append(f"| {t['name']} | {t['capability']} | {_status(t['status'], t['reason'])} |")
    return "\n".join(lines) + "\n"
