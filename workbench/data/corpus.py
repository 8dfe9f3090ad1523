"""Bag-of-words corpora for topic models (seed 004 §4.2): documents as one flat token array.

A corpus holds its tokens' word ids in one int64 array, documents consecutive, with offsets
into it: document ``d`` is ``words[offsets[d]:offsets[d + 1]]``. Word ids run over
``0 … vocabulary_size - 1``; ``vocabulary`` names them where the corpus came from files.

Where corpora come from and how they are cut (below the class):

- :func:`generate_corpus`: LDA's generative process with known topics (a synthetic stand-in
  for the seed's Wikipedia corpus, whose true topics are then known);
- :func:`read_uci`: the UCI bag-of-words files (KOS, NIPS, NYTimes, …);
- :func:`reuters`: the 395 Reuters news stories the ``lda`` package ships (the optional extra
  ``topics``), read offline from the installed package;
- :func:`split_held_out`: document completion's split of each held-out document into an
  observed 90 % and a predicted 10 % (seed 004 §4.2: 1,000 held-out documents, 90/10);
- :func:`shard_documents`: a random partition of the training documents over the workers;
- :func:`check_vocabulary`: held-out data must use the training data's vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulators import validation
from simulators.seeding import SeedLike, generator


@dataclass(frozen=True)
class Corpus:
    """Documents of word ids (module docstring); every document has at least one token."""

    words: np.ndarray
    offsets: np.ndarray
    vocabulary_size: int
    vocabulary: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        words = np.ascontiguousarray(self.words, dtype=np.int64)
        offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        size = validation.integer("vocabulary_size", self.vocabulary_size, minimum=1)
        if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 \
                or offsets[-1] != words.size:
            raise validation.InvalidParameter(
                "offsets", offsets.size, "must run from 0 to the number of tokens")
        lengths = np.diff(offsets)
        if (lengths < 1).any():
            raise validation.InvalidParameter(
                "documents", int(np.flatnonzero(lengths < 1)[0]),
                "is empty: every document needs at least one token")
        if words.size and (words.min() < 0 or words.max() >= size):
            raise validation.InvalidParameter(
                "words", int(words.max()), f"must be word ids below vocabulary_size = {size}")
        if self.vocabulary and len(self.vocabulary) != size:
            raise validation.InvalidParameter(
                "vocabulary", len(self.vocabulary),
                f"must name every word (vocabulary_size = {size})")
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "vocabulary_size", size)
        object.__setattr__(self, "vocabulary", tuple(self.vocabulary))

    @property
    def n_documents(self) -> int:
        return self.offsets.size - 1

    @property
    def n_tokens(self) -> int:
        return self.words.size

    def document(self, d: int) -> np.ndarray:
        """Document ``d``'s word ids."""
        return self.words[self.offsets[d]:self.offsets[d + 1]]

    def subset(self, documents) -> Corpus:
        """The documents ``documents`` (indices, in that order) as a corpus of their own."""
        documents = np.asarray(documents, dtype=np.int64)
        lengths = np.diff(self.offsets)[documents]
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        words = (np.concatenate([self.document(d) for d in documents]) if documents.size
                 else np.zeros(0, dtype=np.int64))
        return Corpus(words, offsets, self.vocabulary_size, self.vocabulary)


@dataclass(frozen=True)
class SyntheticCorpus:
    """A corpus drawn from LDA with known topics (:func:`generate_corpus`)."""

    training: Corpus
    held_out: Corpus
    topics: np.ndarray  # (K, W) the true topic-word probabilities, rows summing to 1
    document_topics_alpha: float  # the Dirichlet parameter the documents' proportions came from


