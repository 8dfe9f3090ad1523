"""GRU and LSTM layers over whole windows, batched over replicates and examples, with
back-propagation through time.

A layer of H units with G gates (3 for the GRU, 4 for the LSTM) receives the input
projections a_t = x_t W + b of every step at once, ``(R, L, n, G·H)`` for R replicates, L steps
and n examples (time-major: step t is one contiguous ``(n, G·H)`` block per replicate; the
projections of all steps are one dense product,
:func:`workbench.models.network.dense_forward`), and its recurrent weights U ``(R, H, G·H)``.
Only the recurrent product h_{t-1} U runs step by step, one batched ``matmul`` over replicates
and examples. The state starts at zero: each example is its own window (truncated
back-propagation through time).

GRU (Cho et al. 2014, "Learning phrase representations using RNN encoder-decoder for
statistical machine translation", Eqs. 5-8; gates in θ in the order r, z, n):

    r_t = σ(a^r_t + h_{t-1} U_r),   z_t = σ(a^z_t + h_{t-1} U_z),
    ñ_t = tanh(a^n_t + (r_t ⊙ h_{t-1}) U_n),   h_t = z_t ⊙ h_{t-1} + (1 - z_t) ⊙ ñ_t.

LSTM (Hochreiter & Schmidhuber 1997, with the forget gate of Gers, Schmidhuber & Cummins 2000;
gates in the order i, f, o, g, the three sigmoid gates side by side):

    i_t, f_t, o_t = σ(a^{i,f,o}_t + h_{t-1} U_{i,f,o}),   g_t = tanh(a^g_t + h_{t-1} U_g),
    c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t,   h_t = o_t ⊙ tanh(c_t).

``forward(recurrent, projection) -> (states, cache)`` gives h_1..h_L ``(R, L, n, H)``;
``backward(recurrent, cache, d_states) -> (d_projection, d_recurrent)`` takes ∂/∂h_t from above
(the output layer or the next layer), runs the steps backwards and returns ∂/∂a_t
``(R, L, n, G·H)`` and ∂/∂U ``(R, H, G·H)``, summed over steps and examples in one product
Σ_t (what multiplies U at t)ᵀ · ∂/∂(pre-activation at t).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit


@dataclass(frozen=True)
class Cell:
    """A recurrent cell: its number of gates and its forward and backward passes."""

    n_gates: int
    forward: Callable
    backward: Callable


def _transposed(weight: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.swapaxes(weight, -1, -2))


def _summed_over_steps(inputs: np.ndarray, d_pre: np.ndarray) -> np.ndarray:
    """Σ over steps and examples of inputsᵀ · d_pre, for ``(R, L, n, ·)`` arrays."""
    replicates = len(inputs)
    return np.matmul(_transposed(inputs.reshape(replicates, -1, inputs.shape[-1])),
                     d_pre.reshape(replicates, -1, d_pre.shape[-1]))


def gru_forward(recurrent: np.ndarray, projection: np.ndarray):
    """GRU states h_1..h_L (module docstring) and what :func:`gru_backward` needs."""
    replicates, length, n, width = projection.shape
    hidden = width // 3
    gate_weight = np.ascontiguousarray(recurrent[..., :2 * hidden])
    candidate_weight = np.ascontiguousarray(recurrent[..., 2 * hidden:])
    states = np.zeros((replicates, length + 1, n, hidden))  # h_0 = 0, then h_1..h_L
    gates = np.empty((replicates, length, n, 2 * hidden))  # r_t, z_t
    candidates = np.empty((replicates, length, n, hidden))  # ñ_t
    reset = np.empty((replicates, length, n, hidden))  # r_t ⊙ h_{t-1}
    for t in range(length):
        previous = states[:, t]
        gates[:, t] = expit(projection[:, t, :, :2 * hidden] + previous @ gate_weight)
        reset[:, t] = gates[:, t, :, :hidden] * previous
        candidates[:, t] = np.tanh(projection[:, t, :, 2 * hidden:]
                                   + reset[:, t] @ candidate_weight)
        states[:, t + 1] = candidates[:, t] + gates[:, t, :, hidden:] * (previous
                                                                         - candidates[:, t])
    return states[:, 1:], (states, gates, candidates, reset)


def gru_backward(recurrent: np.ndarray, cache, d_states: np.ndarray):
    """∂/∂a_t and ∂/∂U of the GRU from ∂/∂h_t (module docstring)."""
    states, gates, candidates, reset = cache
    replicates, length, n, hidden = d_states.shape
    gate_weight = _transposed(recurrent[..., :2 * hidden])
    candidate_weight = _transposed(recurrent[..., 2 * hidden:])
    d_projection = np.empty((replicates, length, n, 3 * hidden))
    d_state = np.zeros((replicates, n, hidden))
    for t in range(length - 1, -1, -1):
        d_state = d_state + d_states[:, t]
        previous, candidate = states[:, t], candidates[:, t]
        reset_gate, update = gates[:, t, :, :hidden], gates[:, t, :, hidden:]
        d_candidate = d_state * (1.0 - update) * (1.0 - candidate**2)
        d_reset_state = d_candidate @ candidate_weight  # ∂/∂(r_t ⊙ h_{t-1})
        d_projection[:, t, :, :hidden] = (d_reset_state * previous * reset_gate
                                          * (1.0 - reset_gate))
        d_projection[:, t, :, hidden:2 * hidden] = (d_state * (previous - candidate) * update
                                                    * (1.0 - update))
        d_projection[:, t, :, 2 * hidden:] = d_candidate
        d_state = (d_state * update + d_reset_state * reset_gate
                   + d_projection[:, t, :, :2 * hidden] @ gate_weight)
    d_recurrent = np.concatenate(
        [_summed_over_steps(states[:, :-1], d_projection[..., :2 * hidden]),
         _summed_over_steps(reset, d_projection[..., 2 * hidden:])], axis=-1)
    return d_projection, d_recurrent


def lstm_forward(recurrent: np.ndarray, projection: np.ndarray):
    """LSTM states h_1..h_L (module docstring) and what :func:`lstm_backward` needs."""
    replicates, length, n, width = projection.shape
    hidden = width // 4
    states = np.zeros((replicates, length + 1, n, hidden))  # h_0 = 0, then h_1..h_L
    cells = np.zeros((replicates, length + 1, n, hidden))  # c_0 = 0, then c_1..c_L
    gates = np.empty((replicates, length, n, width))  # i_t, f_t, o_t, g_t
    for t in range(length):
        pre = projection[:, t] + states[:, t] @ recurrent
        gates[:, t, :, :3 * hidden] = expit(pre[..., :3 * hidden])
        gates[:, t, :, 3 * hidden:] = np.tanh(pre[..., 3 * hidden:])
        cells[:, t + 1] = (gates[:, t, :, hidden:2 * hidden] * cells[:, t]
                           + gates[:, t, :, :hidden] * gates[:, t, :, 3 * hidden:])
        states[:, t + 1] = gates[:, t, :, 2 * hidden:3 * hidden] * np.tanh(cells[:, t + 1])
    return states[:, 1:], (states, cells, gates)


def lstm_backward(recurrent: np.ndarray, cache, d_states: np.ndarray):
    """∂/∂a_t and ∂/∂U of the LSTM from ∂/∂h_t (module docstring)."""
    states, cells, gates = cache
    replicates, length, n, hidden = d_states.shape
    weight = _transposed(recurrent)
    d_projection = np.empty((replicates, length, n, 4 * hidden))
    d_state = np.zeros((replicates, n, hidden))
    d_cell = np.zeros((replicates, n, hidden))
    for t in range(length - 1, -1, -1):
        d_state = d_state + d_states[:, t]
        input_gate, forget, output, candidate = (gates[:, t, :, k * hidden:(k + 1) * hidden]
                                                 for k in range(4))
        squashed = np.tanh(cells[:, t + 1])
        d_cell = d_cell + d_state * output * (1.0 - squashed**2)
        d_projection[:, t, :, :hidden] = d_cell * candidate * input_gate * (1.0 - input_gate)
        d_projection[:, t, :, hidden:2 * hidden] = d_cell * cells[:, t] * forget * (1.0 - forget)
        d_projection[:, t, :, 2 * hidden:3 * hidden] = (d_state * squashed * output
                                                        * (1.0 - output))
        d_projection[:, t, :, 3 * hidden:] = d_cell * input_gate * (1.0 - candidate**2)
        d_cell = d_cell * forget
        d_state = d_projection[:, t] @ weight
    return d_projection, _summed_over_steps(states[:, :-1], d_projection)


CELLS = {"gru": Cell(3, gru_forward, gru_backward), "lstm": Cell(4, lstm_forward, lstm_backward)}
