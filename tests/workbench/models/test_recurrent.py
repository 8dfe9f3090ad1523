"""The character-level GRU and LSTM language models: the forward pass against a plain
step-by-step loop, back-propagation through time against central finite differences (full
data and minibatch), batched = looped, blocks, the engine, bad input refused."""

import numpy as np
import pytest
from scipy.special import expit, logsumexp

from simulators.seeding import generator
from simulators.static import constant_staleness
from simulators.validation import InvalidParameter
from workbench.data.markov_text import MarkovTextSource
from workbench.engine.replay import replay
from workbench.models.protocol import HeldOutModel
from workbench.models.recurrent import RecurrentLanguageModel
from workbench.samplers import SGLD

from .checks import assert_gradient_matches, finite_difference_gradient

ALPHABET = "abcd"
LENGTH = 5  # sequence_length
ARCHITECTURES = [("gru", 1), ("gru", 2), ("lstm", 1), ("lstm", 2)]
RTOL = 1e-6  # gradient checks, float64 central differences with step 1e-5


def _text(rng, n):
    return "".join(rng.choice(list(ALPHABET), n))


@pytest.fixture(scope="module", params=ARCHITECTURES, ids=lambda a: f"{a[0]}-{a[1]}")
def model(request):
    cell, n_layers = request.param
    rng = generator(31, "recurrent-text")
    # 23 characters: 4 windows of 5 and 2 characters left over; held out: 2 windows and a
    # tail of 2 predictions
    return RecurrentLanguageModel(_text(rng, 23), ALPHABET, 1.5, test_text=_text(rng, 13),
                                  cell=cell, n_layers=n_layers, hidden_size=3,
                                  sequence_length=LENGTH)


def _position(model, key, shape):
    rng = generator(key, "recurrent-theta")
    return model.initial_position(rng, shape) + 0.3 * rng.standard_normal(shape + (model.dim,))


def _plain_log_probabilities(model, position, text):
    """log p(c_t | c_0..c_{t-1}), t = 1..n-1, one character and one vector at a time, the
    state starting at zero (the equations of workbench.models.recurrent_cells written out)."""
    weights = {name: array[0] for name, array in model.layout.unpack(position[None]).items()}
    hidden = model.hidden_size
    states = [np.zeros(hidden) for _ in range(model.n_layers)]
    cells = [np.zeros(hidden) for _ in range(model.n_layers)]
    codes = [ALPHABET.index(c) for c in text]
    values = []
    for t in range(len(codes) - 1):
        x = np.eye(len(ALPHABET))[codes[t]]
        for layer in range(model.n_layers):
            a = x @ weights[f"layer{layer}.input.weight"] + weights[f"layer{layer}.input.bias"]
            u, h = weights[f"layer{layer}.recurrent"], states[layer]
            if model.cell == "gru":
                r = expit(a[:hidden] + h @ u[:, :hidden])
                z = expit(a[hidden:2 * hidden] + h @ u[:, hidden:2 * hidden])
                n = np.tanh(a[2 * hidden:] + (r * h) @ u[:, 2 * hidden:])
                h = z * h + (1 - z) * n
            else:
                pre = a + h @ u
                i, f, o = (expit(pre[k * hidden:(k + 1) * hidden]) for k in range(3))
                cells[layer] = f * cells[layer] + i * np.tanh(pre[3 * hidden:])
                h = o * np.tanh(cells[layer])
            states[layer] = x = h
        logits = x @ weights["output.weight"] + weights["output.bias"]
        values.append(logits[codes[t + 1]] - logsumexp(logits))
    return values


def _chunks(text, length):
    """Windows of length + 1 characters every ``length`` characters, the last one shorter."""
    return [text[s:s + length + 1] for s in range(0, len(text) - 1, length)]


def test_layout_and_protocol(model):
    width = (3 if model.cell == "gru" else 4) * 3
    layers = (4 + 1) * width + 3 * width + (model.n_layers - 1) * ((3 + 1) * width + 3 * width)
    assert model.dim == layers + (3 + 1) * 4
    assert model.n_data == 4 and isinstance(model, HeldOutModel)
    theta = model.initial_position(generator(1, "init"), (2, 3))
    assert theta.shape == (2, 3, model.dim)
    np.testing.assert_array_equal(model.layout.pack(model.layout.unpack(theta[0])), theta[0])


