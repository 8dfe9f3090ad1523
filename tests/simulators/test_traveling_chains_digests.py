"""The traveling-chain simulator reproduces, bit for bit, the schedules of the per-trajectory
simulator it replaced (digests in ``fixtures/traveling_chains_digests.json``, see
``traveling_cases.py``): every column's bytes, the row order and the attributes."""

import json
from pathlib import Path

import numpy as np
import pytest

from simulators.schedule import ROW_FIELDS, Schedule
from simulators.seeding import derive
from tests.simulators.traveling_cases import cases, digest

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "traveling_chains_digests.json")
                     .read_text())["cases"]
CASES = cases()


def test_the_fixture_covers_every_case():
    assert sorted(FIXTURE) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_is_bit_identical_to_the_recorded_one(name):
    system, n_updates, seed = CASES[name]
    assert digest(system.simulate(n_updates, seed)) == FIXTURE[name]


def test_negative_control_a_one_ulp_change_or_another_seed_changes_the_digest():
    system, n_updates, seed = CASES["imbalance-permutation"]
    schedule = system.simulate(n_updates, seed)
    columns = {name: np.array(getattr(schedule, name)) for name in ROW_FIELDS}
    columns["time"][-1] = np.nextafter(columns["time"][-1], np.inf)
    nudged = Schedule(**columns, attrs=schedule.attrs)
    assert digest(nudged)["columns"]["time"] != FIXTURE["imbalance-permutation"]["columns"]["time"]
    swapped = {name: np.array(getattr(schedule, name)) for name in ROW_FIELDS}
    last = slice(-2, None)
    for name in ROW_FIELDS:  # two rows of different chains at the same time, swapped
        swapped[name][last] = swapped[name][last][::-1]
    assert swapped["time"][-1] == swapped["time"][-2]
    assert digest(Schedule(**swapped, attrs=schedule.attrs)) != FIXTURE["imbalance-permutation"]
    other = system.simulate(n_updates, seed + 1)
    assert digest(other)["columns"]["worker"] != FIXTURE["imbalance-permutation"]["columns"][
        "worker"]
    attrs = dict(schedule.attrs, n_rounds=float(schedule.attrs["n_rounds"]))  # type, not value
    assert digest(Schedule(**{n: getattr(schedule, n) for n in ROW_FIELDS}, attrs=attrs))[
        "attrs"] != FIXTURE["imbalance-permutation"]["attrs"]


def _updates(schedule: Schedule, n_updates: int) -> dict[str, np.ndarray]:
    """Every chain's first ``n_updates`` updates: shard, its frequency, start and finish."""
    return {"shard": schedule.update_shards(n_updates),
            **{name: schedule.update_column(name, n_updates)
               for name in ("shard_frequency", "start_time", "finish_time")}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_longer_simulation_begins_with_the_shorter_ones_updates(name):
    """Every chain's first L updates are the same bits whatever number of updates the
    simulation runs to (a D-SGLD point's replay blocks simulate the run's L, its finish the
    step ladder's 4L: workbench/studies/sharded_point.py)."""
    system, n_updates, seed = CASES[name]
    shorter = _updates(system.simulate(n_updates, seed), n_updates)
    longer = _updates(system.simulate(4 * n_updates + 3, seed), n_updates)
    for column, values in shorter.items():
        assert values.tobytes() == longer[column].tobytes(), column


def test_negative_control_another_seeds_first_updates_differ():
    """The comparison above can tell: on random latencies and assignments another seed's
    first updates are other bits."""
    system, n_updates, seed = CASES["exponential-hops"]
    first = _updates(system.simulate(n_updates, seed), n_updates)
    other = _updates(system.simulate(4 * n_updates, derive(seed, "another")), n_updates)
    assert all(values.tobytes() != other[column].tobytes()
               for column, values in first.items())