def generate_corpus(*, n_topics: int, vocabulary_size: int, n_documents: int, n_held_out: int,
                    document_length: int, alpha: float, topic_concentration: float,
                    seed: SeedLike) -> SyntheticCorpus:
    """LDA's generative process (Blei, Ng & Jordan 2003) with known, well separated topics.

    Topics: word w belongs to the block of topic ``w * K // W`` (K contiguous blocks of about
    W/K words). Topic k is drawn from a Dirichlet whose parameter is 1 on its own block and
    ``topic_concentration`` on every other word, so a topic puts on average a fraction
    (W/K) / (W/K + c (W - W/K)) of its mass on its own block (c = ``topic_concentration``):
    at small c the topics live on nearly disjoint blocks and are recoverable from the data,
    while inside its block a topic is a flat Dirichlet draw, not a uniform bar. (A symmetric
    Dirichlet(c) over all words would let two topics share their few heavy words by chance.)

    Documents: proportions θ_d ~ Dirichlet(α 1_K), then each of the ``document_length``
    tokens draws z ~ Categorical(θ_d) and w ~ Categorical(topic z). The first ``n_documents``
    documents are the training corpus, the next ``n_held_out`` the held-out one. Streams:
    ``generator(seed, "corpus", "topics")`` and ``generator(seed, "corpus", "documents")``.
    """
    n_topics = validation.integer("n_topics", n_topics, minimum=2)
    size = validation.integer("vocabulary_size", vocabulary_size, minimum=n_topics)
    n_documents = validation.integer("n_documents", n_documents, minimum=1)
    n_held_out = validation.integer("n_held_out", n_held_out, minimum=1)
    length = validation.integer("document_length", document_length, minimum=1)
    alpha = validation.positive("alpha", alpha)
    concentration = validation.positive("topic_concentration", topic_concentration)
    block = np.arange(size) * n_topics // size
    parameters = np.where(block[None, :] == np.arange(n_topics)[:, None], 1.0, concentration)
    topic_rng = generator(seed, "corpus", "topics")
    topics = np.array([topic_rng.dirichlet(row) for row in parameters])
    rng = generator(seed, "corpus", "documents")
    total = n_documents + n_held_out
    proportions = rng.dirichlet(np.full(n_topics, alpha), size=total)
    # inverse-CDF draws, all documents in one search: document d's cumulative proportions
    # shifted by d; the clip keeps a rounding shortfall of a cumulative sum in range
    document_of = np.repeat(np.arange(total), length)
    shifted = (np.cumsum(proportions, axis=1) + np.arange(total)[:, None]).ravel()
    found = np.searchsorted(shifted, rng.random(total * length) + document_of, side="right")
    token_topics = np.minimum(found - document_of * n_topics, n_topics - 1)
    uniforms = rng.random(total * length)
    cumulative = np.cumsum(topics, axis=1)
    words = np.empty(total * length, dtype=np.int64)
    for k in range(n_topics):
        mine = token_topics == k
        words[mine] = np.searchsorted(cumulative[k], uniforms[mine], side="right")
    np.minimum(words, size - 1, out=words)
    offsets = np.arange(total + 1, dtype=np.int64) * length
    corpus = Corpus(words, offsets, size)
    return SyntheticCorpus(corpus.subset(np.arange(n_documents)),
                           corpus.subset(np.arange(n_documents, total)), topics, alpha)


@dataclass(frozen=True)
class HeldOutSplit:
    """Document completion's halves of the held-out documents: document d of ``observed`` and
    document d of ``predicted`` are the two parts of held-out document d."""

    observed: Corpus
    predicted: Corpus

    def __post_init__(self) -> None:
        if self.observed.n_documents != self.predicted.n_documents:
            raise validation.InvalidParameter(
                "predicted", self.predicted.n_documents,
                f"must hold as many documents as observed ({self.observed.n_documents})")
        check_vocabulary(self.observed, self.predicted)