def test_forward_matches_a_plain_loop(model):
    """U over the 4 full training windows (the 2 characters left over unused) and the held-out
    nll over all 12 predicted characters, tail window included."""
    theta = _position(model, 2, (3,))
    (nll,) = model.test_functions()
    for position, potential, score in zip(theta, model.potential(theta), nll(theta)[:, 0],
                                          strict=True):
        windows = [w for w in _chunks(model.text, LENGTH) if len(w) == LENGTH + 1]
        assert len(windows) == 4
        log_likelihood = sum(sum(_plain_log_probabilities(model, position, w)) for w in windows)
        expected = np.sum(position**2) / (2 * 1.5**2) - log_likelihood
        np.testing.assert_allclose(potential, expected, rtol=1e-12)
        held_out = [v for w in _chunks(model.test_text, LENGTH)
                    for v in _plain_log_probabilities(model, position, w)]
        assert len(held_out) == len(model.test_text) - 1
        np.testing.assert_allclose(score, -np.mean(held_out), rtol=1e-12)


@pytest.mark.parametrize("test_text", ["ab", "abcab", "abcabc"])
def test_held_out_text_of_at_most_one_window(test_text):
    """A held-out text of 2..L+1 characters is one (tail or full) window, all of it scored."""
    model = RecurrentLanguageModel("abcdabcdabcd", ALPHABET, test_text=test_text, cell="gru",
                                   hidden_size=3, sequence_length=LENGTH)
    theta = _position(model, 10, (1,))
    expected = -np.mean(_plain_log_probabilities(model, theta[0], test_text))
    np.testing.assert_allclose(model.test_functions()[0](theta)[0, 0], expected, rtol=1e-12)


def test_full_gradient_matches_finite_differences(model):
    assert_gradient_matches(model, _position(model, 3, (2,)), rtol=RTOL)


def test_minibatch_gradient_matches_finite_differences(model):
    """The engine's estimator, replicate r with its own batch (repeats included), against
    central differences of Ũ_r(θ) = ‖θ‖²/(2σ₀²) + (N/n) Σ_{i∈B_r} (U_i(θ) - ‖θ‖²/(2σ₀²)),
    U_i the potential of a model of window i alone."""
    theta = _position(model, 4, (2, 3))  # (window of updates, replicate, d)
    rows = generator(5, "recurrent-batch").integers(0, model.n_data, (2, 3, 3))
    estimator = model.minibatch_gradient()
    got = estimator(theta, estimator.prepare(rows))
    window_models = [RecurrentLanguageModel(
        model.text[i * LENGTH:(i + 1) * LENGTH + 1], ALPHABET, model.prior_scale,
        cell=model.cell, n_layers=model.n_layers, hidden_size=3, sequence_length=LENGTH)
        for i in range(model.n_data)]
    flat, counts = theta.reshape(-1, model.dim), np.zeros((6, model.n_data))
    for r, batch in enumerate(rows.reshape(6, -1)):
        np.add.at(counts[r], batch, 1.0)

    def batch_potential(positions):
        prior = np.sum(positions**2, axis=-1) / (2 * model.prior_scale**2)
        windows = np.stack([m.potential(positions) - prior for m in window_models], axis=-1)
        return prior + (model.n_data / 3) * np.sum(counts * windows, axis=-1)

    expected = finite_difference_gradient(batch_potential, flat)
    np.testing.assert_allclose(got.reshape(6, -1), expected, rtol=RTOL,
                               atol=RTOL * np.abs(expected).max())


def test_batched_positions_equal_separate_calls(model):
    theta = _position(model, 6, (2, 3))
    rows = generator(7, "recurrent-batch").integers(0, model.n_data, (2, 3, 4))
    estimator = model.minibatch_gradient()
    (nll,) = model.test_functions()
    batched = [model.potential(theta), model.potential_gradient(theta), nll(theta),
               estimator(theta, estimator.prepare(rows))]
    assert [b.shape for b in batched] == [(2, 3), (2, 3, model.dim), (2, 3, 1),
                                          (2, 3, model.dim)]
    for i, j in np.ndindex(2, 3):
        alone = [model.potential(theta[i, j]), model.potential_gradient(theta[i, j]),
                 nll(theta[i, j]), estimator(theta[i, j], estimator.prepare(rows[i, j]))]
        for whole, single in zip(batched, alone, strict=True):
            np.testing.assert_allclose(whole[i, j], single, rtol=1e-12, atol=1e-12)


