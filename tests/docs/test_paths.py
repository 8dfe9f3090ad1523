"""The project stands alone: every repository path its docs and code name exists, and nothing
names a place outside it.

Scanned: every tracked text file (Python, Markdown, TOML, shell, ``.ci/run``). A *path* is a
word that starts with one of the repository's top-level folders (``workbench/``, ``docs/``,
``benchmarks/`` …) or a relative Markdown link in a doc; each must resolve to a file or folder
of the checkout (Markdown links relative to the doc that holds them). A *reference outside*
is any mention of the team's shared folder, of its design note, or of a paper by the file name
of its text copy (papers are cited by authors, title, venue and year; ``docs/math.md`` lists
them). Negative controls: a missing path and each kind of outside reference in a fixture are
reported.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("workbench", "simulators", "bounds", "app", "tests", "benchmarks", "examples", "docs",
       ".ci")
TOPS = "|".join(re.escape(t) for t in TOP)
PATH = re.compile(rf"(?<![\w/.\-~])((?:{TOPS})/[\w./\-]*[\w/])")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
# built from pieces so that this file does not match itself
OUTSIDE = re.compile("|".join([
    r"\.\./" + "sha" + "red", r"(?<![\w])" + "sha" + "red/", "DESIGN" + r"\.md",
    r"\b00[1-4]_[0-9a-f]{16}\b",
]))
SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt", ".cfg"}
# tests whose paths name the files of the fixture trees they build, not files of the checkout
FIXTURE_TREES = {"tests/test_layers.py", "tests/docs/test_paths.py"}


def tracked_text_files(root: Path) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=root, capture_output=True, text=True, check=True).stdout.split()
    return [root / name for name in listed
            if (Path(name).suffix in SUFFIXES or name == ".ci/run") and (root / name).is_file()]


def problems(root: Path, files: list[Path]) -> list[str]:
    found = []
    for path in files:
        text = path.read_text(errors="replace")
        where = path.relative_to(root)
        for number, line in enumerate(text.splitlines(), 1):
            for match in OUTSIDE.finditer(line):
                found.append(f"{where}:{number}: refers outside the repository: {match.group(0)}")
            for match in PATH.finditer(line) if str(where) not in FIXTURE_TREES else ():
                name = match.group(1).rstrip(".")
                if not (root / name).exists():
                    found.append(f"{where}:{number}: no such path: {name}")
            if path.suffix == ".md":
                for match in LINK.finditer(line):
                    target = match.group(1)
                    if "://" in target or target.startswith("mailto:"):
                        continue
                    if not (path.parent / target).resolve().exists():
                        found.append(f"{where}:{number}: broken link: {target}")
    return found


def test_every_path_resolves_and_nothing_refers_outside():
    assert problems(ROOT, tracked_text_files(ROOT)) == []


def test_negative_control_missing_paths_and_outside_references_are_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "workbench").mkdir()
    (tmp_path / "workbench" / "real.py").write_text("")
    doc = tmp_path / "docs" / "page.md"
    doc.write_text("\n".join([
        "See `workbench/real.py` and `workbench/gone.py`.",
        "[fine](../workbench/real.py) [broken](missing.md) [web](https://example.org)",
        "Read ../" + "sha" + "red/seeds and " + "DESIGN" + ".md.",
        "Seed 001 is 001_" + "0919f40a269a9e4f.txt.",
        "Or the " + "sha" + "red/reference write-up.",
    ]))
    assert problems(tmp_path, [doc]) == [
        "docs/page.md:1: no such path: workbench/gone.py",
        "docs/page.md:2: broken link: missing.md",
        "docs/page.md:3: refers outside the repository: ../" + "sha" + "red",
        "docs/page.md:3: refers outside the repository: " + "DESIGN" + ".md",
        "docs/page.md:4: refers outside the repository: 001_" + "0919f40a269a9e4f",
        "docs/page.md:5: refers outside the repository: " + "sha" + "red/",
    ]
