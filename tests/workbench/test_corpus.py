"""Corpora for the LDA experiment (seed 004 §4.2): the synthetic generator, the UCI
bag-of-words reader, the held-out split and the sharding (workbench/data/corpus.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulators.validation import InvalidParameter
from workbench.data.corpus import (
    Corpus,
    check_vocabulary,
    generate_corpus,
    read_uci,
    shard_documents,
    split_held_out,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "uci_bag_of_words"
SETTINGS = dict(n_topics=4, vocabulary_size=40, n_documents=30, n_held_out=7,
                document_length=12, alpha=0.1, topic_concentration=0.05)


# ---------------------------------------------------------------- synthetic corpus
def test_generated_corpus_shapes_and_determinism():
    corpus = generate_corpus(**SETTINGS, seed=3)
    assert corpus.training.n_documents == 30 and corpus.held_out.n_documents == 7
    assert corpus.training.n_tokens == 30 * 12 and corpus.held_out.n_tokens == 7 * 12
    assert (np.diff(corpus.training.offsets) == 12).all()
    assert corpus.training.vocabulary_size == corpus.held_out.vocabulary_size == 40
    assert corpus.topics.shape == (4, 40) and (corpus.topics >= 0).all()
    np.testing.assert_allclose(corpus.topics.sum(axis=1), 1.0, rtol=1e-12)
    assert corpus.document_topics_alpha == 0.1
    again = generate_corpus(**SETTINGS, seed=3)
    assert np.array_equal(again.training.words, corpus.training.words)
    assert np.array_equal(again.held_out.words, corpus.held_out.words)
    assert np.array_equal(again.topics, corpus.topics)
    other = generate_corpus(**SETTINGS, seed=4)
    assert not np.array_equal(other.training.words, corpus.training.words)


def test_topics_put_the_documented_mass_on_their_own_block():
    """A topic's mass on its own block of B = W/K words is Beta(B, c (W - B)) (Dirichlet
    aggregation): mean B / (B + c (W - B)); the mean over K topics within z = 4 standard
    errors."""
    n_topics, size, concentration = 50, 500, 0.5
    corpus = generate_corpus(n_topics=n_topics, vocabulary_size=size, n_documents=1,
                             n_held_out=1, document_length=1, alpha=1.0,
                             topic_concentration=concentration, seed=11)
    block = size // n_topics
    own = corpus.topics.reshape(n_topics, n_topics, block)[np.arange(n_topics),
                                                             np.arange(n_topics)].sum(axis=1)
    a, b = block, concentration * (size - block)
    mean, variance = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert abs(own.mean() - mean) <= 4 * np.sqrt(variance / n_topics)


def test_words_follow_the_mixture_of_topics():
    """With α large every document mixes the topics evenly, so the tokens are close to iid
    draws from the average topic p̄: each word's count within z = 4.5 binomial standard
    deviations (40 words: family-wise level about 3e-4)."""
    corpus = generate_corpus(n_topics=4, vocabulary_size=40, n_documents=2000, n_held_out=1,
                             document_length=20, alpha=1e4, topic_concentration=0.3, seed=5)
    n = corpus.training.n_tokens
    p = corpus.topics.mean(axis=0)
    counts = np.bincount(corpus.training.words, minlength=40)
    assert (np.abs(counts - n * p) <= 4.5 * np.sqrt(n * p * (1 - p))).all()


@pytest.mark.parametrize(("field", "value"), [
    ("n_topics", 1), ("vocabulary_size", 3), ("n_documents", 0), ("n_held_out", 0),
    ("document_length", 0), ("alpha", 0.0), ("topic_concentration", -1.0)])
def test_generator_refusals(field, value):
    with pytest.raises(InvalidParameter) as error:
        generate_corpus(**{**SETTINGS, field: value}, seed=0)
    assert error.value.field == field


# ---------------------------------------------------------------- UCI reader
def test_uci_reader_on_the_tiny_fixture():
    corpus = read_uci(FIXTURES / "docword.tiny.txt", FIXTURES / "vocab.tiny.txt")
    assert corpus.vocabulary_size == 5
    assert corpus.vocabulary == ("apple", "banana", "cherry", "date", "elder")
    # document 2's entries are lines 6 and 9: word 1 three times, then word 3 (file order)
    assert [corpus.document(d).tolist() for d in range(3)] == [[1, 1, 4], [0, 0, 0, 2], [3, 1]]
    assert read_uci(FIXTURES / "docword.tiny.txt").vocabulary == ()


def _docword(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "docword.txt"
    path.write_text(text)
    return path


HEADER = "3\n5\n6\n"
ENTRIES = ["1 2 2", "1 5 1", "2 1 3", "3 4 1", "3 2 1", "2 3 1"]


def _with_entry(line: int, entry: str) -> str:
    """The fixture with entry line ``line`` (1-based file line, >= 4) replaced."""
    entries = list(ENTRIES)
    entries[line - 4] = entry
    return HEADER + "\n".join(entries) + "\n"


@pytest.mark.parametrize(("text", "line", "words"), [
    ("3\nfive\n6\n" + "\n".join(ENTRIES) + "\n", 2, "W (words)"),
    (_with_entry(5, "1 5"), 5, "docID wordID count"),
    (_with_entry(6, "2 1 x"), 6, "docID wordID count"),
    (_with_entry(7, "4 4 1"), 7, "docID 4 outside"),
    (_with_entry(8, "3 6 1"), 8, "wordID 6 outside"),
    (_with_entry(9, "2 3 0"), 9, "count 0"),
    (HEADER + "\n".join(ENTRIES[:5]) + "\n", 3, "NNZ = 6 but the file holds 5 entries"),
    ("3\n5\n", 3, "ends before"),
])
def test_uci_refusals_name_the_line(tmp_path, text, line, words):
    with pytest.raises(InvalidParameter) as error:
        read_uci(_docword(tmp_path, text))
    assert error.value.field == "docword_path"
    assert f"line {line}:" in error.value.allowed and words in error.value.allowed


def test_uci_blank_lines_are_skipped(tmp_path):
    corpus = read_uci(_docword(tmp_path, HEADER + "\n".join(ENTRIES[:3]) + "\n\n"
                               + "\n".join(ENTRIES[3:]) + "\n\n"))
    assert corpus.document(1).tolist() == [0, 0, 0, 2]


def test_uci_refuses_a_document_without_entries(tmp_path):
    with pytest.raises(InvalidParameter) as error:
        read_uci(_docword(tmp_path, "4\n5\n6\n" + "\n".join(ENTRIES) + "\n"))
    assert error.value.field == "documents" and error.value.value == 4


def test_uci_refuses_a_vocabulary_of_another_length_or_an_empty_word(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\nc\nd\n")
    with pytest.raises(InvalidParameter) as error:
        read_uci(FIXTURES / "docword.tiny.txt", vocab)
    assert error.value.field == "vocabulary" and error.value.value == 4
    assert "W = 5" in error.value.allowed
    vocab.write_text("a\nb\n\nd\ne\n")
    with pytest.raises(InvalidParameter) as error:
        read_uci(FIXTURES / "docword.tiny.txt", vocab)
    assert error.value.field == "vocabulary" and "line 3:" in error.value.allowed


def test_uci_refuses_missing_files(tmp_path):
    with pytest.raises(InvalidParameter) as error:
        read_uci(tmp_path / "absent.txt")
    assert error.value.field == "docword_path"
    with pytest.raises(InvalidParameter) as error:
        read_uci(FIXTURES / "docword.tiny.txt", tmp_path / "absent.txt")
    assert error.value.field == "vocabulary"


def test_check_vocabulary():
    named = read_uci(FIXTURES / "docword.tiny.txt", FIXTURES / "vocab.tiny.txt")
    check_vocabulary(named, named)
    check_vocabulary(named, Corpus(np.array([0, 4]), np.array([0, 2]), 5))  # no names: size
    with pytest.raises(InvalidParameter) as error:
        check_vocabulary(named, Corpus(np.array([0]), np.array([0, 1]), 6))
    assert error.value.field == "vocabulary"
    renamed = Corpus(np.array([0]), np.array([0, 1]), 5, ("apple", "banana", "kiwi", "d", "e"))
    with pytest.raises(InvalidParameter) as error:
        check_vocabulary(named, renamed)
    assert error.value.field == "vocabulary" and error.value.value == "kiwi"


# ---------------------------------------------------------------- held-out split
def test_split_sizes_tokens_and_determinism():
    lengths = [10, 2, 3, 20, 7]
    rng = np.random.default_rng(0)
    words = rng.integers(0, 9, size=sum(lengths))
    corpus = Corpus(words, np.concatenate(([0], np.cumsum(lengths))), 9)
    split = split_held_out(corpus, seed=1)
    # round(0.9 n) clipped to [1, n - 1]: 9/1, 1/1, 2/1 (2.7 -> 3 -> 2), 18/2, 6/1
    assert np.diff(split.observed.offsets).tolist() == [9, 1, 2, 18, 6]
    assert np.diff(split.predicted.offsets).tolist() == [1, 1, 1, 2, 1]
    for d in range(5):
        both = np.concatenate((split.observed.document(d), split.predicted.document(d)))
        assert sorted(both.tolist()) == sorted(corpus.document(d).tolist())
    again = split_held_out(corpus, seed=1)
    assert np.array_equal(again.observed.words, split.observed.words)
    assert np.array_equal(again.predicted.words, split.predicted.words)


def test_split_positions_are_uniform():
    """Each of a 10-token document's positions is predicted with probability 1/10: over 4000
    documents each position's count within z = 4 binomial standard deviations."""
    n_documents = 4000
    corpus = Corpus(np.tile(np.arange(10), n_documents), np.arange(n_documents + 1) * 10, 10)
    counts = np.bincount(split_held_out(corpus, seed=2).predicted.words, minlength=10)
    assert (np.abs(counts - 400) <= 4 * np.sqrt(4000 * 0.1 * 0.9)).all()


