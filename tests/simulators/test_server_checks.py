"""The schedule's per-server checks in one compiled pass (simulators.server_checks) against the
sorted numpy formulation they replaced (kept here): the same first failing servers."""

import numpy as np
import pytest

from simulators.schedule import Schedule, ScheduleError
from simulators.server_checks import first_failures


def _replaced(server, applied, staleness, version_read, time, n_servers):
    by_server = np.argsort(server, kind="stable") if n_servers > 1 else slice(None)
    sorted_server = server[by_server]
    counted = applied[by_server].astype(np.int64)
    per_server = np.bincount(server[applied], minlength=n_servers)
    rows = np.bincount(server, minlength=n_servers)
    version_at_event = (np.cumsum(counted) - counted
                        - np.repeat(np.cumsum(per_server) - per_server, rows))
    stale = staleness[by_server] != version_at_event - version_read[by_server]
    late = np.concatenate(([False], (np.diff(time[by_server]) < 0)
                           & (sorted_server[1:] == sorted_server[:-1])))
    return (int(sorted_server[stale].min(initial=n_servers)),
            int(sorted_server[late].min(initial=n_servers)))


def _consistent(rng, n_rows, n_servers):
    """Random rows that pass both checks: per-server counts and non-decreasing times."""
    server = rng.integers(0, n_servers, n_rows).astype(np.int32)
    applied = rng.random(n_rows) < 0.7
    time = np.cumsum(rng.exponential(1.0, n_rows) * (rng.random(n_rows) < 0.8))  # with ties
    staleness = np.zeros(n_rows, dtype=np.int64)
    version_read = np.zeros(n_rows, dtype=np.int64)
    for s in range(n_servers):
        rows = np.flatnonzero(server == s)
        before = np.cumsum(applied[rows]) - applied[rows]
        staleness[rows] = rng.integers(0, 3, rows.size).clip(max=before)
        version_read[rows] = before - staleness[rows]
    return server, applied, staleness, version_read, time


@pytest.mark.parametrize("n_servers", [1, 2, 7])
def test_first_failures_equal_the_sorted_formulation(n_servers):
    rng = np.random.default_rng(n_servers)
    for trial in range(40):
        columns = list(_consistent(rng, 300, n_servers))
        server, _, staleness, _, time = columns
        if trial % 4 in (1, 3):  # a wrong staleness somewhere
            staleness[rng.integers(300)] += 1
        if trial % 4 in (2, 3):  # a time that goes back, or NaN (not "late" in either)
            row = rng.integers(1, 300)
            time[row] = np.nan if trial % 8 == 2 else time[row] - 5.0
        expected = _replaced(*columns, n_servers)
        assert first_failures(*columns, n_servers) == expected
        if trial % 4 == 0:
            assert expected == (n_servers, n_servers)  # negative control: consistent rows pass
        if trial % 4 == 1:
            assert expected[0] < n_servers  # and a wrong staleness is seen


def test_schedule_names_the_first_failing_server():
    rng = np.random.default_rng(0)
    server, applied, staleness, version_read, time = _consistent(rng, 200, 3)
    columns = dict(server=server, worker=np.zeros(200, np.int32), shard=np.zeros(200, np.int32),
                   kind=np.zeros(200, np.int8), version_read=version_read, staleness=staleness,
                   applied=applied, start_time=time, finish_time=time, time=time)
    Schedule(**columns)  # consistent
    bad = staleness.copy()
    bad[np.flatnonzero(server == 2)[5]] += 1
    with pytest.raises(ScheduleError, match="server 2: staleness"):
        Schedule(**{**columns, "staleness": bad})
