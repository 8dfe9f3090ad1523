"""What a verdict means is written once (``MEANINGS`` in ``bounds/equivalence.py``): the HTML
report opens with it and docs/verdicts.md carries the same words. Negative control: a doc that
paraphrases one of them is reported stale."""

from __future__ import annotations

from pathlib import Path

from bounds.equivalence import MEANINGS

DOC = Path(__file__).resolve().parents[2] / "docs" / "verdicts.md"


def stale(text: str) -> list[str]:
    """The verdicts whose sentence the doc does not carry word for word."""
    words = " ".join(text.split())
    return [verdict for verdict, meaning in MEANINGS.items()
            if f"**`{verdict}`** — {' '.join(meaning.split())}" not in words]


def test_the_docs_say_what_each_verdict_means_in_the_reports_words():
    assert stale(DOC.read_text()) == []


def test_a_paraphrase_is_reported_stale():
    text = DOC.read_text().replace("not merely", "not just")
    assert stale(text) == ["holds"]
