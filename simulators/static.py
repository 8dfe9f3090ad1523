"""Schedules that need no event queue: constant, i.i.d. and round-robin staleness.

These are the schedules of the stale-gradient theory itself (seed 001 §3.1: the gradient at
step l is evaluated at version l - τ_l). In the warm-up, where l < τ_l, the gradient reads the
initial version 0, so the recorded staleness there is l. Time runs in units of one update
unless the function says otherwise; a version v becomes available at time v.
"""

from __future__ import annotations

import numpy as np

from simulators import validation
from simulators.schedule import Schedule
from simulators.seeding import SeedLike, generator


def _assemble(per_server: list[dict[str, np.ndarray]], attrs: dict) -> Schedule:
    """Interleave per-server columns in time order (ties by server index)."""
    columns = {
        name: np.concatenate([server[name] for server in per_server]) for name in per_server[0]
    }
    order = np.lexsort((columns["server"], columns["time"]))
    columns = {name: values[order] for name, values in columns.items()}
    n = order.size
    return Schedule(
        shard=np.zeros(n, dtype=np.int32),
        kind=np.zeros(n, dtype=np.int8),
        applied=np.ones(n, dtype=bool),
        attrs=attrs,
        **columns,
    )


def _server_columns(server: int, version_read: np.ndarray, worker: np.ndarray,
                    start_time: np.ndarray, time: np.ndarray) -> dict[str, np.ndarray]:
    index = np.arange(version_read.size)
    return {
        "server": np.full(index.size, server),
        "worker": worker,
        "version_read": version_read,
        "staleness": index - version_read,
        "start_time": start_time,
        "finish_time": time,
        "time": time,
    }


def constant_staleness(n_updates: int, staleness: int, n_servers: int = 1) -> Schedule:
    """Every update reads version ``l - staleness`` (version 0 during the warm-up).

    Workers are labelled as the ``staleness + 1`` workers of a round robin would be.
    """
    n_updates = validation.integer("n_updates", n_updates, minimum=1)
    staleness = validation.integer("staleness", staleness, minimum=0)
    n_servers = validation.integer("n_servers", n_servers, minimum=1)
    index = np.arange(n_updates)
    version_read = np.maximum(index - staleness, 0)
    per_server = [
        _server_columns(s, version_read, index % (staleness + 1), version_read.astype(float),
                        (index + 1).astype(float))
        for s in range(n_servers)
    ]
    attrs = {"system": "constant_staleness", "staleness": staleness, "n_servers": n_servers}
    return _assemble(per_server, attrs)


def iid_staleness(n_updates: int, probabilities, seed: SeedLike, n_servers: int = 1) -> Schedule:
    """Staleness drawn i.i.d. with ``P(τ = k) = probabilities[k]``, per server stream.

    ``probabilities`` must be non-negative and sum to 1. Workers are not modelled (-1).
    """
    n_updates = validation.integer("n_updates", n_updates, minimum=1)
    n_servers = validation.integer("n_servers", n_servers, minimum=1)
    probabilities = staleness_distribution(probabilities)
    index = np.arange(n_updates)
    per_server = []
    for s in range(n_servers):
        rng = generator(seed, "staleness", s)
        draws = rng.choice(probabilities.size, size=n_updates, p=probabilities)
        version_read = np.maximum(index - draws, 0)
        per_server.append(
            _server_columns(s, version_read, np.full(n_updates, -1), version_read.astype(float),
                            (index + 1).astype(float))
        )
    attrs = {
        "system": "iid_staleness",
        "staleness_probabilities": ",".join(f"{p:.17g}" for p in probabilities),
        "n_servers": n_servers,
    }
    return _assemble(per_server, attrs)


def staleness_distribution(probabilities) -> np.ndarray:
    """Validate a staleness distribution over 0, 1, ..., len - 1."""
    return np.asarray(validation.frequencies("staleness_probabilities", probabilities,
                                             strictly_positive=False))


def round_robin(n_updates: int, n_workers: int, compute_time: float = 1.0,
                n_servers: int = 1) -> Schedule:
    """P workers with equal constant compute time, served in turn.

    This is exactly what the asynchronous single-server system produces with a constant
    latency and no server or network time: update l comes from worker ``l mod P``, reads
    version ``max(l - P + 1, 0)`` and is applied at time ``(l // P + 1) * compute_time``.
    """
    n_updates = validation.integer("n_updates", n_updates, minimum=1)
    n_workers = validation.integer("n_workers", n_workers, minimum=1)
    compute_time = validation.positive("compute_time", compute_time)
    n_servers = validation.integer("n_servers", n_servers, minimum=1)
    index = np.arange(n_updates)
    rounds = index // n_workers
    per_server = [
        _server_columns(
            s,
            np.maximum(index - n_workers + 1, 0),
            s * n_workers + index % n_workers,
            rounds * compute_time,
            (rounds + 1) * compute_time,
        )
        for s in range(n_servers)
    ]
    attrs = {"system": "round_robin", "n_workers": n_workers, "compute_time": compute_time,
             "n_servers": n_servers}
    return _assemble(per_server, attrs)
