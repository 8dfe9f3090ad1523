"""Every citation of docs/math.md resolves to one of its headings.

The code, the study and example files, the docs and the bound records cite the mathematics as
``math.md §N`` (or ``docs/math.md §N``, or the link ``[math.md](math.md) §N``), also in lists
(``math.md §5, §7``, ``§3 and §7``), ranges (``§7 to §15``) and subsections (``§7.2``). A
citation resolves when docs/math.md has a heading ``## N. ...`` (or ``### N.k ...`` for a
subsection). Inside docs/math.md itself every bare ``§N`` is a cross-reference to its own
sections, and must resolve too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MATH = ROOT / "docs" / "math.md"

#: the first seven sections keep the numbers and topics the code was written against
CORE_TOPICS = {
    "1": "step-size conventions",
    "2": "stale gradients",
    "3": "higher-order integrators",
    "4": "distributed sgld",
    "5": "federated sgld",
    "6": "downpour and elastic",
    "7": "exact results for linear-gaussian targets",
}

_NUMBER = r"(\d+(?:\.\d+)?)"
#: ``math.md §N``, also as a Markdown link ``[math.md](math.md) §N`` and across a line break
_ANCHOR = re.compile(r"math\.md(?:\]\([^)\s]*\)|\))?['\"#\s]*§\s*" + _NUMBER)
_MORE = re.compile(r"(?:'s)?\s*(,|\band\b|&|\bor\b|–|\bto\b)\s*§\s*" + _NUMBER)
_BARE = re.compile(r"§\s*" + _NUMBER)
_HEADING = re.compile(r"^(#{2,3})\s+(\d+(?:\.\d+)?)\.?\s+(.*\S)\s*$")


def headings(text: str) -> dict[str, str]:
    """Section number -> title for the ``## N.`` and ``### N.k`` headings outside code fences."""
    found: dict[str, str] = {}
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match is None:
            continue
        level, number, title = match.groups()
        if (level == "##") != ("." not in number):
            continue  # a level-2 heading with a subsection number, or the reverse
        found[number] = title
    return found


def _expand(first: str, last: str) -> list[str]:
    if "." in first or "." in last or int(last) < int(first):
        return [first, last]
    return [str(n) for n in range(int(first), int(last) + 1)]


def citations(text: str) -> list[tuple[int, str]]:
    """(line, section) for every section cited as ``math.md §N`` (lists and ranges expanded)."""
    out = []
    for anchor in _ANCHOR.finditer(text):
        line = text.count("\n", 0, anchor.start()) + 1
        numbers = [anchor.group(1)]
        position = anchor.end()
        while (more := _MORE.match(text, position)) is not None:
            separator, number = more.groups()
            if separator in ("–", "to"):
                numbers.extend(_expand(numbers.pop(), number))
            else:
                numbers.append(number)
            position = more.end()
        out.extend((line, number) for number in numbers)
    return out


def unresolved(text: str, sections: dict[str, str], pattern=None) -> list[tuple[int, str]]:
    """The citations of ``text`` that name no heading of ``sections``."""
    cited = (citations(text) if pattern is None else
             [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in pattern.finditer(text)])
    return [(line, number) for line, number in cited if number not in sections]


@pytest.fixture(scope="module")
def sections() -> dict[str, str]:
    assert MATH.is_file(), "docs/math.md is missing"
    return headings(MATH.read_text(encoding="utf-8"))


def _files() -> dict[str, list[Path]]:
    def python(folder):
        return [p for p in sorted((ROOT / folder).rglob("*.py")) if "__pycache__" not in p.parts]

    return {
        "code": [p for folder in ("workbench", "bounds", "simulators", "app")
                 for p in python(folder)],
        "studies": (sorted((ROOT / "workbench" / "studies" / "library").rglob("*.toml"))
                    + sorted((ROOT / "examples").rglob("*.toml"))),
        "docs": sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"],
    }


def _report(problems: list[str]) -> str:
    return f"{len(problems)} citation(s) of docs/math.md name no section:\n" + "\n".join(problems)


# ---------------------------------------------------------------- the document's own structure
def test_core_sections_keep_their_numbers_and_topics(sections):
    for number, topic in CORE_TOPICS.items():
        assert number in sections, f"docs/math.md has no '## {number}.' heading"
        assert topic in sections[number].lower(), (number, sections[number])


def test_sections_are_numbered_in_order(sections):
    text = MATH.read_text(encoding="utf-8")
    order = [m.group(2) for line in text.splitlines() if (m := _HEADING.match(line))]
    top = [int(n) for n in order if "." not in n]
    assert top == list(range(1, len(top) + 1)), top
    current = None
    for number in order:
        if "." not in number:
            current, expected = number, 1
            continue
        major, minor = number.split(".")
        assert major == current, f"### {number} sits under ## {current}"
        assert int(minor) == expected, f"### {number}: expected {current}.{expected}"
        expected += 1
    assert re.search(r"^## References\s*$", text, re.MULTILINE), "no References section"


def test_cross_references_inside_math_md_resolve(sections):
    text = MATH.read_text(encoding="utf-8")
    missing = unresolved(text, sections, pattern=_BARE)
    assert not missing, _report([f"docs/math.md:{line}: §{n}" for line, n in missing])


def test_seed_labels_are_defined(sections):
    text = MATH.read_text(encoding="utf-8")
    references = text[text.index("## References"):]
    for label in ("seed 001", "seed 002", "seed 003", "seed 004"):
        assert f"**{label}**" in references, f"{label} is not defined in the References"


# ---------------------------------------------------------------- the resolver itself
def test_parser_reads_lists_ranges_and_subsections():
    text = ("see math.md §5, §7 and §3\n"
            "docs/math.md §7.2's closed form; math.md §8 to §10 (§99 unrelated)\n"
            'math.md\n"§2 and §4.1"\n'
            "math.md: no section here\n"
            "[math.md](math.md) §6, §14.2 and [docs/math.md](docs/math.md#1) §1")
    assert citations(text) == [(1, "5"), (1, "7"), (1, "3"), (2, "7.2"), (2, "8"), (2, "9"),
                               (2, "10"), (3, "2"), (3, "4.1"), (6, "6"), (6, "14.2"), (6, "1")]


def test_negative_control_reports_a_missing_section(sections):
    text = ("A result (math.md §99) and its corollary (docs/math.md §7, §7.99); see math.md §2.\n"
            "As a link: [math.md](math.md) §99.")
    assert unresolved(text, sections) == [(1, "99"), (1, "7.99"), (2, "99")]


# ---------------------------------------------------------------- the places that cite it
@pytest.mark.parametrize("group", ["code", "studies", "docs"])
def test_citations_resolve(group, sections):
    problems = []
    for path in _files()[group]:
        if not path.is_file():
            continue  # moved while the suite was collecting
        text = path.read_text(encoding="utf-8")
        for line, number in unresolved(text, sections):
            problems.append(f"{path.relative_to(ROOT)}:{line}: math.md §{number}")
    assert not problems, _report(problems)


def test_bound_sources_resolve(sections):
    from bounds import registry

    problems = []
    for bound in registry.BOUNDS.values():
        for field in ("source", "provenance_note", "notes"):
            text = getattr(bound, field, "") or ""
            for _, number in unresolved(text, sections):
                problems.append(f"bound {bound.name} ({field}): math.md §{number}")
    assert not problems, _report(problems)
