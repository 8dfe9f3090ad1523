"""The registry of bounds, iterated in a stable order (source by source, as listed in
docs/math.md: seed 001, the higher-order integrators, seed 002, seed 003, exact Gaussian results).
"""

from __future__ import annotations

from bounds.library import gaussian_exact, integrators, seed001, seed002, seed003
from bounds.record import Bound

BOUNDS: dict[str, Bound] = {}
for _module in (seed001, integrators, seed002, seed003, gaussian_exact):
    for _bound in _module.BOUNDS:
        if _bound.name in BOUNDS:
            raise ValueError(f"bound {_bound.name!r} registered twice")
        BOUNDS[_bound.name] = _bound


def names() -> list[str]:
    return list(BOUNDS)


def get(name: str) -> Bound:
    """The bound called ``name``; an unknown name lists the known ones."""
    if name not in BOUNDS:
        raise KeyError(f"unknown bound {name!r}; known: {', '.join(BOUNDS)}")
    return BOUNDS[name]
