"""How the study tests check a refusal: the error names the line of the study text that holds
the offending key, and says why."""

from __future__ import annotations

import pytest

from workbench.studies.document import StudyError
from workbench.studies.files import loads


def line_of(text: str, needle: str) -> int:
    """The 1-based line of ``text`` that first holds ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def assert_names(message: str, text: str, needle: str, *words: str) -> None:
    """``message`` names the line of ``text`` holding ``needle``, and each of ``words``."""
    assert f":{line_of(text, needle)}:" in message, message
    for word in words:
        assert word in message, message


def refused_when_read(text: str, needle: str, *words: str) -> None:
    """``text`` is refused when read, naming the line holding ``needle`` and ``words``."""
    with pytest.raises(StudyError) as caught:
        loads(text, "<test>")
    assert_names(str(caught.value), text, needle, *words)