def split_held_out(corpus: Corpus, *, observed_fraction: float = 0.9,
                   seed: SeedLike) -> HeldOutSplit:
    """Split each held-out document's tokens at random into observed and predicted parts.

    A document of n tokens keeps round(f n) of them observed (f = ``observed_fraction``),
    clipped to [1, n - 1] so both parts hold a token; which tokens, is a uniformly random
    subset (random keys from ``generator(seed, "held_out_split")``, one a token, sorted
    within each document). Each part keeps its tokens in document order.
    """
    fraction = validation.positive("observed_fraction", observed_fraction)
    if fraction >= 1.0:
        raise validation.InvalidParameter("observed_fraction", fraction, "must be < 1")
    lengths = np.diff(corpus.offsets)
    if (lengths < 2).any():
        raise validation.InvalidParameter(
            "documents", int(np.flatnonzero(lengths < 2)[0]),
            "has fewer than 2 tokens: it cannot be split into observed and predicted parts")
    n_observed = np.clip(np.rint(fraction * lengths).astype(np.int64), 1, lengths - 1)
    document_of = np.repeat(np.arange(corpus.n_documents), lengths)
    keys = generator(seed, "held_out_split").random(corpus.n_tokens)
    order = np.lexsort((keys, document_of))  # each document's tokens in a random order
    rank = np.arange(corpus.n_tokens) - corpus.offsets[document_of]
    observed = np.empty(corpus.n_tokens, dtype=bool)
    observed[order] = rank < n_observed[document_of]
    return HeldOutSplit(_part(corpus, observed, n_observed),
                        _part(corpus, ~observed, lengths - n_observed))


def _part(corpus: Corpus, keep: np.ndarray, lengths: np.ndarray) -> Corpus:
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    return Corpus(corpus.words[keep], offsets, corpus.vocabulary_size, corpus.vocabulary)


def check_vocabulary(training: Corpus, held_out: Corpus) -> None:
    """Refuse held-out data on another vocabulary: another size, or other word names when
    both corpora name their words."""
    if held_out.vocabulary_size != training.vocabulary_size:
        raise validation.InvalidParameter(
            "vocabulary", held_out.vocabulary_size,
            f"held-out data must use the training vocabulary of {training.vocabulary_size} "
            "words")
    if training.vocabulary and held_out.vocabulary and training.vocabulary != held_out.vocabulary:
        first = next(i for i, (a, b) in enumerate(zip(training.vocabulary, held_out.vocabulary,
                                                      strict=True)) if a != b)
        raise validation.InvalidParameter(
            "vocabulary", held_out.vocabulary[first],
            f"held-out word {first} differs from the training word "
            f"{training.vocabulary[first]!r}")


def shard_documents(n_documents: int, n_shards: int, seed: SeedLike) -> list[np.ndarray]:
    """A uniformly random partition of ``n_documents`` documents into ``n_shards`` shards of
    near-equal sizes (they differ by at most one; the larger ones first), each sorted
    (a permutation from ``generator(seed, "shards")`` cut by ``np.array_split``)."""
    n_documents = validation.integer("n_documents", n_documents, minimum=1)
    n_shards = validation.integer("n_workers", n_shards, minimum=1, maximum=n_documents)
    permutation = generator(seed, "shards").permutation(n_documents)
    return [np.sort(part) for part in np.array_split(permutation, n_shards)]


