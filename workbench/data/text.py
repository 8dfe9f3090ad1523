"""Character text over a declared alphabet: encoding, a plain-text file reader, a split.

Seed 003 (Appendix C, Table 1) samples character-level LSTM and GRU language models on War and
Peace. The workbench never downloads it: a user with the plain text on disk reads it with
:func:`read_text_corpus`, declaring the alphabet the model predicts over, and
:mod:`workbench.data.markov_text` generates text from a known source instead.

A text is a Python string; a model sees it as integer codes, ``alphabet.index(character)``
(:func:`encode`). A character outside the declared alphabet is refused, naming the character,
its 0-based position in the text and its 1-based line and column, so that a user can fix the
alphabet or the file.

Split (:func:`split_text`): the last ``round(test_fraction · n)`` characters are held out, so
the held-out text is the continuation of the training text, the same on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulators import validation


def checked_alphabet(alphabet) -> str:
    """A string of at least two distinct characters; anything else names ``alphabet``."""
    if not isinstance(alphabet, str) or len(alphabet) < 2:
        raise validation.InvalidParameter("alphabet", alphabet,
                                          "must be a string of at least two characters")
    if len(set(alphabet)) != len(alphabet):
        repeated = sorted({c for c in alphabet if alphabet.count(c) > 1})
        raise validation.InvalidParameter("alphabet", alphabet,
                                          f"must not repeat characters (repeats {repeated})")
    return alphabet


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def encode(field: str, text, alphabet: str, value: object = None) -> np.ndarray:
    """The codes ``alphabet.index(c)`` of the characters of ``text``, an int64 array ``(n,)``.

    ``text`` must be a non-empty string over ``alphabet`` (checked with
    :func:`checked_alphabet`). A character outside it is refused as ``field``, naming the first
    such character and where it stands; the error shows ``value`` as the field's value (a file
    reader passes the file's path) or, by default, that character.
    """
    alphabet = checked_alphabet(alphabet)
    if not isinstance(text, str) or not text:
        shown = text if isinstance(text, str) else type(text).__name__
        raise validation.InvalidParameter(field, shown, "must be a non-empty string")
    points = _code_points(text)
    known = _code_points(alphabet)
    order = np.argsort(known)
    slots = np.minimum(np.searchsorted(known[order], points), known.size - 1)
    inside = known[order[slots]] == points
    if not inside.all():
        position = int(np.argmin(inside))
        character = text[position]
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        raise validation.InvalidParameter(
            field, character if value is None else value,
            f"character {character!r} at position {position} (line {line}, column {column}) "
            f"is not in the alphabet {alphabet!r}")
    return order[slots].astype(np.int64)


def decode(codes, alphabet: str) -> str:
    """The text whose :func:`encode` is ``codes`` (integers in 0..len(alphabet)-1)."""
    return "".join(np.asarray(list(checked_alphabet(alphabet)))[np.asarray(codes)])


def split_text(text: str, test_fraction: float) -> tuple[str, str]:
    """``(train, held_out)``: the last ``round(test_fraction · n)`` characters held out, at
    least one character on each side."""
    test_fraction = validation.probability("test_fraction", test_fraction)
    if not 0.0 < test_fraction < 1.0:
        raise validation.InvalidParameter("test_fraction", test_fraction,
                                          "must lie strictly between 0 and 1")
    if not isinstance(text, str) or len(text) < 2:
        raise validation.InvalidParameter("text", text,
                                          "must be a string of at least two characters")
    n_test = held_out_count(len(text), test_fraction)
    return text[:len(text) - n_test], text[len(text) - n_test:]


def held_out_count(length: int, test_fraction: float) -> int:
    """Characters :func:`split_text` holds out of a text of ``length`` >= 2: round(f·n), at
    least one and leaving one."""
    return max(1, min(length - 1, round(test_fraction * length)))


@dataclass(frozen=True, eq=False)
class TextCorpus:
    """Training and held-out text over ``alphabet`` (both checked), and where it came from."""

    alphabet: str
    train_text: str
    test_text: str
    source: str

    def __post_init__(self) -> None:
        for field in ("train_text", "test_text"):
            encode(field, getattr(self, field), self.alphabet)


def read_text_corpus(path, alphabet: str, test_fraction: float = 0.1,
                     field: str = "path") -> TextCorpus:
    """Read a UTF-8 plain-text file (a leading byte-order mark dropped, line endings read as
    ``\\n``) over the declared ``alphabet`` and split it (:func:`split_text`).

    A missing, empty or non-UTF-8 file, or one with a character outside ``alphabet`` (named
    with its position, line and column), is refused as ``field`` (a study's ``text_source``).
    """
    path = Path(path)
    alphabet = checked_alphabet(alphabet)
    if not path.is_file():
        raise validation.InvalidParameter(field, str(path), "no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise validation.InvalidParameter(field, str(path),
                                          f"is not UTF-8 text: {error}") from error
    if len(text) < 2:
        raise validation.InvalidParameter(field, str(path),
                                          "must hold at least two characters")
    encode(field, text, alphabet, value=str(path))
    train, held_out = split_text(text, test_fraction)
    return TextCorpus(alphabet, train, held_out,
                      source=f"text file {path}, test fraction {test_fraction}")
