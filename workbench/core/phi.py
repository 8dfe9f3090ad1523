"""Test functions φ whose sample averages φ̂_L = (1/L) Σ_{l=1}^{L} φ(θ_l) the engine accumulates.

A test function maps positions of shape ``(..., d)`` to values of shape ``(..., m)``; it must be
vectorised over the leading axes. ``theta`` and ``theta_squared`` are built in (the exact
oracle knows their moments); any other vectorised callable can be supplied through the API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TestFunction:
    __test__ = False  # not a pytest test class

    name: str
    function: Callable[[np.ndarray], np.ndarray]

    def __call__(self, position: np.ndarray) -> np.ndarray:
        return self.function(position)


def _identity(position: np.ndarray) -> np.ndarray:
    return position


THETA = TestFunction("theta", _identity)
THETA_SQUARED = TestFunction("theta_squared", np.square)
BUILTIN = {f.name: f for f in (THETA, THETA_SQUARED)}
