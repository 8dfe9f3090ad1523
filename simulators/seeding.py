"""Seeds keyed by identity, never by execution order.

A run's randomness comes from one ``numpy.random.SeedSequence`` tree. A child is addressed by
a tuple of keys (strings such as ``"latency"`` or integers such as a worker index), so the
stream worker 3 sees is the same whether the system has 4 or 400 workers, and whether a sweep
runs in one process or many.
"""

from __future__ import annotations

import hashlib

import numpy as np

SeedLike = int | np.random.SeedSequence


def key_word(key: int | str) -> int:
    """Map a key to a non-negative integer: integers as they are, strings by a stable hash."""
    if isinstance(key, bool):
        raise TypeError("seed keys are integers or strings, not booleans")
    if isinstance(key, int):
        if key < 0:
            raise ValueError(f"integer seed keys must be >= 0, got {key}")
        return key
    if isinstance(key, str):
        digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "little")
    raise TypeError(f"seed keys are integers or strings, got {type(key).__name__}")


def seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """Accept an integer seed or an existing SeedSequence."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(seed)


def derive(seed: SeedLike, *keys: int | str) -> np.random.SeedSequence:
    """The child of ``seed`` addressed by ``keys`` (appended to the parent's spawn key)."""
    parent = seed_sequence(seed)
    return np.random.SeedSequence(
        entropy=parent.entropy,
        spawn_key=tuple(parent.spawn_key) + tuple(key_word(k) for k in keys),
        pool_size=parent.pool_size,
    )


def generator(seed: SeedLike, *keys: int | str) -> np.random.Generator:
    """A PCG64 generator on the child of ``seed`` addressed by ``keys``."""
    return np.random.Generator(np.random.PCG64(derive(seed, *keys)))
