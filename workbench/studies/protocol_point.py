"""One sweep point of a study of seed 003's protocols on the Gaussian mean, with its exact oracle.

Seed 003 (Li, Chen, Pu, Henao & Carin, AAAI 2019): downpour SGLD (Algorithm 1: P workers push
every π local steps to one master) and elastic averaging SGLD (Appendix B: P chains coupled to
a centre every π steps with strength α). A point of a ``[system] kind`` downpour, elastic or
protocol (either, as its ``protocol`` field says) on ``[model] kind = "gaussian-mean"`` is one
run of :mod:`workbench.systems.protocols.run`: SGLD on the d = 1 Gaussian mean of that module,
replayed over the replicates in seeding blocks of ``replicate_block`` (a point splits into
them, and a block is the same bits whatever the point's replicate count, so a sequential
check's looks keep it), with the exact oracle of the run's own schedule
(:mod:`workbench.oracles.protocols`). Its dims are ``test_function``, ``checkpoint`` and
``replicate`` (no ``component``); its variables include ``squared_error`` per replicate and
``messages`` per checkpoint, which :mod:`.protocol_judgements` reads.

Seeds as in that module: the schedule is keyed by the point, the engine's streams by the study
alone, so every point of a sweep shares its noise and minibatches (common random numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from workbench.studies.schema import BUDGETS, PROTOCOL
from workbench.systems.asynchronous.system import ELASTIC

# the run (engine, oracles, xarray) is imported where a point runs: resolving and configuring
# a study stays light (issue 15)
if TYPE_CHECKING:
    import xarray as xr


def local_steps(resolved: dict) -> int:
    """The updates of the point's run: ``n_iterations``, except for elastic at downpour's
    budget (``budget = "downpour"``): downpour's L = ``n_iterations`` pushes at period π are
    Lπ local steps and 2L messages (push and pull); elastic's P chains share them, Lπ/P local
    steps each (rounded down), coupling every π steps: the same Lπ local steps and 2L messages
    (state and reply; seed 003 Appendix B)."""
    if resolved["system"] != ELASTIC or resolved["budget"] == BUDGETS[0]:
        return resolved["n_iterations"]
    return resolved["n_iterations"] * resolved["period"] // resolved["n_workers"]


def resolve(resolved: dict) -> dict:
    """The point's configuration with its protocol in place of ``protocol`` as the system, and
    ``n_iterations`` the updates its run makes (:func:`local_steps`)."""
    if resolved["system"] == PROTOCOL:
        resolved = {**resolved, "system": resolved["protocol"]}
    return {**resolved, "n_iterations": local_steps(resolved)}


def run_blocks(experiment: str, resolved: dict, point: dict, seed, blocks: Sequence[int],
               streams: str = "") -> xr.Dataset:
    """Raw results of some of the point's replicate seeding blocks
    (:func:`workbench.systems.protocols.run.run_blocks`); ``streams``: the prefix of its random
    streams' names (a later part of a study of shared points)."""
    from workbench.systems.protocols import run

    return run.run_blocks(experiment, resolved, point, seed, blocks, streams)


def finish_point(experiment: str, resolved: dict, point: dict, seed, raw: xr.Dataset,
                 streams: str = "", dims: tuple[str, ...] = ()) -> xr.Dataset:
    """The point's Dataset (module docstring) from the raw results of all its blocks, with the
    sweep ``dims`` as leading size-1 dims (:func:`workbench.systems.asynchronous.run.at_point`)."""
    from workbench.systems.asynchronous.run import at_point
    from workbench.systems.protocols import run

    return at_point(run.finish_point(experiment, resolved, point, seed, raw, streams), point,
                    dims)
