"""How long a worker takes to compute a gradient.

A latency model gives the distribution of one computation time; every model is parametrised by
its mean so that models are comparable at equal average speed. A worker's time is the draw
divided by its speed factor, and multiplied by ``straggler_slowdown`` with probability
``straggler_probability`` (the worker straggles on that computation).

Each worker draws from its own stream, keyed by the worker's identity in the seed tree
(:mod:`simulators.seeding`), so worker 3's latencies do not change when a run has more workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulators import validation
from simulators.seeding import SeedLike, generator

LATENCY_KINDS = ("constant", "exponential", "lognormal", "gamma")


@dataclass(frozen=True)
class LatencyModel:
    """Distribution of one gradient computation time.

    kind: ``constant`` (always ``mean``), ``exponential`` (rate 1/mean), ``lognormal`` (log-time
    normal with standard deviation ``shape`` and mean adjusted so the time has mean ``mean``),
    ``gamma`` (shape ``shape``, scale ``mean/shape``).
    """

    kind: str = "constant"
    mean: float = 1.0
    shape: float = 1.0

    def __post_init__(self) -> None:
        validation.one_of("latency", self.kind, LATENCY_KINDS)
        validation.positive("latency_mean", self.mean)
        validation.positive("latency_shape", self.shape)

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if self.kind == "constant":
            return np.full(size, float(self.mean))
        if self.kind == "exponential":
            return rng.exponential(self.mean, size)
        if self.kind == "lognormal":
            mu = math.log(self.mean) - 0.5 * self.shape**2
            return rng.lognormal(mu, self.shape, size)
        return rng.gamma(self.shape, self.mean / self.shape, size)


@dataclass(frozen=True)
class WorkerTiming:
    """Latency model plus per-worker speed factors and stragglers.

    speed_factors: one positive factor per worker (time = draw / factor); ``None`` for all 1.
    straggler_probability, straggler_slowdown: with this probability a computation takes
    ``straggler_slowdown`` times longer.
    """

    latency: LatencyModel = LatencyModel()
    speed_factors: tuple[float, ...] | None = None
    straggler_probability: float = 0.0
    straggler_slowdown: float = 1.0

    def __post_init__(self) -> None:
        if self.speed_factors is not None:
            object.__setattr__(self, "speed_factors", tuple(self.speed_factors))
            for i, factor in enumerate(self.speed_factors):
                validation.positive(f"speed_factors[{i}]", factor)
        validation.probability("straggler_probability", self.straggler_probability)
        validation.positive("straggler_slowdown", self.straggler_slowdown)
        if self.straggler_slowdown < 1.0:
            raise validation.InvalidParameter(
                "straggler_slowdown", self.straggler_slowdown, "must be >= 1 (a slowdown)"
            )

    def describe(self) -> dict:
        """The timing as flat schedule attributes (strings and numbers only)."""
        return {
            "latency": self.latency.kind,
            "latency_mean": self.latency.mean,
            "latency_shape": self.latency.shape,
            "speed_factors": ",".join(f"{f:g}" for f in self.speed_factors or ()),
            "straggler_probability": self.straggler_probability,
            "straggler_slowdown": self.straggler_slowdown,
        }

    def speed(self, worker: int) -> float:
        if self.speed_factors is None:
            return 1.0
        if worker >= len(self.speed_factors):
            raise validation.InvalidParameter(
                "speed_factors",
                self.speed_factors,
                f"needs one factor per worker; worker {worker} has none",
            )
        return float(self.speed_factors[worker])


class _WorkerDraws:
    """The seeded per-worker generators and speeds behind :class:`LatencyStreams` and
    :class:`LatencyTable`: ``draw(worker, size)`` gives the worker's next ``size`` times. The
    generators draw element by element, so the values a worker sees do not depend on how its
    draws are split into calls."""

    def __init__(self, timing: WorkerTiming, worker_keys: list[tuple[int, ...]], seed: SeedLike,
                 speed_index: list[int] | None):
        self.timing = timing
        speed_index = speed_index if speed_index is not None else list(range(len(worker_keys)))
        self._speed = [timing.speed(i) for i in speed_index]
        self._latency_rng = [generator(seed, "latency", *key) for key in worker_keys]
        self._straggler_rng = (
            [generator(seed, "straggler", *key) for key in worker_keys]
            if timing.straggler_probability > 0
            else None
        )

    def draw(self, worker: int, size: int) -> np.ndarray:
        timing = self.timing
        times = timing.latency.draw(self._latency_rng[worker], size) / self._speed[worker]
        if self._straggler_rng is not None:
            straggles = self._straggler_rng[worker].random(size)
            straggles = straggles < timing.straggler_probability
            times = np.where(straggles, times * timing.straggler_slowdown, times)
        return times


class LatencyStreams:
    """Per-worker latency draws on demand, from per-worker seeded streams.

    ``worker_keys[i]`` is the identity of worker ``i`` in the seed tree (for example
    ``(server, local_index)``); ``speed_index[i]`` selects its speed factor. Draws are made in
    blocks of ``block`` per worker; the stream of values a worker sees does not depend on the
    block size or on the other workers.
    """

    def __init__(
        self,
        timing: WorkerTiming,
        worker_keys: list[tuple[int, ...]],
        seed: SeedLike,
        speed_index: list[int] | None = None,
        block: int = 256,
    ):
        self.timing = timing
        self.block = validation.integer("block", block, minimum=1)
        self._draws = _WorkerDraws(timing, worker_keys, seed, speed_index)
        self._buffers: list[list[float]] = [[] for _ in worker_keys]
        self._positions = [0] * len(worker_keys)

    def _refill(self, worker: int) -> None:
        self._buffers[worker] = self._draws.draw(worker, self.block).tolist()
        self._positions[worker] = 0

    def next(self, worker: int) -> float:
        position = self._positions[worker]
        if position >= len(self._buffers[worker]):
            self._refill(worker)
            position = 0
        self._positions[worker] = position + 1
        return self._buffers[worker][position]

    def take(self, worker: int, count: int) -> np.ndarray:
        """The worker's next ``count`` times as an array: the same values ``count`` calls of
        :meth:`next` would return, so the two can be mixed freely (the rest of the buffer,
        then whole blocks drawn as :meth:`next`'s refills would draw them)."""
        position, buffer = self._positions[worker], self._buffers[worker]
        head = np.asarray(buffer[position:position + count], dtype=float)
        self._positions[worker] = position + head.size
        missing = count - head.size
        if missing == 0:
            return head
        blocks = [self._draws.draw(worker, self.block) for _ in range(-(-missing // self.block))]
        self._buffers[worker] = blocks[-1].tolist()
        self._positions[worker] = missing - (len(blocks) - 1) * self.block
        return np.concatenate([head] + blocks)[:count]


class LatencyTable:
    """The streams of :class:`LatencyStreams` (same keys, same seed: the same values), held in
    one array with a row per worker so that the next values of many workers are taken at once.

    ``take_rows(workers, counts)`` returns a ``(len(workers), max(counts))`` array whose row i
    starts with the next ``counts[i]`` times of ``workers[i]`` (distinct workers); the entries
    after them are unspecified finite numbers. Rows are refilled ``block`` values or more at a
    time, and ``refill_takes`` times the count asked for up to ``refill_cap`` values (a worker
    that always takes the same short count refills once every ``refill_takes`` takes).
    """

    def __init__(self, timing: WorkerTiming, worker_keys: list[tuple[int, ...]], seed: SeedLike,
                 speed_index: list[int] | None = None, block: int = 256, refill_takes: int = 32,
                 refill_cap: int = 16384):
        self.block = validation.integer("block", block, minimum=1)
        self.refill_takes = validation.integer("refill_takes", refill_takes, minimum=1)
        self.refill_cap = validation.integer("refill_cap", refill_cap, minimum=1)
        self._draws = _WorkerDraws(timing, worker_keys, seed, speed_index)
        self._values = np.zeros((len(worker_keys), self.block))
        self._positions = np.zeros(len(worker_keys), dtype=np.int64)
        self._ends = np.zeros(len(worker_keys), dtype=np.int64)

    def refill(self, worker: int, count: int) -> None:
        """Keep the worker's unused values and draw at least enough for ``count`` more."""
        position, end = self._positions[worker], self._ends[worker]
        kept = self._values[worker, position:end]
        wanted = max(count, min(self.refill_takes * count, self.refill_cap))
        fresh = self._draws.draw(worker, max(self.block, wanted - kept.size))
        size = kept.size + fresh.size
        if size > self._values.shape[1]:
            grown = np.zeros((self._values.shape[0], max(size, 2 * self._values.shape[1])))
            grown[:, :self._values.shape[1]] = self._values
            self._values = grown
        self._values[worker, :size] = np.concatenate((kept, fresh))
        self._positions[worker], self._ends[worker] = 0, size

    def buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(values, positions, ends)`` for a consumer that takes values in place (the compiled
        traveling-chain loop, :mod:`simulators.traveling_kernel`): worker w's next values are
        ``values[w, positions[w]:ends[w]]``; the consumer moves ``positions[w]`` past what it
        takes and, when fewer than ``count`` are left, calls :meth:`refill` first (as
        :meth:`take` does), so the draws are the same. A refill may replace ``values``: ask
        again after each."""
        return self._values, self._positions, self._ends

    def take_rows(self, workers: np.ndarray, counts: np.ndarray) -> np.ndarray:
        workers = np.asarray(workers, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        short = np.flatnonzero(self._positions[workers] + counts > self._ends[workers])
        for i in short.tolist():
            self.refill(int(workers[i]), int(counts[i]))
        positions = self._positions[workers]
        self._positions[workers] = positions + counts
        columns = np.minimum(positions[:, None] + np.arange(counts.max(initial=0)),
                             self._values.shape[1] - 1)
        return self._values[workers[:, None], columns]

    def take(self, worker: int, count: int) -> np.ndarray:
        """The worker's next ``count`` times (as :meth:`LatencyStreams.take`)."""
        if self._positions[worker] + count > self._ends[worker]:
            self.refill(worker, count)
        position = int(self._positions[worker])
        self._positions[worker] = position + count
        return self._values[worker, position:position + count].copy()
