"""The random numbers of a real run: exactly those the engine's replay of its schedule draws.

:func:`workbench.engine.replay.replay` gives replicate block b the seed-tree streams
``(seed, "noise", b)`` and ``(seed, "minibatch", b)`` and always draws them in calls covering
``DRAW_STEPS`` updates: noise of shape ``(DRAW_STEPS, replicates, servers, d)`` and minibatch
indices of shape ``(DRAW_STEPS, replicates, servers, n)``, prepared call by call. A real run is
one chain on one server, i.e. replicate 0 of block 0 of a one-replicate replay, so applied
update l takes row ``l mod DRAW_STEPS`` of call ``l div DRAW_STEPS`` of each stream.

:class:`UpdateDraws` reproduces those calls on demand, forward only, in any process: the
server draws the injected noise of the update it applies, and a worker the minibatch of the
update slot it was given (:mod:`workbench.realtime.sequencer`). Each worker regenerates the
minibatch stream itself (a few integers per update), so no index travels between processes,
and whatever process holds a slot evaluates the minibatch the replay will evaluate for it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simulators import validation
from simulators.seeding import SeedLike, generator
from workbench.engine.replay_setup import DRAW_STEPS
from workbench.gradients.minibatch import check_batch, draw_indices

#: the replay's replicate block, replicate within it and server that a real run is
REAL_BLOCK = 0


class UpdateDraws:
    """Row ``update mod DRAW_STEPS`` of call ``update div DRAW_STEPS`` of one engine stream.

    ``draw(rng)`` makes one call's draws; ``prepare`` (optional) turns them into what is
    handed out, once per call. Skipped calls are drawn and discarded, as the replay does for
    them; asking for an earlier call (a worker given a slot put back by the server) restarts
    the stream from ``make_rng()``.
    """

    def __init__(self, make_rng: Callable[[], np.random.Generator],
                 draw: Callable[[np.random.Generator], np.ndarray],
                 prepare: Callable[[np.ndarray], np.ndarray] | None = None):
        self._make_rng = make_rng
        self._rng = make_rng()
        self._draw = draw
        self._prepare = prepare
        self._call = -1
        self._raw: np.ndarray | None = None
        self._rows: np.ndarray | None = None

    def __call__(self, update: int) -> np.ndarray:
        call = update // DRAW_STEPS
        if call < self._call:
            self._rng, self._call = self._make_rng(), -1
        while self._call < call:
            self._raw = self._draw(self._rng)
            self._rows = None
            self._call += 1
        if self._rows is None:
            self._rows = self._raw if self._prepare is None else self._prepare(self._raw)
            if not isinstance(self._rows, np.ndarray):
                raise validation.InvalidParameter(
                    "gradient", type(self._prepare).__name__,
                    "a real run needs an estimator whose prepared minibatches are arrays")
        return self._rows[update % DRAW_STEPS]


def noise_draws(seed: SeedLike, dim: int) -> UpdateDraws:
    """The replay's injected noise for replicate 0 of block 0, one server: ``(1, 1, d)`` rows."""
    return UpdateDraws(lambda: generator(seed, "noise", REAL_BLOCK),
                       lambda rng: rng.standard_normal((DRAW_STEPS, 1, 1, dim)))


def minibatch_draws(seed: SeedLike, gradient, batch_size: int,
                    replacement: bool) -> UpdateDraws:
    """The replay's prepared minibatches for replicate 0 of block 0, one server.

    Indices are drawn and prepared for a whole call at a time, as the engine does, so the
    prepared row is the one the replay computes.
    """
    check_batch(gradient.n_data, batch_size, replacement)
    if getattr(gradient, "shard_sizes", None) is not None:
        raise validation.InvalidParameter("gradient", type(gradient).__name__,
                                          "sharded estimators are not supported by real runs")
    n_data = gradient.n_data
    return UpdateDraws(
        lambda: generator(seed, "minibatch", REAL_BLOCK),
        lambda rng: draw_indices(rng, n_data, batch_size, (DRAW_STEPS, 1, 1), replacement),
        gradient.prepare)