def test_split_refusals():
    short = Corpus(np.array([0, 1, 2]), np.array([0, 2, 3]), 3)
    with pytest.raises(InvalidParameter) as error:
        split_held_out(short, seed=0)
    assert error.value.field == "documents" and error.value.value == 1
    fine = Corpus(np.array([0, 1]), np.array([0, 2]), 3)
    for fraction in (0.0, 1.0, 1.5):
        with pytest.raises(InvalidParameter) as error:
            split_held_out(fine, observed_fraction=fraction, seed=0)
        assert error.value.field == "observed_fraction"


# ---------------------------------------------------------------- shards
def test_shards_partition_the_documents():
    shards = shard_documents(23, 5, seed=7)
    assert [s.size for s in shards] == [5, 5, 5, 4, 4]
    assert np.array_equal(np.sort(np.concatenate(shards)), np.arange(23))
    assert all((np.diff(s) > 0).all() for s in shards)
    again = shard_documents(23, 5, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(shards, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in
                   zip(shards, shard_documents(23, 5, seed=8), strict=True))
    assert np.array_equal(shard_documents(4, 1, seed=0)[0], np.arange(4))


@pytest.mark.parametrize("n_shards", [0, 24])
def test_shard_refusals(n_shards):
    with pytest.raises(InvalidParameter) as error:
        shard_documents(23, n_shards, seed=0)
    assert error.value.field == "n_workers"


def test_from_counts_expands_a_count_matrix_in_word_order():
    from workbench.data.corpus import from_counts

    corpus = from_counts([[0, 2, 1], [1, 0, 0]], ("a", "b", "c"))
    np.testing.assert_array_equal(corpus.words, [1, 1, 2, 0])
    np.testing.assert_array_equal(corpus.offsets, [0, 3, 4])
    assert corpus.vocabulary == ("a", "b", "c")


def test_the_reuters_stories_of_the_lda_package_when_installed():
    """The optional extra ``topics``: tested only where the lda package is installed."""
    pytest.importorskip("lda")
    from workbench.data.corpus import reuters

    corpus = reuters()
    assert (corpus.n_documents, corpus.vocabulary_size, corpus.n_tokens) == (395, 4258, 84010)
    assert corpus.vocabulary[:2] == ("church", "pope")
