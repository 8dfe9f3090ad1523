"""Parameters and schedules of the traveling-chain experiments (seed 004 §3.2)."""

from __future__ import annotations

from dataclasses import replace

from simulators import validation
from simulators.latency import LatencyModel, WorkerTiming
from simulators.traveling_chains import ASSIGNMENTS, TravelingChains
from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one, non_negative, positive
from workbench.run.parameters import (
    BATCH_SIZE,
    BURN_IN,
    INITIAL_POSITION,
    N_ITERATIONS,
    N_REPLICATES,
    REPLACEMENT,
    REPLICATE_BLOCK,
    THIN,
)

CORRECTIONS = ("corrected", "uncorrected")


def trajectory_lengths(name, value):
    return [validation.integer(f"{name}[{i}]", v, minimum=1) for i, v in enumerate(value)]


def run_parameters(burn_in: int, n_iterations: int, n_replicates: int, batch_size: int,
                   thin: int) -> tuple[Parameter, ...]:
    """Run length, replicates and minibatches (defaults per experiment)."""
    return (
        replace(BATCH_SIZE, default=batch_size),
        REPLACEMENT,
        replace(N_REPLICATES, default=n_replicates, help="replicates per chain (same schedule)"),
        REPLICATE_BLOCK,
        replace(BURN_IN, default=burn_in),
        replace(N_ITERATIONS, default=n_iterations, help="updates per chain in the window"),
        replace(THIN, default=thin),
        INITIAL_POSITION,
    )


ASSIGNMENT = Parameter("assignment", "cyclic",
                       "chain-to-worker assignment each round: cyclic rotation, or a random "
                       "permutation with no chain staying in place", choices=ASSIGNMENTS)
WORKER_DELAY = Parameter("worker_delay", 1.0, "time a worker takes per update (response delay d)",
                         positive)
HOP_TIME = Parameter("hop_time", 0.0, "communication time of one chain hop", non_negative)
TRAJECTORY_LENGTH = Parameter("trajectory_length", 100, "τ: updates per visit, the same on every "
                              "worker (seed 004 §3.2.1)", at_least_one)


def system_parameters(assignment: str) -> tuple[Parameter, ...]:
    return replace(ASSIGNMENT, default=assignment), WORKER_DELAY, HOP_TIME


def traveling_system(config: dict, trajectory_lengths, **options) -> TravelingChains:
    """Seed 004's system, one chain per worker unless ``options`` say otherwise."""
    timing = options.pop("timing", WorkerTiming(LatencyModel("constant",
                                                              config["worker_delay"])))
    return TravelingChains(len(config["shard_sizes"]), trajectory_lengths=tuple(
        trajectory_lengths), assignment=config["assignment"], timing=timing,
        hop_time=config["hop_time"], **options)
