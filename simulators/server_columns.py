"""A column of a schedule's applied updates, server by server, in one compiled pass.

:meth:`simulators.schedule.Schedule.update_column` lists, for every server s, the values of its
applied rows in processing order, as column s of an ``(n_updates, n_servers)`` array. A boolean
mask per server reads the whole schedule once per server, and grouping the rows by a sort
gathers them in random order; this walks the rows once, keeps a count of applied rows per
server and writes each of the first ``n_updates`` into its place. Values are copied, never
computed, so the result is the masks' to the bit (tests/simulators/test_schedule.py).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _fill(values, server, applied, columns):  # pragma: no cover - compiled
    n_updates = columns.shape[0]
    seen = np.zeros(columns.shape[1], dtype=np.int64)
    for row in range(values.size):
        if applied[row]:
            s = server[row]
            if seen[s] < n_updates:
                columns[seen[s], s] = values[row]
            seen[s] += 1
    return columns


def server_columns(values: np.ndarray, server: np.ndarray, applied: np.ndarray,
                   n_updates: int, n_servers: int) -> np.ndarray:
    """``(n_updates, n_servers)``: column s holds the first ``n_updates`` ``values`` of the
    rows with ``applied`` and ``server == s``, in row order; every server must have that many
    (the caller checks)."""
    columns = np.empty((n_updates, n_servers), dtype=values.dtype)
    return _fill(values, server, applied, columns)