def read_uci(docword_path, vocab_path=None) -> Corpus:
    """Read a corpus in the UCI bag-of-words format (Newman's KOS, NIPS, NYTimes, PubMed).

    ``docword`` file: three header lines D (documents), W (words) and NNZ (entries), then NNZ
    lines ``docID wordID count`` with 1-based ids; blank lines are skipped. Document d
    (= docID - 1) holds, for each of its entries in file order, ``count`` tokens of word
    wordID - 1. ``vocab`` file: W lines, the name of word w on line w. Every defect is refused
    naming the file and the line: a line that is not three integers, an id out of range, a
    count < 1, an entry count other than NNZ (field ``docword_path``), a document without
    entries (field ``documents``), a vocabulary of another length than W or with an empty
    name (field ``vocabulary``). The file is read line by line in Python, which takes
    seconds for corpora the size of KOS or NIPS (under a million entries).
    """
    path = Path(docword_path)
    if not path.is_file():
        raise validation.InvalidParameter("docword_path", str(path), "no such file")

    def refuse(line: int, reason: str):
        return validation.InvalidParameter("docword_path", str(path), f"line {line}: {reason}")

    header: list[int] = []
    documents, words, counts = [], [], []
    with open(path, encoding="utf-8", errors="replace") as lines:
        number = 0
        for number, text in enumerate(lines, start=1):
            fields = text.split()
            if len(header) < 3:
                names = ("D (documents)", "W (words)", "NNZ (entries)")[len(header)]
                if len(fields) != 1 or not fields[0].isdigit() or int(fields[0]) < 1:
                    raise refuse(number, f"must hold {names}, a positive integer: "
                                         f"{text.strip()[:80]!r}")
                header.append(int(fields[0]))
                continue
            if not fields:
                continue
            if len(fields) != 3 or not all(f.isdigit() for f in fields):
                raise refuse(number, f"must be 'docID wordID count': {text.strip()[:80]!r}")
            document, word, count = map(int, fields)
            if not 1 <= document <= header[0]:
                raise refuse(number, f"docID {document} outside 1 … D = {header[0]}")
            if not 1 <= word <= header[1]:
                raise refuse(number, f"wordID {word} outside 1 … W = {header[1]}")
            if count < 1:
                raise refuse(number, f"count {count} must be >= 1")
            documents.append(document - 1)
            words.append(word - 1)
            counts.append(count)
    if len(header) < 3:
        raise refuse(number + 1, "the file ends before its three header lines D, W, NNZ")
    n_documents, size, n_entries = header
    if len(counts) != n_entries:
        raise refuse(3, f"NNZ = {n_entries} but the file holds {len(counts)} entries")
    documents_array = np.array(documents, dtype=np.int64)
    counts_array = np.array(counts, dtype=np.int64)
    lengths = np.bincount(documents_array, weights=counts_array,
                          minlength=n_documents).astype(np.int64)
    if (lengths == 0).any():
        raise validation.InvalidParameter(
            "documents", int(np.flatnonzero(lengths == 0)[0]) + 1,
            f"docID has no entries in {path}: every document needs a token")
    order = np.argsort(documents_array, kind="stable")  # by document, then file order
    tokens = np.repeat(np.array(words, dtype=np.int64)[order], counts_array[order])
    vocabulary = () if vocab_path is None else _read_vocabulary(Path(vocab_path), size, path)
    return Corpus(tokens, np.concatenate(([0], np.cumsum(lengths))), size, vocabulary)


def _read_vocabulary(path: Path, size: int, docword: Path) -> tuple[str, ...]:
    if not path.is_file():
        raise validation.InvalidParameter("vocabulary", str(path), "no such file")
    names = tuple(line.strip() for line in
                  path.read_text(encoding="utf-8", errors="replace").splitlines())
    if len(names) != size:
        raise validation.InvalidParameter(
            "vocabulary", len(names),
            f"{path} has {len(names)} lines but line 2 of {docword} declares W = {size} words")
    for number, name in enumerate(names, start=1):
        if not name:
            raise validation.InvalidParameter("vocabulary", str(path),
                                              f"line {number}: an empty word")
    return names


def from_counts(counts, vocabulary=()) -> Corpus:
    """A corpus from a document × word matrix of counts (a document's tokens in word order)."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or (counts < 0).any():
        raise validation.InvalidParameter("counts", counts.shape,
                                          "must be a document × word matrix of counts >= 0")
    rows, words = np.nonzero(counts)
    tokens = np.repeat(words, counts[rows, words])
    return Corpus(tokens, np.concatenate(([0], np.cumsum(counts.sum(axis=1)))),
                  counts.shape[1], tuple(vocabulary))


def reuters() -> Corpus:
    """The 395 Reuters stories over 4,258 words shipped with the ``lda`` package (Riddell et
    al.; ``pip install "sgmcmc-workbench[topics]"``), read from the installed package with no
    download."""
    try:
        from lda import datasets
    except ImportError:
        raise validation.InvalidParameter(
            "corpus", "reuters",
            "needs the optional extra: pip install \"sgmcmc-workbench[topics]\" (the lda "
            "package ships it)") from None
    return from_counts(datasets.load_reuters(), datasets.load_reuters_vocab())
