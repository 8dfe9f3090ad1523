"""What an experiment is: parameters, a sweep grid, a pure per-point run, checks and figures.

Each sweep point is a pure function of (configuration, point, seed): this is what lets a sweep
run in one process, a process pool or a Dask cluster and give the same Dataset, and what the
result store (:mod:`workbench.store.result_store`) and the runner (:mod:`workbench.run.runner`)
build on.

The protocol, from the runner's side:

- ``points(config)`` lists the sweep points (dicts keyed by sweep dim) in grid order;
  ``combine(config, datasets)`` joins the per-point Datasets, in that order, into the
  experiment's Dataset.
- ``run_point(config, point, seed)`` computes one point. An experiment that does nothing else
  works as it is: the runner calls ``run_point`` for every point.
- Splitting a large point (optional). An experiment whose replicates run in independently
  seeded blocks (``workbench.engine.replay.replay(..., replicate_block=, blocks=)``) may say so with
  ``replicate_blocks(config, point) > 1`` and implement two halves of ``run_point``:

  * ``run_blocks(config, point, seed, blocks)``: the raw per-replicate results of the listed
    blocks only (a Dataset whose ``replicate`` dim holds those blocks' replicates, in order);
  * ``finish_point(config, point, seed, raw)``: the point's Dataset from the raw results of
    all blocks, merged along ``replicate`` by ``merge_blocks`` (summaries, exact values and
    everything else that needs every replicate are computed here).

  The base ``run_point`` is then ``finish_point(run_blocks(all blocks))``. Because each block
  draws from its own seed-tree stream, running the blocks in any grouping, in any process,
  gives bit-identical results; the runner uses this to balance a sweep across workers.
  Where a block's raw results do not depend on the point's replicate count either,
  ``kept_blocks(config, point)`` gives each block's replicates: a sequential check keeps the
  blocks, and a later look with more replicates computes only the new ones.
- ``work(config, point)`` (optional): replicate-updates the point performs. The runner uses it
  to balance tasks and to decide whether a point is long enough for an update-level progress
  bar; ``0`` means unknown (every point then counts the same).
- ``memory(config, point)`` (optional): bytes the point's results need at least, from the
  configuration alone; the plan (:mod:`workbench.run.plan`) refuses a run whose largest point
  exceeds the memory budget before anything runs. The default reads the parameters the
  experiments share by name (:func:`results_bytes`).
- Progress (optional): code inside a point may call ``workbench.run.progress.reporter(n)`` to get
  a callback for ``replay(..., progress=)`` that reports replicate-updates to the runner's bar,
  whatever executor the point runs in.
- ``runs_alone`` (optional): the experiment measures time on this machine, so its sweep runs
  with no other sweep beside it.
- Result-store identity: ``point_identity(config, point)`` is the part of the configuration a
  point depends on. By default it is the configuration without the keys the point sets (the
  sweep grid lists), so extending or reordering a grid reuses the points already stored. An
  experiment whose points depend on the whole grid must override it to return ``config``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.core.headline import Headline
from workbench.core.paper import PaperEntry
from workbench.core.parameters import Parameter, resolve

# xarray and the verdicts (scipy.stats) are imported where points are merged and combined:
# describing and configuring an experiment (``workbench show``, argument errors) needs
# neither (issue 15)
if TYPE_CHECKING:
    import xarray as xr

    from bounds.verdict import Verdict


class Experiment:
    """Base class; subclasses set the class attributes and implement the methods."""

    name: str = ""
    summary: str = ""
    source: str = ""
    parameters: tuple[Parameter, ...] = ()
    quick: dict[str, Any] = {}
    sweep_dims: tuple[str, ...] = ()
    headline: Headline | None = None
    """The one chart that says what the result is (:mod:`workbench.core.headline`): the
    Experiment browser opens on it."""
    paper: tuple[PaperEntry, ...] = ()
    """What its seed paper states, each citing its section, and the verdicts that compare it
    (:mod:`workbench.core.paper`): the Experiment browser's Paper tab."""
    until_decided: float | None = None
    """Seconds of looks ``workbench check`` spends on it by default, judging again with more
    replicates until every check is decided (:mod:`workbench.run.until_decided`; a study's
    ``[study] until_decided``); None: one look unless ``--until-decided`` asks for more."""
    runs_alone: bool = False
    """Its points time themselves on this machine: no other experiment's sweep may run
    beside it (:func:`workbench.run.runner.run_sweeps` otherwise starts the next sweep while the
    last tasks of one still run)."""

    def configure(self, overrides: dict[str, Any] | None = None, quick: bool = False) -> dict:
        return resolve(self.parameters, overrides, self.quick if quick else None)

    def points(self, config: dict) -> list[dict[str, Any]]:
        raise NotImplementedError

    #: configuration keys that no replicate block's raw results read (what only finishes a
    #: point: a traveling point's ``limit_schedules``): a point differing in them alone finds
    #: its kept blocks stored (:func:`workbench.store.result_store.block_identity`)
    unblocked_keys: tuple[str, ...] = ()

    def point_identity(self, config: dict, point: dict[str, Any]) -> dict[str, Any]:
        """The configuration keys a point's result depends on (see the module docstring): not
        the point's own, nor the :meth:`optional_lists`."""
        optional = self.optional_lists(config)
        return {key: value for key, value in config.items()
                if key not in point and key not in optional}

    def optional_lists(self, config: dict) -> tuple[str, ...]:
        """List-valued configuration keys whose every value only adds points of its own (a
        point that needs one names it), so that no point's identity holds them
        (:meth:`point_identity`) and a sequential look may leave them empty
        (:mod:`workbench.run.narrowing`: whole, never in part); none by default."""
        return ()

    def work(self, config: dict, point: dict[str, Any]) -> int:
        """Replicate-updates of the point (0: unknown)."""
        return 0

    def keys_read_by(self, checks: Collection[str]) -> Collection[str] | None:
        """The configuration keys whose points the verdicts named ``checks`` read (None:
        every key), so that a sequential check grows only those points' replicates
        (:mod:`workbench.run.until_decided`)."""
        return None

    def memory(self, config: dict, point: dict[str, Any]) -> int:
        """Bytes the point's results need at least (:func:`results_bytes` of its values)."""
        values = {**config, **point}
        replicates = _count(values, "n_replicates")
        return results_bytes(values, self.work(config, point) // replicates)

    def replicate_blocks(self, config: dict, point: dict[str, Any]) -> int:
        """Independently seeded blocks of the point (1: the point does not split): blocks of
        its replicates, or parts it runs side by side each from its own seed (a topic-model
        point's samplers; a federated point's estimators and its reference posterior), which
        separate tasks may run (:meth:`run_blocks`), joined in order
        (:meth:`merge_blocks`) and finished (:meth:`finish_point`) into :meth:`run_point`'s
        result bit for bit."""
        return 1

    def kept_blocks(self, config: dict, point: dict[str, Any]) -> list[range] | None:
        """The replicates of each of the point's blocks where every block's raw results are
        the same bits whatever the point's replicate count (the first blocks of a run with
        more replicates are then those of this run, and a sequential check keeps them:
        :func:`workbench.store.result_store.block_identity`); None where they are not, or
        the point does not split. The raw results carry a ``replicate`` coordinate of global
        indices, along which :meth:`run_blocks`'s results are cut into blocks."""
        return None

    def run_blocks(self, config: dict, point: dict[str, Any], seed,
                   blocks: Sequence[int]) -> xr.Dataset:
        raise NotImplementedError(f"{self.name} does not split its points into blocks")

    def merge_blocks(self, config: dict, point: dict[str, Any],
                     raws: Sequence[xr.Dataset]) -> xr.Dataset:
        """Raw results of consecutive block groups, joined in block order."""
        if len(raws) == 1:
            return raws[0]
        import xarray as xr

        return xr.concat(raws, dim="replicate", data_vars="minimal", coords="minimal",
                         compat="equals", join="exact")

    def finish_point(self, config: dict, point: dict[str, Any], seed,
                     raw: xr.Dataset) -> xr.Dataset:
        raise NotImplementedError(f"{self.name} does not split its points into blocks")

    def run_point(self, config: dict, point: dict[str, Any], seed) -> xr.Dataset:
        blocks = range(self.replicate_blocks(config, point))
        return self.finish_point(config, point, seed, self.run_blocks(config, point, seed, blocks))

    def combine(self, config: dict, datasets: list[xr.Dataset]) -> xr.Dataset:
        import xarray as xr

        return xr.concat(datasets, dim=self.sweep_dims[0], data_vars="minimal",
                         coords="minimal", compat="equals", join="exact")

    def checks(self, dataset: xr.Dataset) -> list[Verdict]:
        raise NotImplementedError

    def figures(self, dataset: xr.Dataset, out_dir: Path) -> list[Path]:
        raise NotImplementedError


SCHEDULE_BYTES_PER_UPDATE = 64  # a schedule row: server, worker, shard, version, time, ...


def _count(values: dict[str, Any], name: str, absent: int = 1) -> int:
    value = values.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return absent
    return max(int(value), 0)


def results_bytes(values: dict[str, Any], updates: int) -> int:
    """Bytes a point with these parameter values holds at least: the engine's results for
    ``n_replicates`` R replicates in dimension ``dim`` d — averages of θ and θ² at
    ``n_checkpoints`` C checkpoints, ``n_draws`` D thinned draws and the final position,
    counted twice as :func:`workbench.engine.replay_setup.memory_need` counts them — and the
    schedule of its ``updates`` updates. A parameter an experiment does not have counts as 1
    (``n_draws`` as 0)."""
    replicates, dim = _count(values, "n_replicates"), _count(values, "dim")
    checkpoints, draws = _count(values, "n_checkpoints"), _count(values, "n_draws", 0)
    per_replicate = 2 * checkpoints * dim + draws * dim + dim + 1
    return 16 * replicates * per_replicate + SCHEDULE_BYTES_PER_UPDATE * updates


def point_key(point: dict[str, Any]) -> str:
    """A canonical text name for a sweep point, used as its seed-tree key."""
    return ",".join(f"{k}={point[k]!r}" for k in sorted(point))
