"""The experiments table of ``docs/experiments.md`` is the registry's, not a copy kept by hand.

The doc holds the output of ``workbench list --markdown`` between two markers; the test fails
when an experiment is added, renamed or re-summarised without regenerating it. Negative
control: a doc whose table lacks a row is reported stale.
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench import experiments

DOC = Path(__file__).resolve().parents[2] / "docs" / "experiments.md"
BLOCK = re.compile(r"<!-- experiments-table:start -->\n(.*?)<!-- experiments-table:end -->",
                   re.S)


def table_in(text: str) -> str | None:
    match = BLOCK.search(text)
    return None if match is None else match.group(1)


def test_the_docs_table_is_the_registrys():
    assert table_in(DOC.read_text()) == experiments.markdown_table(), (
        "docs/experiments.md is stale: paste `workbench list --markdown` between its markers")


def test_every_registered_experiment_has_a_row():
    table = experiments.markdown_table()
    assert [line.split("`")[1] for line in table.splitlines()[2:]] == list(
        experiments.EXPERIMENTS)


def test_negative_control_a_table_missing_a_row_is_stale():
    rows = experiments.markdown_table().splitlines(keepends=True)
    stale = ("<!-- experiments-table:start -->\n" + "".join(rows[:-1])
             + "<!-- experiments-table:end -->")
    assert table_in(stale) not in (None, experiments.markdown_table())
