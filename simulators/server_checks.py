"""A schedule's per-server consistency checks in one compiled pass over its rows.

:meth:`simulators.schedule.Schedule._validate_servers` checks, per server and in row order,
that each row's staleness equals (updates applied on the server before the row) - version_read
and that times never decrease. Grouping the rows by a stable sort on the server and differencing
reads the schedule several times; this walks the rows once with a count of applied updates and
the last time per server. It computes only verdicts (the first failing server of each kind),
the same as the sorted formulation (tests/simulators/test_schedule.py): integer counts are
exact, and for floats ``t < last`` is ``t - last < 0`` (IEEE subtraction of distinct numbers is
never zero; NaN compares False either way).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _first_failures(server, applied, staleness, version_read, time,
                    n_servers):  # pragma: no cover - compiled
    count = np.zeros(n_servers, dtype=np.int64)
    last = np.empty(n_servers)
    seen = np.zeros(n_servers, dtype=np.bool_)
    first_stale, first_late = n_servers, n_servers
    for row in range(server.size):
        s = server[row]
        if staleness[row] != count[s] - version_read[row] and s < first_stale:
            first_stale = s
        if seen[s] and time[row] < last[s] and s < first_late:
            first_late = s
        seen[s] = True
        last[s] = time[row]
        if applied[row]:
            count[s] += 1
    return first_stale, first_late


def first_failures(server: np.ndarray, applied: np.ndarray, staleness: np.ndarray,
                   version_read: np.ndarray, time: np.ndarray, n_servers: int) -> tuple[int, int]:
    """The smallest server with a row whose staleness is not (applied updates of the server
    before the row) - version_read, and the smallest whose time decreases from one of its rows
    to the next; ``n_servers`` where there is none."""
    stale, late = _first_failures(server, applied, staleness, version_read, time, n_servers)
    return int(stale), int(late)
