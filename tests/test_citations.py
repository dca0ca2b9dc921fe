"""The repository is self-contained: no citation of documents outside it, every erratum defined.

Code and docs cite papers by name and section and errata by their id in docs/errata.md. Internal
planning documents (implementation briefs, their numbered pitfalls, a design contract) are not
part of the repository, so a reference to them is a dangling link for every other reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ERRATA = ROOT / "docs" / "errata.md"
SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "node_modules", "__pycache__", "results"}

# Each pattern names one kind of external reference. They are written to miss ordinary prose
# and notation: "P(j)", "p1 = ...", "P-COMW", "designed", "in brief", percentiles "P50"/"P95"
# (the internal pitfall ids run from P1 to P28).
FORBIDDEN = {
    "implementation brief": re.compile(r"\bbriefs?\s*0\d\d", re.IGNORECASE),
    "numbered pitfall": re.compile(r"\bpitfalls?\s+P?\d", re.IGNORECASE),
    "pitfall id": re.compile(r"(?<![\w.])P(?:[1-9]|[12]\d)(?![\w(.])"),
    "design contract": re.compile(r"\bDESIGN(?:\.md|\s*§|\s+section)"),
}
ERRATUM_ID = re.compile(r"\bE-[A-Z]{2,5}-\d+\b")
ERRATUM_DEFINITION = re.compile(r"^- \*\*(E-[A-Z]{2,5}-\d+)\*\*", re.MULTILINE)


def _text_files() -> list[Path]:
    files = []
    for path in ROOT.rglob("*"):
        if path.suffix not in {".py", ".md"} or not path.is_file():
            continue
        if SKIP_DIRS.intersection(path.relative_to(ROOT).parts):
            continue
        files.append(path)
    return sorted(files)


def _hits(text: str) -> list[str]:
    return [f"{kind}: {m.group(0)!r}" for kind, rx in FORBIDDEN.items() for m in rx.finditer(text)]


def test_the_scan_covers_the_packages_tests_and_docs():
    names = {p.relative_to(ROOT).parts[0] for p in _text_files()}
    assert {"agents", "dp_experts_env", "tests", "docs", "README.md"} <= names


@pytest.mark.parametrize(
    "text",
    [
        "see brief 000 §3.2",
        "Brief 004 Alg. 1",
        "(briefs 001-003: lazy learners)",
        "the sensitivity is 2 (P6)",
        "argmin, not argmax (P1);",
        "P12 fixes",
        "constants (P1-P21)",
        "(P1, P24: sigma)",
        "Pitfall 9",
        "pitfalls P1-P21",
        "the protocol of DESIGN §2",
        "DESIGN section 4",
        "see ../shared/DESIGN.md",
    ],
)
def test_the_patterns_catch_external_references(text):
    assert _hits(text), text


@pytest.mark.parametrize(
    "text",
    [
        "P(J_t = j) ~ exp(-eta L)",
        "p1 = np.array([0.5, 0.5]); p2 = p1",
        "P-COMW (Agarwal et al., Algorithm 1)",
        "Theorem 4.1's are designed for epsilon <= 1",
        "in brief, the learner is lazy",
        "erratum E-ARS-15",
        "a 0.95 quantile P95, the median P50",
        "numpy's np.P1x",
    ],
)
def test_the_patterns_leave_ordinary_text_alone(text):
    assert not _hits(text), _hits(text)


def test_no_file_cites_documents_outside_the_repository():
    bad = []
    for path in _text_files():
        if path == Path(__file__).resolve():
            continue  # the patterns and their examples live here
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            bad += [f"{path.relative_to(ROOT)}:{lineno}: {hit}" for hit in _hits(line)]
    assert not bad, "external references (cite the paper by name and section instead):\n" + (
        "\n".join(bad)
    )


def test_every_cited_erratum_is_defined_in_errata_md():
    defined = ERRATUM_DEFINITION.findall(ERRATA.read_text(encoding="utf-8"))
    assert len(defined) == len(set(defined)), "an erratum id is defined twice"
    cited = {}
    for path in _text_files():
        if path == Path(__file__).resolve():
            continue
        for m in ERRATUM_ID.finditer(path.read_text(encoding="utf-8")):
            cited.setdefault(m.group(0), str(path.relative_to(ROOT)))
    missing = {eid: where for eid, where in cited.items() if eid not in set(defined)}
    assert not missing, f"errata cited but not defined in docs/errata.md: {missing}"
    # The learners' errata are cited from the code: the list is not empty by accident.
    assert {"E-ARS-15", "E-PAB-7", "E-AKST-1", "E-AFKT-8"} <= set(cited)
