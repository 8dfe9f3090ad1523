"""Text over a declared alphabet: codes, the split, and the plain-text reader on small
fixture files written here (never a download); characters outside the alphabet refused where
they stand."""

import numpy as np
import pytest

from simulators.validation import InvalidParameter
from workbench.data.text import TextCorpus, decode, encode, read_text_corpus, split_text


def test_codes_follow_the_alphabet_and_decode_back():
    codes = encode("text", "ba\ncab", "abc\n")
    np.testing.assert_array_equal(codes, [1, 0, 3, 2, 0, 1])
    assert codes.dtype == np.int64
    assert decode(codes, "abc\n") == "ba\ncab"
    assert decode(encode("text", "зимаé", "éазим"), "éазим") == "зимаé"


def test_a_character_outside_the_alphabet_is_named_with_its_place():
    with pytest.raises(InvalidParameter, match=r"'x' at position 5 \(line 2, column 3\)") as error:
        encode("text", "ab\nacxb", "abc\n")
    assert error.value.field == "text" and error.value.value == "x"
    with pytest.raises(InvalidParameter, match="non-empty string"):
        encode("text", "", "ab")


def test_the_split_holds_out_the_end():
    assert split_text("abcdefghij", 0.3) == ("abcdefg", "hij")
    assert split_text("ab", 0.01) == ("a", "b")
    for fraction in (0.0, 1.0, 1.5):
        with pytest.raises(InvalidParameter, match="test_fraction"):
            split_text("abcd", fraction)


def test_a_corpus_checks_both_texts():
    with pytest.raises(InvalidParameter, match="'z' at position 1") as error:
        TextCorpus("ab", "ab", "az", source="here")
    assert error.value.field == "test_text"


def test_reading_a_file(tmp_path):
    """A byte-order mark is dropped and CRLF line endings read as \\n."""
    path = tmp_path / "book.txt"
    path.write_bytes("\ufeffWell, Prince,\r\nso Genoa\r\n".encode())
    alphabet = "WelPrincsoGa ,\n"
    corpus = read_text_corpus(path, alphabet, test_fraction=0.25)
    assert corpus.train_text + corpus.test_text == "Well, Prince,\nso Genoa\n"
    assert len(corpus.test_text) == 6 and corpus.alphabet == alphabet
    assert str(path) in corpus.source


def test_a_file_outside_its_alphabet_is_refused(tmp_path):
    path = tmp_path / "book.txt"
    path.write_text("abc\nab\nabé\n", encoding="utf-8")
    with pytest.raises(InvalidParameter,
                       match=r"'é' at position 9 \(line 3, column 3\)") as error:
        read_text_corpus(path, "abc\n")
    assert error.value.field == "path" and error.value.value == str(path)


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such file"), (b"\xff\xfeab", "not UTF-8"), (b"a", "at least two characters")])
def test_unreadable_files_are_refused(tmp_path, content, message):
    path = tmp_path / "book.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InvalidParameter, match=message) as error:
        read_text_corpus(path, "ab")
    assert error.value.field == "path"
