"""Uniform integers with a bound per element, drawn exactly as numpy draws them, faster.

``Generator.integers(0, bounds)`` with an array of bounds walks numpy's broadcasting iterator
element by element (about 9 ms for 64 updates × 50 replicates × 10 draws, the sharded
minibatches of D-SGLD with unequal shards). Numpy draws each element with Lemire's
multiply-shift method on 32-bit words from the bit generator (``buffered_bounded_lemire_uint32``;
Lemire 2019, "Fast random integer generation in an interval", ACM TOMACS 29(1)): one word u,
m = u·N, and another word only while m mod 2³² < (2³² − N) mod N; the integer is m >> 32. A
bound of 1 draws nothing. Numba compiles the same function over the same bit generator
(``numba.np.random.random_methods``, as the engine kernel does, :mod:`workbench.engine.compiled`),
so a compiled loop over the elements gives numpy's integers and leaves the generator in
numpy's state. Bounds above 2³² − 1 (numpy then takes other paths) go to numpy itself. Tests
compare with ``Generator.integers`` bit for bit, including the state.

One bound for all (``Generator.integers(0, N, shape)``, the minibatches of an unsharded data
set or of equal shards): numpy's vectorised fill calls the same Lemire draw per element; the
compiled loop (:func:`uniform_integers`) is about a quarter faster (issue 15).

The compiled loops fill an array that numpy allocates. A draw call's indices are large (64
updates of 50 replicates of 20 chains with minibatches of 100: 51 MB), and numpy advises the
kernel to back large arrays with huge pages (``madvise(MADV_HUGEPAGE)``, where transparent huge
pages are in ``madvise`` mode, as on this machine), while an array allocated inside the
compiled function (numba's own allocator) is faulted in 4 KB page by page on first write.
For ``workbench run dsgld-coupling --set n_replicates=64 --processes 1`` that was 21.6 million
page faults and 33 s of 111 s in the kernel; allocated by numpy, 0.78 million and 12 s
(benchmarks/README.md, *Command-line start-up, oracle, engine, store, simulators*). The
numbers are the same either way.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.np.random.random_methods import buffered_bounded_lemire_uint32


@numba.njit(cache=True)
def _lemire(rng, bounds, out):
    bit_generator = rng.bit_generator
    for i in range(bounds.size):
        top = bounds[i] - 1
        out[i] = 0 if top == 0 else buffered_bounded_lemire_uint32(bit_generator,
                                                                   numba.uint32(top))


@numba.njit(cache=True)
def _lemire_one_bound(rng, top, out):
    bit_generator = rng.bit_generator
    top = numba.uint32(top)
    for i in range(out.size):
        out[i] = 0 if top == 0 else buffered_bounded_lemire_uint32(bit_generator, top)


def uniform_integers(rng: np.random.Generator, bound: int, shape: tuple[int, ...]) -> np.ndarray:
    """``rng.integers(0, bound, shape)`` (int64), bit for bit and with the same final generator
    state (module docstring)."""
    if not 1 <= bound <= 0xFFFFFFFF:
        return rng.integers(0, bound, shape)
    out = np.empty(shape, dtype=np.int64)  # numpy's allocation (module docstring)
    _lemire_one_bound(rng, bound - 1, out.reshape(-1))
    return out


def bounded_integers(rng: np.random.Generator, bounds: np.ndarray) -> np.ndarray:
    """``rng.integers(0, bounds)`` (int64, the shape of ``bounds``), bit for bit and with the
    same final generator state (module docstring)."""
    bounds = np.asarray(bounds, dtype=np.int64)
    if bounds.size == 0 or bounds.min() < 1 or bounds.max() > 0xFFFFFFFF:
        return rng.integers(0, bounds)
    out = np.empty(bounds.shape, dtype=np.int64)  # numpy's allocation (module docstring)
    _lemire(rng, np.ascontiguousarray(bounds).ravel(), out.reshape(-1))
    return out
