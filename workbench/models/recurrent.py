"""A Bayesian character-level recurrent language model, GRU or LSTM, after seed 003's text
experiment.

Seed 003 (Appendix C, Table 1) samples one- and two-layer LSTM and GRU character language
models on War and Peace with downpour pSGLD and elastic SGHMC, a Gaussian prior of variance 1
on the weights, and reports the held-out negative log-likelihood per character. Here, over an
alphabet of K characters,

    one-hot x_t → ``n_layers`` recurrent layers of H units (``cell`` "gru" or "lstm",
    :mod:`workbench.models.recurrent_cells`) → dense (H → K) → softmax p(x_{t+1} | x_{≤t}, θ).

θ holds, layer after layer, the input weights ``(fan_in, G·H)`` (fan_in = K, then H; G = 3
gates for the GRU, 4 for the LSTM) and bias ``(G·H,)`` and the recurrent weights ``(H, G·H)``
(no second bias: the input bias covers it), then the output weights ``(H, K)`` and bias
``(K,)``, laid end to end by a :class:`~workbench.models.network.ParameterLayout`. Prior
N(0, σ₀² I) on all of θ.

Examples (truncated back-propagation through time): the training text c_0..c_{T-1} is cut into
N = ⌊(T-1)/L⌋ windows, L = ``sequence_length``; window i reads c_{iL}..c_{iL+L-1} and predicts
c_{iL+1}..c_{iL+L}, its state starting at zero, so the windows are independent examples and

    log p(window_i | θ) = Σ_{t=1}^{L} log p(c_{iL+t} | c_{iL}..c_{iL+t-1}, θ),
    U(θ) = ‖θ‖²/(2σ₀²) - Σ_i log p(window_i | θ)      (docs/math.md §1, without normalisers).

The last (T-1) mod L characters are not trained on. A minibatch is a batch of windows, and the
engine's estimator is Chen's (:class:`~workbench.models.per_example.PerExampleGradient`).

Held-out ``nll``: the held-out text c_0..c_{M-1} is cut the same way, a last shorter window
taking the characters left, so that every character after the first is predicted once:

    nll(θ) = -(1/(M-1)) Σ_{t=1}^{M-1} log p(c_t | its window's earlier characters, θ),

in nats per character (seed 003's Table 1 quantity). On text from
:class:`workbench.data.markov_text.MarkovTextSource` its expectation is at least the source's
entropy rate. The samples' averaged prediction scores the same characters with p̄, the mean of
the draws' p(c_t | ..., θ) (``averaged_nll``, :meth:`averaged_prediction_scores`).

Vectorised like :mod:`workbench.models.network`: θ ``(R, d)`` unpacks to per-replicate weights;
windows are shared by every replicate ``(n, L+1)`` (full data, held-out text) or a
per-replicate minibatch ``(R, n, L+1)``. The one-hot inputs' and every layer's input
projections for all steps are one dense product
(:func:`~workbench.models.network.dense_forward`), the output layer another; only the
recurrence steps in time. Sums run over blocks of positions and of windows sized by
``example_cost``, so their intermediates stay near
:data:`~workbench.models.per_example.BLOCK_BUDGET` elements however long the text or large the
minibatch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax

from simulators import validation
from workbench.core.phi import TestFunction
from workbench.data.text import encode
from workbench.models import per_example
from workbench.models.classification import averaged_prediction_scores
from workbench.models.network import ParameterLayout, dense_backward, dense_forward
from workbench.models.per_example import PerExampleGradient, over_positions
from workbench.models.recurrent_cells import CELLS


def _windows(codes: np.ndarray, length: int) -> np.ndarray:
    """The ⌊(n-1)/length⌋ windows ``(count, length + 1)`` of ``codes``, window i starting at
    i·length (consecutive windows share one character: a target, then an input)."""
    count = (codes.size - 1) // length
    return codes[np.arange(count)[:, None] * length + np.arange(length + 1)]


@dataclass(frozen=True, eq=False)
class RecurrentLanguageModel:
    """A character-level GRU or LSTM language model with prior N(0, σ₀² I) on θ (module
    docstring) on ``text`` over ``alphabet``, scored on ``test_text``."""

    text: str
    alphabet: str
    prior_scale: float = 1.0
    test_text: str | None = None
    cell: str = "lstm"
    n_layers: int = 1
    hidden_size: int = 32
    sequence_length: int = 50

    def __post_init__(self) -> None:
        validation.positive("prior_scale", self.prior_scale)
        object.__setattr__(self, "cell", validation.one_of("cell", self.cell, tuple(CELLS)))
        object.__setattr__(self, "n_layers",
                           validation.integer("n_layers", self.n_layers, minimum=1, maximum=2))
        object.__setattr__(self, "hidden_size",
                           validation.integer("hidden_size", self.hidden_size, minimum=1))
        length = validation.integer("sequence_length", self.sequence_length, minimum=1)
        object.__setattr__(self, "sequence_length", length)
        codes = encode("text", self.text, self.alphabet)
        if length > codes.size - 1:
            raise validation.InvalidParameter(
                "sequence_length", length,
                f"is longer than the text: a window of L inputs and their next characters "
                f"needs L + 1 <= {codes.size} characters")
        object.__setattr__(self, "windows", _windows(codes, length))
        if self.test_text is not None:
            test = encode("test_text", self.test_text, self.alphabet)
            if test.size < 2:
                raise validation.InvalidParameter("test_text", self.test_text,
                                                  "must hold at least two characters")
            full = _windows(test, length)
            tail = test[len(full) * length:]
            object.__setattr__(self, "test_windows",
                               tuple(w for w in (full, tail[None]) if w.size and w.shape[1] > 1))
        object.__setattr__(self, "layout", self._layout())

    # ------------------------------------------------------------------ architecture
    def _layout(self) -> ParameterLayout:
        width, hidden = CELLS[self.cell].n_gates * self.hidden_size, self.hidden_size
        shapes = []
        for layer in range(self.n_layers):
            fan_in = len(self.alphabet) if layer == 0 else hidden
            shapes += [(f"layer{layer}.input.weight", (fan_in, width)),
                       (f"layer{layer}.input.bias", (width,)),
                       (f"layer{layer}.recurrent", (hidden, width))]
        return ParameterLayout(shapes + [("output.weight", (hidden, len(self.alphabet))),
                                         ("output.bias", (len(self.alphabet),))])

    @property
    def example_cost(self) -> int:
        """Elements kept per window for back-propagation through time: per step the one-hot
        input, the logits, log-probabilities and their gradient (4K) and, per layer, the
        input projection, gates and their gradient (3G·H) and states and their gradients
        (3H)."""
        gates = CELLS[self.cell].n_gates
        return self.sequence_length * (4 * len(self.alphabet)
                                       + self.n_layers * (3 * gates + 3) * self.hidden_size)

    def _forward(self, weights, windows: np.ndarray):
        """Logits ``(R, L·n, K)`` of every step of ``windows`` (shared ``(n, L+1)`` or
        per-replicate ``(R, n, L+1)``), time-major; the targets in the same order (``(L·n,)``
        or ``(R, L·n)``); and what :meth:`_backward` needs."""
        inputs, targets = (np.swapaxes(part, -1, -2).reshape(windows.shape[:-2] + (-1,))
                           for part in (windows[..., :-1], windows[..., 1:]))
        steps = (windows.shape[-1] - 1, windows.shape[-2])  # (L, n)
        activation = np.eye(len(self.alphabet))[inputs]
        layers = []
        for layer in range(self.n_layers):
            projection, dense_inputs = dense_forward(weights, [f"layer{layer}.input"],
                                                     activation)
            states, cache = CELLS[self.cell].forward(
                weights[f"layer{layer}.recurrent"],
                projection.reshape((len(projection),) + steps + (-1,)))
            layers.append((dense_inputs, cache, states.shape))
            activation = states.reshape(len(states), -1, self.hidden_size)
        logits, output_inputs = dense_forward(weights, ["output"], activation)
        return logits, targets, (layers, output_inputs)

    def _backward(self, weights, cache, delta: np.ndarray) -> dict[str, np.ndarray]:
        """Back-propagation through time of ``delta`` = ∂/∂logits, summed over windows."""
        layers, output_inputs = cache
        gradients: dict[str, np.ndarray] = {}
        d_states = dense_backward(weights, ["output"], output_inputs, delta, gradients,
                                  input_gradient=True)
        for layer in range(self.n_layers - 1, -1, -1):
            dense_inputs, recurrence, shape = layers[layer]
            d_projection, gradients[f"layer{layer}.recurrent"] = CELLS[self.cell].backward(
                weights[f"layer{layer}.recurrent"], recurrence, d_states.reshape(shape))
            d_states = dense_backward(
                weights, [f"layer{layer}.input"], dense_inputs,
                d_projection.reshape(shape[0], -1, d_projection.shape[-1]), gradients,
                input_gradient=layer > 0)
        return gradients

    # ------------------------------------------------------------------ sizes
    @property
    def n_data(self) -> int:
        return int(self.windows.shape[0])

    @property
    def dim(self) -> int:
        return self.layout.dim

    def initial_position(self, rng: np.random.Generator, shape: tuple[int, ...] = ()):
        """Weights N(0, 1/fan_in) (LeCun's scaling: gates start away from saturation), zero
        biases."""
        draws, size = {}, int(np.prod(shape))
        for name, layer_shape in self.layout.shapes.items():
            draws[name] = (np.zeros((size,) + layer_shape) if name.endswith(".bias")
                           else rng.standard_normal((size,) + layer_shape)
                           / np.sqrt(layer_shape[0]))
        return self.layout.pack(draws).reshape(tuple(shape) + (self.dim,))

    # ------------------------------------------------------------------ likelihood
    def _log_likelihood(self, theta: np.ndarray, windows: np.ndarray, gradient: bool):
        """Σ log p(window | θ) over ``windows``, ``(R,)``, and its gradient ``(R, d)``."""
        weights = self.layout.unpack(theta)
        logits, targets, cache = self._forward(weights, windows)
        log_probabilities = log_softmax(logits, axis=-1)
        targets = np.broadcast_to(targets, logits.shape[:-1])[..., None]
        total = np.take_along_axis(log_probabilities, targets, axis=-1).sum(axis=(1, 2))
        if not gradient:
            return total, None
        delta = -np.exp(log_probabilities)
        np.put_along_axis(delta, targets, np.take_along_axis(delta, targets, axis=-1) + 1.0,
                          axis=-1)
        return total, self.layout.pack(self._backward(weights, cache, delta))

    def _position_cost(self, windows: np.ndarray) -> int:
        """Elements per position of a :meth:`_sum` over shared ``windows``: one position's
        windows go in blocks within :data:`~workbench.models.per_example.BLOCK_BUDGET`."""
        per_block = max(1, per_example.BLOCK_BUDGET // self.example_cost)
        return min(len(windows), per_block) * self.example_cost

    def _sum(self, theta: np.ndarray, windows: np.ndarray, gradient: bool):
        """:meth:`_log_likelihood` over ``windows`` (shared ``(n, L+1)`` or per-replicate
        ``(R, n, L+1)``) in blocks of windows, so that the intermediates of ``theta``'s
        positions stay within :data:`~workbench.models.per_example.BLOCK_BUDGET` elements
        (a minibatch of long windows included, when one position alone exceeds it)."""
        block = max(1, per_example.BLOCK_BUDGET // (len(theta) * self.example_cost))
        total, scores = 0.0, (0.0 if gradient else None)
        for start in range(0, windows.shape[-2], block):
            part, part_scores = self._log_likelihood(theta, windows[..., start:start + block, :],
                                                     gradient)
            total = total + part
            if gradient:
                scores = scores + part_scores
        return total, scores

    def potential(self, theta: np.ndarray) -> np.ndarray:
        """U(θ) without the prior's normaliser, shape ``(...,)``."""
        def block(rows):
            total, _ = self._sum(rows, self.windows, gradient=False)
            return np.sum(rows**2, axis=1) / (2 * self.prior_scale**2) - total
        return over_positions(block, theta, self.dim, self._position_cost(self.windows))

    def potential_gradient(self, theta: np.ndarray) -> np.ndarray:
        """The full-data ∇U(θ), shape ``(..., d)``."""
        def block(rows):
            _, scores = self._sum(rows, self.windows, gradient=True)
            return rows / self.prior_scale**2 - scores
        return over_positions(block, theta, self.dim, self._position_cost(self.windows))

    def log_likelihood_gradient_sum(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Σ_{i∈rows[r]} ∇log p(window_i | θ_r), ``(R, d)``, by batched back-propagation
        through time."""
        _, scores = self._sum(theta, self.windows[rows], gradient=True)
        return scores

    def minibatch_gradient(self) -> PerExampleGradient:
        return PerExampleGradient(self)

    # ------------------------------------------------------------------ held-out text
    def test_functions(self) -> tuple[TestFunction]:
        """Held-out ``nll`` per character (module docstring), ``(..., d) -> (..., 1)``."""
        if self.test_text is None:
            raise validation.InvalidParameter("test_text", None,
                                              "the model was built without held-out text")
        predicted = sum(w.shape[0] * (w.shape[1] - 1) for w in self.test_windows)
        cost = max(self._position_cost(w) for w in self.test_windows)

        def nll(theta: np.ndarray) -> np.ndarray:
            def block(rows):
                total = sum(self._sum(rows, windows, gradient=False)[0]
                            for windows in self.test_windows)
                return -(total / predicted)[:, None]
            return over_positions(block, theta, self.dim, cost)

        return (TestFunction("nll", nll),)

    def held_out_predictions(self, theta: np.ndarray) -> np.ndarray:
        """p(c_t = k | its window's earlier characters, θ) for every predicted held-out
        character, in :meth:`held_out_targets`' order: ``(..., d) -> (..., M-1, K)``."""
        def block(rows):
            weights = self.layout.unpack(rows)
            return np.concatenate([np.exp(log_softmax(self._forward(weights, windows)[0],
                                                      axis=-1))
                                   for windows in self.test_windows], axis=1)

        cost = sum(len(w) for w in self.test_windows) * self.example_cost
        return over_positions(block, theta, self.dim, cost)

    def held_out_targets(self) -> np.ndarray:
        """The predicted held-out characters' codes ``(M-1,)``, time-major per window array
        as :meth:`_forward` orders its logits."""
        return np.concatenate([np.swapaxes(windows[:, 1:], 0, 1).reshape(-1)
                               for windows in self.test_windows])

    def averaged_prediction_scores(self, mean_probabilities: np.ndarray) -> dict:
        """``averaged_nll``: the held-out NLL per character of the samples' averaged
        prediction p̄ (seed 003 Appendix C, Table 1; :func:`~workbench.models.classification.
        averaged_prediction_scores`' log-loss), ``(..., M-1, K) -> (...)``."""
        scores = averaged_prediction_scores(mean_probabilities, self.held_out_targets())
        return {"averaged_nll": scores["averaged_log_loss"]}
