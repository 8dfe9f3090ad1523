"""The k-th order Markov text source: its closed-form entropy rate against exact small cases
and against the empirical NLL of the true model on a long generated text, with a negative
control; seeding, the split, and bad input refused."""

import numpy as np
import pytest
from scipy.special import entr

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.data.markov_text import MAX_STATES, MarkovTextSource

Z = 4.0  # Monte Carlo tolerances are Z batch-means standard errors
N_BATCHES = 50


def _batch_means(values):
    """The mean of ``values`` and its batch-means standard error (N_BATCHES batches)."""
    means = values[:values.size // N_BATCHES * N_BATCHES].reshape(N_BATCHES, -1).mean(axis=1)
    return values.mean(), means.std(ddof=1) / np.sqrt(N_BATCHES)


def _chain_matrix(source):
    """The dense transition matrix of the chain of states, built entry by entry."""
    size = len(source.alphabet)
    chain = np.zeros((source.n_states, source.n_states))
    for state in range(source.n_states):
        for code in range(size):
            chain[state, (state * size + code) % source.n_states] += source.transitions[state,
                                                                                        code]
    return chain


def test_two_state_chain_has_the_textbook_entropy_rate():
    """Order 1 on two characters, flips a and b: π = (b, a)/(a + b) and
    H = (b h(a) + a h(b))/(a + b), h the binary entropy in nats (Cover & Thomas Example 4.2.1
    and Eq. 4.29)."""
    a, b = 0.1, 0.35
    source = MarkovTextSource("01", 1, [[1 - a, a], [b, 1 - b]])

    def h(p):
        return entr(p) + entr(1 - p)

    np.testing.assert_allclose(source.stationary, np.array([b, a]) / (a + b), rtol=1e-14)
    np.testing.assert_allclose(source.entropy_rate(), (b * h(a) + a * h(b)) / (a + b),
                               rtol=1e-14)


def test_a_chain_that_forgets_its_older_characters_is_of_lower_order():
    """An order-2 chain whose rows depend on the latest character only (the least significant
    digit of the state) has the entropy rate of the order-1 chain it repeats."""
    first = MarkovTextSource.random(generator(1, "markov"), "abc", order=1)
    second = MarkovTextSource("abc", 2, first.transitions[np.arange(9) % 3])
    assert second.entropy_rate() == pytest.approx(first.entropy_rate(), rel=1e-13)
    np.testing.assert_allclose(second.stationary.reshape(3, 3).sum(axis=0), first.stationary,
                               rtol=1e-13)


def test_the_stationary_distribution_is_stationary():
    source = MarkovTextSource.random(generator(2, "markov"), "abc", order=3, concentration=0.5)
    assert source.n_states == 27 and np.all(source.stationary > 0)
    assert source.stationary.sum() == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_allclose(source.stationary @ _chain_matrix(source), source.stationary,
                               rtol=1e-12, atol=1e-15)


def test_empirical_nll_of_the_true_model_matches_the_entropy_rate():
    """200,000 stationary characters of an order-2 source over 4 characters: the true model's
    mean -log p(c_t | state) is the closed-form H within Z batch-means standard errors. Negative
    control: a wrong transition matrix (another draw) scores more than Z standard errors
    above H — its excess is the relative entropy rate, positive."""
    source = MarkovTextSource.random(generator(3, "markov"), "abcd", order=2)
    text = source.generate(generator(4, "markov-text"), 200_000)
    rate = source.entropy_rate()
    nll, error = _batch_means(-source.log_probabilities(text))
    assert abs(nll - rate) < Z * error, (nll, rate, error)
    wrong = MarkovTextSource.random(generator(5, "markov"), "abcd", order=2)
    wrong_nll, wrong_error = _batch_means(-wrong.log_probabilities(text))
    assert wrong_nll - rate > Z * wrong_error, (wrong_nll, rate, wrong_error)


def test_generation_is_seeded_and_the_corpus_continues_the_text():
    source = MarkovTextSource.random(generator(6, "markov"), "xyz", order=2)
    text = source.generate(generator(7, "text"), 500)
    assert len(text) == 500 and set(text) <= set("xyz")
    assert source.generate(generator(7, "text"), 500) == text
    corpus = source.corpus(generator(7, "text"), 500, test_fraction=0.2)
    assert (corpus.train_text, corpus.test_text) == (text[:400], text[400:])
    assert corpus.alphabet == "xyz" and "order-2" in corpus.source
    assert source.generate(generator(7, "text"), 2) in {a + b for a in "xyz" for b in "xyz"}


def test_impossible_characters_have_zero_probability():
    source = MarkovTextSource("ab", 1, [[0.0, 1.0], [0.5, 0.5]])
    text = source.generate(generator(8, "text"), 2000)
    assert "aa" not in text
    assert source.log_probabilities("aab")[0] == -np.inf


@pytest.mark.parametrize(("arguments", "field", "message"), [
    (("abcd", 0, np.full((1, 4), 0.25)), "order", ">= 1"),
    (("ab", 1.5, np.full((2, 2), 0.5)), "order", "integer"),
    (("0123456789abcdef", 4, np.zeros((1, 16))), "order", f"exceed {MAX_STATES}"),
    (("abc", 1, np.full((9, 3), 1 / 3)), "transitions", r"\(3, 3\)"),
    (("ab", 1, [[0.5, 0.5], [1.0]]), "transitions", "array of numbers"),
    (("ab", 1, [[0.5, 0.6], [0.5, 0.5]]), "transitions", "summing to 1"),
    (("ab", 1, [[1.5, -0.5], [0.5, 0.5]]), "transitions", ">= 0"),
    (("ab", 1, [[1.0, 0.0], [0.0, 1.0]]), "transitions", "one closed class"),
    (("a", 1, [[1.0]]), "alphabet", "at least two"),
    (("aba", 1, np.full((3, 3), 1 / 3)), "alphabet", "repeat"),
])
def test_bad_sources_are_refused(arguments, field, message):
    with pytest.raises(InvalidParameter, match=message) as error:
        MarkovTextSource(*arguments)
    assert error.value.field == field


def test_bad_arguments_are_refused():
    rng = generator(9, "markov")
    source = MarkovTextSource.random(rng, "ab", order=2)
    calls = [(lambda: MarkovTextSource.random(rng, "ab", order=0), "order"),
             (lambda: MarkovTextSource.random(rng, "ab", concentration=0), "concentration"),
             (lambda: source.generate(rng, 1), "length"),
             (lambda: source.log_probabilities("ab"), "text"),
             (lambda: source.log_probabilities("abc!"), "text"),
             (lambda: source.corpus(rng, 100, test_fraction=1.0), "test_fraction")]
    for call, field in calls:
        with pytest.raises(InvalidParameter) as error:
            call()
        assert error.value.field == field
