"""card.html in a real browser: headless Chromium renders it, takes a screenshot, dumps the DOM.

Skipped (with the reason) where ``/usr/bin/chromium`` is not installed (Debian's package
``chromium``). The checks have controls: a blank page is caught by the screenshot check, and a
page that logs to the console (a planted ``console.error`` and an uncaught exception) is caught
by the log check; the card passes both.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_bench_protocol import tiny_protocol

from dp_experts_env.bench.render import SECTIONS

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} is not installed (Debian package 'chromium'); the browser test "
        "needs it",
    ),
]

#: The flags headless Chromium needs as root on a machine without network (and no GPU).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
    "--window-size=1100,2600",
]


def _chromium(page: Path, tmp: Path, *action: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"  # a new empty one per run
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *action, page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def render(page: Path, tmp: Path) -> tuple[Path, list[str], str]:
    """(screenshot, the page's console lines, the rendered DOM)."""
    shot = tmp / f"{page.stem}.png"
    run = _chromium(page, tmp, f"--screenshot={shot}")
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    dom = _chromium(page, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console += [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    return shot, console, dom.stdout


def ink(png: Path) -> float:
    """Fraction of the screenshot's pixels that are not (near) white."""
    import matplotlib.image

    pixels = matplotlib.image.imread(png)[..., :3]
    return float((pixels.min(axis=-1) < 0.9).mean())


@pytest.fixture(scope="module")
def card_page(tmp_path_factory) -> Path:
    """A quick card on three tasks, bench-v2's learned-adversary task among them."""
    from dp_experts_env.bench.command import bench_learner

    out = tmp_path_factory.mktemp("browser")
    bench_learner(
        "noisy-clipped-hedge",
        {},
        out,
        quick=True,
        backend="serial",
        protocol=tiny_protocol(("shift", "anti-lazy", "learned-adversary"), horizon=200, seeds=3),
    )
    return out / "card.html"


def test_the_card_renders_with_its_sections_and_no_console_output(card_page, tmp_path) -> None:
    shot, console, dom = render(card_page, tmp_path)
    assert console == [], console
    assert ink(shot) > 0.01, "the screenshot is blank"
    for section in SECTIONS:
        assert f'<section id="{section}">' in dom
    assert dom.count('class="bar"') >= 1 and dom.count('class="point"') >= 2


def test_a_blank_page_and_a_noisy_page_are_caught(tmp_path) -> None:
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    shot, console, _ = render(blank, tmp_path)
    assert ink(shot) < 0.01 and console == []
    noisy = tmp_path / "noisy.html"
    noisy.write_text(
        "<!DOCTYPE html><html><body><h1>card</h1><script>console.error('planted');"
        "throw new Error('planted throw')</script></body></html>"
    )
    _, console, _ = render(noisy, tmp_path)
    assert any("planted" in line for line in console)
    assert any("Uncaught Error: planted throw" in line for line in console)