def test_blocks_do_not_change_the_result(model, monkeypatch):
    """A budget of two windows: every sum, full data, held out or minibatch, takes one
    position and at most two windows at a time."""
    import workbench.models.per_example as per_example

    theta = _position(model, 8, (5,))
    rows = generator(9, "recurrent-batch").integers(0, model.n_data, (5, 3))
    estimator = model.minibatch_gradient()
    (nll,) = model.test_functions()

    def values():
        return [model.potential(theta), model.potential_gradient(theta), nll(theta),
                estimator(theta, estimator.prepare(rows))]

    whole = values()
    calls = []
    evaluate = RecurrentLanguageModel._log_likelihood

    def recording(self, positions, windows, gradient):
        calls.append((len(positions), windows.shape[-2]))
        return evaluate(self, positions, windows, gradient)

    monkeypatch.setattr(RecurrentLanguageModel, "_log_likelihood", recording)
    monkeypatch.setattr(per_example, "BLOCK_BUDGET", 2 * model.example_cost)
    for blocked, value in zip(values(), whole, strict=True):
        np.testing.assert_allclose(blocked, value, rtol=1e-12, atol=1e-12)
    assert {positions for positions, _ in calls} == {1}
    assert max(windows for _, windows in calls) == 2


def test_engine_replays_the_model_on_markov_text():
    """Stale SGLD (staleness 3: windows of 4 positions) from the initial weights lowers the
    held-out nll on text from an order-1 source; it stays above the source's entropy rate."""
    source = MarkovTextSource.random(generator(10, "markov"), "abc", order=1,
                                     concentration=0.3)
    corpus = source.corpus(generator(11, "markov-text"), 3000)
    model = RecurrentLanguageModel(corpus.train_text, corpus.alphabet,
                                   test_text=corpus.test_text, cell="gru", hidden_size=6,
                                   sequence_length=10)
    start = model.initial_position(generator(12, "start"), (2, 1))
    run = replay(constant_staleness(60, 3), SGLD(2e-4), model.minibatch_gradient(),
                 n_updates=60, n_replicates=2, initial_position=start, seed=4, batch_size=10,
                 test_functions=model.test_functions(), checkpoints=[1, 60])
    first, last = run.averages["nll"][:, :, 0, 0]
    assert np.all(np.isfinite(last)) and np.all(last < first)
    assert np.all(last > source.entropy_rate())


@pytest.mark.parametrize(("kwargs", "field", "message"), [
    (dict(hidden_size=0), "hidden_size", ">= 1"),
    (dict(n_layers=3), "n_layers", r"\[1, 2\]"),
    (dict(n_layers=0), "n_layers", r"\[1, 2\]"),
    (dict(cell="rnn"), "cell", "'gru', 'lstm'"),
    (dict(sequence_length=0), "sequence_length", ">= 1"),
    (dict(sequence_length=9), "sequence_length", "longer than the text"),
    (dict(text="abxdabcd"), "text", r"'x' at position 2 \(line 1, column 3\)"),
    (dict(text=b"abcdabcd"), "text", "non-empty string"),
    (dict(test_text="ab\nc"), "test_text", r"'\\n' at position 2 \(line 1, column 3\)"),
    (dict(test_text="a"), "test_text", "at least two characters"),
    (dict(alphabet="abca"), "alphabet", "repeat"),
    (dict(alphabet="a"), "alphabet", "at least two characters"),
    (dict(prior_scale=-1.0), "prior_scale", "> 0"),
])
def test_bad_input_is_refused(kwargs, field, message):
    options = dict(text="abcdabcd", alphabet=ALPHABET, test_text="abc", sequence_length=3)
    options.update(kwargs)
    with pytest.raises(InvalidParameter, match=message) as error:
        RecurrentLanguageModel(**options)
    assert error.value.field == field


def test_held_out_functions_need_held_out_text():
    with pytest.raises(InvalidParameter, match="test_text"):
        RecurrentLanguageModel("abcdabcd", ALPHABET, sequence_length=3).test_functions()
