"""Text from a k-th order Markov source whose entropy rate is known in closed form.

Seed 003 (Appendix C, Table 1) reports the held-out negative log-likelihood per character of
LSTM and GRU language models on War and Peace. Nothing says how low that number could go on
real text; on text from a known source it has an exact floor. Here the character after the
last k characters is drawn from row s of ``transitions`` (m^k × m, m the alphabet size), the
state s = c_{t-k} m^{k-1} + ... + c_{t-1} being those characters' codes read as a base-m
number (the latest least significant), so that after c the state is (s m + c) mod m^k.

The states form a first-order chain with T[s, (s m + c) mod m^k] = P[s, c]. When it has one
closed class it has a unique stationary distribution π, πT = π, Σπ = 1, solved exactly (one
sparse LU solve of (T - I)ᵀ with one equation replaced by Σπ = 1), and the entropy rate is

    H = -Σ_s π_s Σ_c P[s, c] log P[s, c]   nats per character

(Cover & Thomas, *Elements of Information Theory*, 2nd ed., Theorem 4.2.4, on the chain of
states, whose step given the state carries exactly the next character's information). H is
the expected held-out negative log-likelihood per character of the source itself, and no
model's expected held-out NLL on text from the source is lower: the floor under
:class:`workbench.models.recurrent.RecurrentLanguageModel`'s ``nll``.

:meth:`MarkovTextSource.generate` starts the chain in π, so the text is stationary from its
first character and the average of -log p(c_t | s_t) over it estimates H without bias.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import spsolve
from scipy.special import entr

from simulators import validation
from workbench.data.text import TextCorpus, checked_alphabet, decode, encode, split_text

MAX_STATES = 1 << 12  # m^k states; the sparse LU of the de Bruijn-shaped chain fills in
# quickly (0.7 s at 4096 states, minutes at 32768)


def _n_states(alphabet: str, order) -> tuple[int, int]:
    """The order (an integer >= 1) and the m^order states, at most :data:`MAX_STATES`."""
    order = validation.integer("order", order, minimum=1)
    if len(alphabet) ** order > MAX_STATES:
        raise validation.InvalidParameter(
            "order", order, f"len(alphabet)^order = {len(alphabet)}^{order} states exceed "
                            f"{MAX_STATES}")
    return order, len(alphabet) ** order


@dataclass(frozen=True, eq=False)
class MarkovTextSource:
    """A k-th order Markov chain over ``alphabet`` (module docstring): ``transitions[s, c]`` is
    p(next character c | last ``order`` characters in state s)."""

    alphabet: str
    order: int
    transitions: Any

    def __post_init__(self) -> None:
        alphabet = checked_alphabet(self.alphabet)
        order, n_states = _n_states(alphabet, self.order)
        size = len(alphabet)
        try:
            transitions = np.array(self.transitions, dtype=float)
        except (TypeError, ValueError) as error:
            raise validation.InvalidParameter("transitions", type(self.transitions).__name__,
                                              f"must be an array of numbers ({error})") from error
        if transitions.shape != (n_states, size):
            raise validation.InvalidParameter(
                "transitions", transitions.shape,
                f"must be ({size}^{order}, {size}) = ({n_states}, {size}): one row of "
                "next-character probabilities per state")
        if (not np.all(np.isfinite(transitions)) or transitions.min() < 0
                or np.abs(transitions.sum(axis=1) - 1.0).max() > 1e-9):
            raise validation.InvalidParameter(
                "transitions", "rows", "must be probability vectors: finite, >= 0, summing "
                                       "to 1 within 1e-9")
        transitions.flags.writeable = False
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "transitions", transitions)
        object.__setattr__(self, "stationary", self._stationary_distribution())

    @classmethod
    def random(cls, rng: np.random.Generator, alphabet: str = "abcd", order: int = 2,
               concentration: float = 1.0) -> MarkovTextSource:
        """Rows drawn independently from a symmetric Dirichlet(``concentration``): almost
        surely all positive, so the chain has one closed class."""
        alphabet = checked_alphabet(alphabet)
        _, n_states = _n_states(alphabet, order)
        concentration = validation.positive("concentration", concentration)
        rows = rng.dirichlet(np.full(len(alphabet), concentration), size=n_states)
        return cls(alphabet, order, rows)

    @property
    def n_states(self) -> int:
        return int(self.transitions.shape[0])

    def _stationary_distribution(self) -> np.ndarray:
        """π of the chain of states (module docstring); a chain with more than one closed
        class (no unique π) is refused as ``transitions``."""
        n_states, size = self.transitions.shape
        sources = np.repeat(np.arange(n_states), size)
        targets = (sources * size + np.tile(np.arange(size), n_states)) % n_states
        chain = sparse.csr_matrix((self.transitions.ravel(), (sources, targets)),
                                  shape=(n_states, n_states))
        chain.eliminate_zeros()
        count, component = connected_components(chain, directed=True, connection="strong")
        edges = chain.tocoo()
        leaving = component[edges.row] != component[edges.col]
        closed = count - np.unique(component[edges.row[leaving]]).size
        if closed != 1:
            raise validation.InvalidParameter(
                "transitions", f"{closed} closed classes",
                "the chain of the last `order` characters must have exactly one closed class "
                "(a unique stationary distribution)")
        system = (chain.T - sparse.identity(n_states)).tolil()
        system[n_states - 1, :] = np.ones(n_states)
        right = np.zeros(n_states)
        right[-1] = 1.0
        stationary = np.clip(spsolve(system.tocsc(), right), 0.0, None)
        return stationary / stationary.sum()

    def entropy_rate(self) -> float:
        """H = Σ_s π_s H(transitions[s]) in nats per character (module docstring)."""
        return float(self.stationary @ entr(self.transitions).sum(axis=1))

    def generate(self, rng: np.random.Generator, length: int) -> str:
        """``length`` characters of the stationary chain: the first ``order`` of them the state
        drawn from π, each later one drawn given the last ``order``."""
        length = validation.integer("length", length, minimum=self.order)
        size = len(self.alphabet)
        state = int(rng.choice(self.n_states, p=self.stationary))
        codes = [state // size**j % size for j in range(self.order - 1, -1, -1)]
        bounds = np.cumsum(self.transitions[:, :-1], axis=1).tolist()  # c = #bounds <= u
        for draw in rng.random(length - self.order).tolist():
            code = bisect_right(bounds[state], draw)
            codes.append(code)
            state = (state * size + code) % self.n_states
        return decode(codes, self.alphabet)

    def log_probabilities(self, text: str) -> np.ndarray:
        """log p(c_t | c_{t-k}, ..., c_{t-1}) for t = k..n-1 of ``text`` under this source,
        ``(n - k,)`` (-inf where the source cannot emit the character)."""
        codes = encode("text", text, self.alphabet)
        if codes.size <= self.order:
            raise validation.InvalidParameter("text", text,
                                              f"must be longer than order = {self.order}")
        weights = len(self.alphabet) ** np.arange(self.order - 1, -1, -1)
        states = np.lib.stride_tricks.sliding_window_view(codes[:-1], self.order) @ weights
        with np.errstate(divide="ignore"):
            return np.log(self.transitions[states, codes[self.order:]])

    def corpus(self, rng: np.random.Generator, length: int,
               test_fraction: float = 0.1) -> TextCorpus:
        """:meth:`generate` ``length`` characters and hold out the last part
        (:func:`workbench.data.text.split_text`): the held-out text continues the chain."""
        train, held_out = split_text(self.generate(rng, length), test_fraction)
        return TextCorpus(self.alphabet, train, held_out,
                          source=f"order-{self.order} Markov source over {self.alphabet!r}, "
                                 f"{length} characters, test fraction {test_fraction}")
