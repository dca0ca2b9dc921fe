"""The project's own promises: README's two set-up commands are the ones CI and users run."""

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def readme_command(heading: str) -> str:
    match = re.search(heading + r".*?```bash\n(.*?)\n```", README, re.S)
    assert match, f"README must give the command after {heading!r}"
    return match.group(1).strip()


def test_ci_runs_exactly_the_readme_test_command():
    command = readme_command("Run the tests")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in [line.strip() for line in ci]


def test_main_job_command_uses_the_declared_entry_point():
    command = readme_command("Run the main job")
    assert command == "pip install -e . && dp-experts compare"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["dp-experts"] == "dp_experts_env.cli:main"
    # A core install never pulls torch: Stable-Baselines3 sits behind the sb3 extra.
    assert not any("stable-baselines3" in d or "torch" in d for d in project["dependencies"])
    assert any("stable-baselines3" in d for d in project["optional-dependencies"]["sb3"])


def test_ci_installs_every_extra_a_test_depends_on():
    # Optional-dependency tests skip when their extra is missing; CI must not skip them.
    command = (ROOT / ".ci" / "run").read_text()
    for extra in ("sb3", "ray", "accounting", "test"):
        assert re.search(r'pip install -e "\.\[[^\]]*\b' + extra + r"\b", command), extra


def test_license_and_type_marker_ship_with_the_packages():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == {"text": "MIT"}
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License") and "dp-experts-env contributors" in license_text
    package_data = pyproject["tool"]["setuptools"]["package-data"]
    for package in ("dp_experts_env", "agents"):
        assert (ROOT / package / "py.typed").is_file(), f"{package} lacks its PEP 561 marker"
        assert "py.typed" in package_data[package], f"py.typed of {package} is not package data"


def test_the_first_screen_holds_both_commands_and_an_example():
    """A newcomer's first 40 lines: the two set-up commands and a Python example (run by
    tests/test_docs_code.py like every block)."""
    first = "\n".join(README.splitlines()[:40])
    assert "pip install -e . && dp-experts compare" in first
    assert readme_command("Run the tests") in first
    example = re.search(r"```python\n(.*?)\n```", first, re.S)
    assert example and "agents.make(" in example.group(1) and "env.step(" in example.group(1)
