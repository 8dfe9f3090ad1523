"""The schedule: the seam between the simulated system and the numerics.

One row per event the server processed, in processing order. A row says which server (chain)
it belongs to, which worker computed it, on which shard, which parameter version it read, its
staleness (the server's version when it was processed minus the version read), whether it was
applied or dropped (stale beyond the bound, seed 001 Algorithm 1), when the worker started and
finished computing, the simulated time at which the server processed it, and the frequency
with which the system's scheduler selects that shard (q_s of seed 004 Eq. 2, f_s of seed 002
Eq. 4; 1 where every update uses the one shard).

Event kinds (:data:`EVENT_KINDS`):

- ``gradient``: one stochastic gradient, applied to its server's (chain's) parameter or
  dropped;
- ``hop``: a chain travels to another worker or client (seed 004 §3.2.1, seed 002
  Algorithm 1). Its ``worker`` and ``shard`` are the destination, ``start_time`` =
  ``finish_time`` the departure and ``time`` the arrival; it is never applied and reads the
  current version (staleness 0). A chain that then waits for a busy worker shows as the gap
  between the hop's ``time`` and the next gradient's ``start_time``;
- ``push`` (downpour, seed 003 Algorithm 1 lines 15-19): a worker's accumulated moves over
  ``period`` local steps, started from the master version it read, reach the master and are
  added to it. Applied (or dropped beyond the staleness bound) like a gradient: the master's
  versions count pushes. ``start_time`` is when the worker began its first local step,
  ``finish_time`` when it finished the last, ``time`` when the master processed the push;
- ``pull`` (downpour): the master sends its current version back to the worker that pushed.
  Never applied; reads the current version (staleness 0); ``start_time`` = ``finish_time`` =
  ``time`` = when the master sent it;
- ``coupling`` (elastic averaging, seed 003 Appendix B): worker chain ``server`` is pulled
  towards the centre variable and the centre towards it. Never applied; ``version_read`` is
  the number of local steps the chain has taken (staleness 0); ``start_time`` = ``finish_time``
  when the chain sent its state, ``time`` when the centre processed it.

Schedules of the downpour and elastic protocols name their protocol in ``attrs["protocol"]``
(with its ``period`` and, for elastic, ``coupling_strength``); the engine replays them with
:mod:`workbench.engine.protocols`.

A schedule depends only on the system and its seed, never on parameter values: the engine
replays it over any number of replicates. It round-trips through an xarray Dataset (and so
through netCDF), which is also how a schedule recorded from a real run is brought in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from simulators import validation

# xarray is imported by the methods that build DataArrays and Datasets, and numba (the compiled
# column gather) by update_column: building a schedule needs only numpy, and the command line
# loads this module without them (issue 15)
if TYPE_CHECKING:
    import xarray as xr

EVENT_KINDS = ("gradient", "hop", "push", "pull", "coupling")
GRADIENT, HOP, PUSH, PULL, COUPLING = 0, 1, 2, 3, 4
UPDATE_KINDS = (GRADIENT, PUSH)  # the kinds that change their server's version when applied

_COLUMNS = {
    "server": np.int32,
    "worker": np.int32,
    "shard": np.int32,
    "kind": np.int8,
    "version_read": np.int64,
    "staleness": np.int64,
    "applied": np.bool_,
    "start_time": np.float64,
    "finish_time": np.float64,
    "time": np.float64,
    "shard_frequency": np.float64,
}


ROW_FIELDS = tuple(_COLUMNS)


class ScheduleError(ValueError):
    """A schedule whose columns contradict each other."""


@dataclass(frozen=True, eq=False)
class Schedule:
    """Columns of equal length, one entry per processed event (see the module docstring).

    ``worker`` is -1 where the schedule does not model workers (for example i.i.d. staleness).
    ``attrs`` describes the system that produced the schedule (strings and numbers only).
    """

    server: np.ndarray
    worker: np.ndarray
    shard: np.ndarray
    kind: np.ndarray
    version_read: np.ndarray
    staleness: np.ndarray
    applied: np.ndarray
    start_time: np.ndarray
    finish_time: np.ndarray
    time: np.ndarray
    shard_frequency: np.ndarray | None = None
    attrs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.shard_frequency is None:  # one shard, always selected
            object.__setattr__(self, "shard_frequency", np.ones(np.size(self.server)))
        lengths = set()
        for name, dtype in _COLUMNS.items():
            column = np.ascontiguousarray(getattr(self, name), dtype=dtype)
            if column.ndim != 1:
                raise ScheduleError(f"column {name} must be one-dimensional")
            column.setflags(write=False)
            object.__setattr__(self, name, column)
            lengths.add(column.size)
        if len(lengths) > 1:
            raise ScheduleError(f"columns have different lengths: {sorted(lengths)}")
        object.__setattr__(self, "attrs", dict(self.attrs))
        self._validate()

    # ----------------------------------------------------------------- validation
    def _validate(self) -> None:
        if self.n_events == 0:
            return
        if self.server.min() < 0:
            raise ScheduleError("server indices must be >= 0")
        if self.worker.min() < -1:
            raise ScheduleError("worker indices must be >= 0 (or -1 when not modelled)")
        if self.kind.min() < 0 or self.kind.max() >= len(EVENT_KINDS):
            raise ScheduleError(f"event kinds must index {EVENT_KINDS}")
        if self.shard.min() < 0:
            raise ScheduleError("shard indices must be >= 0")
        if not np.all((self.shard_frequency > 0) & (self.shard_frequency <= 1)):
            raise ScheduleError("shard_frequency must lie in (0, 1]")
        moves = ~np.isin(self.kind, UPDATE_KINDS)
        if np.any(self.applied[moves]):
            raise ScheduleError("only gradient and push events can be applied")
        if self.version_read.min() < 0:
            raise ScheduleError("version_read must be >= 0")
        if self.staleness.min() < 0:
            raise ScheduleError("staleness must be >= 0")
        if np.any(self.finish_time < self.start_time) or np.any(self.time < self.finish_time):
            raise ScheduleError("times must satisfy start_time <= finish_time <= time")
        self._validate_servers()

    def _validate_servers(self) -> None:
        """Per server, in row order: the staleness counts the updates applied before the row,
        and times never decrease. All servers in one compiled pass over the rows
        (:mod:`simulators.server_checks`); the first server that fails is named, its staleness
        checked first."""
        from simulators.server_checks import first_failures  # numba: only when validating

        first_stale, first_late = first_failures(self.server, self.applied, self.staleness,
                                                 self.version_read, self.time, self.n_servers)
        if first_stale < self.n_servers and first_stale <= first_late:
            raise ScheduleError(
                f"server {first_stale}: staleness must equal (updates applied before the event)"
                " - version_read"
            )
        if first_late < self.n_servers:
            raise ScheduleError(f"server {first_late}: events must be in processing order")

    # ----------------------------------------------------------------- summaries
    @property
    def n_events(self) -> int:
        return int(self.server.size)

    @property
    def n_servers(self) -> int:
        return int(self.server.max()) + 1 if self.n_events else 0

    @property
    def n_workers(self) -> int:
        return int(self.worker.max()) + 1 if self.n_events else 0

    def n_updates(self, server: int = 0) -> int:
        """Number of applied updates on ``server``."""
        return int(np.count_nonzero(self.applied & (self.server == server)))

    def update_column(self, name: str, n_updates: int | None = None) -> np.ndarray:
        """Column ``name`` of the applied updates, shape ``(n_updates, n_servers)``.

        Column ``s`` lists server ``s``'s applied updates in order; ``n_updates`` defaults to
        the smallest count over servers, and asking for more than a server has is an error.
        """
        if name not in _COLUMNS:
            raise ScheduleError(f"no column {name!r}; columns are {', '.join(_COLUMNS)}")
        server = self.server[self.applied]
        counts = np.bincount(server, minlength=self.n_servers)
        if n_updates is None:
            n_updates = int(counts.min())
        if n_updates > counts.min():
            raise ScheduleError(
                f"asked for {n_updates} updates but server {int(np.argmin(counts))} has only"
                f" {counts.min()}"
            )
        from simulators.server_columns import server_columns  # numba: only when replaying

        return server_columns(getattr(self, name), self.server, self.applied, n_updates,
                              counts.size)

    def update_staleness(self, n_updates: int | None = None) -> np.ndarray:
        """Staleness of the applied updates, shape ``(n_updates, n_servers)``."""
        return self.update_column("staleness", n_updates)

    def update_shards(self, n_updates: int | None = None) -> np.ndarray:
        """Shard of each applied update, shape ``(n_updates, n_servers)``."""
        return self.update_column("shard", n_updates)

    def update_times(self, n_updates: int | None = None) -> np.ndarray:
        """Simulated time of each applied update, shape ``(n_updates, n_servers)``."""
        return self.update_column("time", n_updates)

    def staleness_histogram(self, applied_only: bool = True) -> xr.DataArray:
        """Counts of each staleness value, as a DataArray over dim ``staleness``."""
        import xarray as xr

        kept = self.applied if applied_only else np.isin(self.kind, UPDATE_KINDS)
        values = self.staleness[kept]
        counts = np.bincount(values) if values.size else np.zeros(1, dtype=np.int64)
        return xr.DataArray(
            counts,
            dims="staleness",
            coords={"staleness": np.arange(counts.size)},
            name="count",
        )

    def utilisation(self) -> xr.DataArray:
        """Fraction of the makespan each worker spent computing, over dim ``worker``."""
        import xarray as xr

        makespan = float(self.time.max()) if self.n_events else 0.0
        modelled = self.worker >= 0
        busy = np.bincount(
            self.worker[modelled],
            weights=(self.finish_time - self.start_time)[modelled],
            minlength=self.n_workers,
        )
        fraction = busy / makespan if makespan > 0 else np.zeros_like(busy)
        return xr.DataArray(
            fraction, dims="worker", coords={"worker": np.arange(busy.size)}, name="utilisation"
        )

    # ----------------------------------------------------------------- variants
    def without_staleness(self) -> Schedule:
        """The same events, every gradient read at the version current when it is processed.

        The counterfactual "what if the gradients had been fresh": same timing, no delay in
        the numerics. Used by teaching pages and as a negative control in the tests.
        """
        return self.with_staleness_scaled(0, "without_staleness")

    def with_staleness_scaled(self, factor: int, variant: str | None = None) -> Schedule:
        """The same events, every gradient read ``factor`` times as stale as it was: version
        v − factor·τ where it was processed at version v, at least version 0 (0: fresh; 2:
        "twice as stale as the schedule says", a negative control of seed 003's protocols)."""
        factor = validation.integer("factor", factor, minimum=0)
        columns = {name: getattr(self, name).copy() for name in _COLUMNS}
        current = columns["version_read"] + columns["staleness"]
        columns["version_read"] = np.maximum(current - factor * columns["staleness"], 0)
        columns["staleness"] = current - columns["version_read"]
        attrs = dict(self.attrs, variant=variant or f"staleness_times_{factor}")
        return Schedule(**columns, attrs=attrs)

    # ----------------------------------------------------------------- storage
    def to_dataset(self) -> xr.Dataset:
        """The schedule as an xarray Dataset over dim ``event`` (netCDF-safe)."""
        import xarray as xr

        data = {}
        for name in _COLUMNS:
            column = getattr(self, name)
            data[name] = ("event", column.astype(np.int8) if name == "applied" else column.copy())
        attrs = {"schedule_format": 2, "event_kinds": ",".join(EVENT_KINDS)}
        attrs.update({f"system_{key}": value for key, value in self.attrs.items()})
        return xr.Dataset(data, coords={"event": np.arange(self.n_events)}, attrs=attrs)

    @classmethod
    def from_rows(cls, rows: list[tuple], attrs: dict) -> Schedule:
        """Build from row tuples ordered as :data:`ROW_FIELDS` (how simulators record).

        Rows may leave out the last field, ``shard_frequency`` (one shard, frequency 1).
        """
        if not rows:
            columns = {name: np.zeros(0, dtype=dtype) for name, dtype in _COLUMNS.items()}
        else:
            fields = ROW_FIELDS[:len(rows[0])]
            columns = {name: np.asarray(values, dtype=_COLUMNS[name])
                       for name, values in zip(fields, zip(*rows, strict=True), strict=True)}
        return cls(**columns, attrs=attrs)

    @classmethod
    def from_dataset(cls, dataset: xr.Dataset) -> Schedule:
        """Rebuild (and validate) a schedule from :meth:`to_dataset` output or a recorded run."""
        missing = [name for name in _COLUMNS
                   if name not in dataset and name != "shard_frequency"]
        if missing:
            raise ScheduleError(f"dataset lacks schedule columns: {', '.join(missing)}")
        kinds = str(dataset.attrs.get("event_kinds", ",".join(EVENT_KINDS))).split(",")
        if tuple(kinds) != EVENT_KINDS[: len(kinds)]:
            raise ScheduleError(f"unknown event kinds {kinds}; this version knows {EVENT_KINDS}")
        columns = {name: dataset[name].values for name in _COLUMNS if name in dataset}
        columns["applied"] = columns["applied"].astype(bool)
        attrs = {
            key.removeprefix("system_"): _plain(value)
            for key, value in dataset.attrs.items()
            if key.startswith("system_")
        }
        return cls(**columns, attrs=attrs)


def _plain(value):
    """netCDF hands back numpy scalars; keep attributes as plain Python values."""
    return value.item() if isinstance(value, np.generic) else value
