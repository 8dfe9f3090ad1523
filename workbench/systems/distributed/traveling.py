"""Parameters and schedules of the traveling-chain experiments (seed 004 §3.2)."""

from __future__ import annotations

from simulators import validation
from simulators.latency import LatencyModel, WorkerTiming
from simulators.traveling_chains import ASSIGNMENTS, TravelingChains
from workbench.core.parameters import Parameter
from workbench.core.validators import (
    at_least_one,
    at_least_two,
    finite,
    non_negative,
    non_negative_int,
    positive,
)

CORRECTIONS = ("corrected", "uncorrected")


def trajectory_lengths(name, value):
    return [validation.integer(f"{name}[{i}]", v, minimum=1) for i, v in enumerate(value)]


def run_parameters(burn_in: int, n_iterations: int, n_replicates: int, batch_size: int,
                   thin: int) -> tuple[Parameter, ...]:
    """Run length, replicates and minibatches (defaults per experiment)."""
    return (
        Parameter("batch_size", batch_size, "minibatch size n", at_least_one),
        Parameter("replacement", True, "draw minibatches with replacement"),
        Parameter("n_replicates", n_replicates, "replicates per chain (same schedule)",
                  at_least_two),
        Parameter("replicate_block", 50, "replicates per seeding block", at_least_one),
        Parameter("burn_in", burn_in, "updates per chain before the window", non_negative_int),
        Parameter("n_iterations", n_iterations, "updates per chain in the window",
                  at_least_one),
        Parameter("thin", thin, "keep every thin-th update as a sample for the figures",
                  at_least_one),
        Parameter("initial_position", 0.0, "starting value θ₀ of every coordinate", finite),
    )


def system_parameters(assignment: str) -> tuple[Parameter, ...]:
    return (
        Parameter("assignment", assignment,
                  "chain-to-worker assignment each round: cyclic rotation, or a random "
                  "permutation with no chain staying in place", choices=ASSIGNMENTS),
        Parameter("worker_delay", 1.0, "time a worker takes per update (response delay d)",
                  positive),
        Parameter("hop_time", 0.0, "communication time of one chain hop", non_negative),
    )


def traveling_system(config: dict, trajectory_lengths, **options) -> TravelingChains:
    """Seed 004's system, one chain per worker unless ``options`` say otherwise."""
    timing = options.pop("timing", WorkerTiming(LatencyModel("constant",
                                                              config["worker_delay"])))
    return TravelingChains(len(config["shard_sizes"]), trajectory_lengths=tuple(
        trajectory_lengths), assignment=config["assignment"], timing=timing,
        hop_time=config["hop_time"], **options)
