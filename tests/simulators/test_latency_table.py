"""LatencyTable hands out exactly the values of LatencyStreams (same keys, same seed), however
the draws are split into rows, single takes and refills."""

import numpy as np
import pytest

from simulators.latency import LatencyModel, LatencyStreams, LatencyTable, WorkerTiming

TIMINGS = {
    "constant-speeds": WorkerTiming(LatencyModel("constant", 2.0), speed_factors=(1.0, 0.5, 4.0)),
    "exponential-stragglers": WorkerTiming(LatencyModel("exponential", 1.0),
                                           straggler_probability=0.2, straggler_slowdown=3.0),
    "lognormal": WorkerTiming(LatencyModel("lognormal", 1.5, 0.7)),
    "gamma-speeds": WorkerTiming(LatencyModel("gamma", 1.0, 0.5), speed_factors=(1.0, 2.0, 3.0)),
}
KEYS = [(0, 0), (0, 1), (3, 2)]


def _takes(seed: int):
    """A fixed sequence of (workers, counts) requests: rows of distinct workers, counts from 0
    to beyond two refill blocks, so values are kept across refills and the table grows."""
    rng = np.random.default_rng(seed)
    for _ in range(60):
        workers = rng.permutation(3)[:rng.integers(1, 4)]
        yield workers, rng.integers(0, 40, workers.size) * rng.choice([1, 1, 1, 70], workers.size)


@pytest.mark.parametrize("name", sorted(TIMINGS))
def test_rows_and_single_takes_equal_the_streams_values(name):
    timing = TIMINGS[name]
    table = LatencyTable(timing, KEYS, seed=11, block=64)
    streams = LatencyStreams(timing, KEYS, seed=11)
    for i, (workers, counts) in enumerate(_takes(1)):
        if i % 3 == 0:  # single takes interleaved with rows
            for worker, count in zip(workers.tolist(), counts.tolist(), strict=True):
                np.testing.assert_array_equal(table.take(worker, count),
                                              streams.take(worker, count))
            continue
        rows = table.take_rows(workers, counts)
        assert rows.shape == (workers.size, counts.max())
        for row, worker, count in zip(rows, workers.tolist(), counts.tolist(), strict=True):
            assert np.array_equal(row[:count], streams.take(worker, count))


def test_negative_control_another_seed_or_another_key_gives_other_values():
    timing = TIMINGS["exponential-stragglers"]
    first = LatencyTable(timing, KEYS, seed=11).take(0, 50)
    assert np.array_equal(first, LatencyStreams(timing, KEYS, seed=11).take(0, 50))
    assert not np.array_equal(first, LatencyStreams(timing, KEYS, seed=12).take(0, 50))
    assert not np.array_equal(first, LatencyStreams(timing, KEYS[::-1], seed=11).take(0, 50))


def test_a_single_take_is_a_copy_that_a_refill_does_not_change():
    table = LatencyTable(TIMINGS["lognormal"], KEYS, seed=3, block=4)
    first = table.take(0, 3)
    kept = first.copy()
    table.take(0, 100)  # refills row 0 in place
    np.testing.assert_array_equal(first, kept)


@pytest.mark.parametrize("name", sorted(TIMINGS))
def test_stream_takes_equal_single_next_calls(name):
    # take() hands out the rest of the buffer, then whole blocks drawn as next()'s refills
    # draw them: the values (and the state left for later calls) are those of next().
    timing = TIMINGS[name]
    taken = LatencyStreams(timing, KEYS, seed=5, block=16)
    single = LatencyStreams(timing, KEYS, seed=5, block=16)
    for count in (0, 3, 13, 16, 0, 1, 40, 32, 5, 100):
        for worker in (0, 2):
            expected = np.array([single.next(worker) for _ in range(count)], dtype=float)
            got = taken.take(worker, count)
            assert got.dtype == np.float64 and got.tobytes() == expected.tobytes()
            assert taken.next(worker) == single.next(worker)  # mixed with next() afterwards
    # negative control: a stream that skipped one value hands out other values
    skipped = LatencyStreams(timing, KEYS, seed=5, block=16)
    skipped.next(0)
    fresh = LatencyStreams(timing, KEYS, seed=5, block=16)
    if name != "constant-speeds":
        assert not np.array_equal(skipped.take(0, 50), fresh.take(0, 50))
