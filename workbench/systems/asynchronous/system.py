"""The simulated asynchronous system of seed 001 (Appendix A) and what its latencies predict.

Each of S servers has P workers; a worker computes a gradient in a time drawn from the latency
model, messages take ``network_delay`` each way and the server spends ``server_update_time``
per update (:class:`simulators.async_server.AsyncServerSystem`).

Predicted time speed-up (seed 001 §5.1: "the time speed-up degrades with system latency"). One
worker's cycle takes c = μ + 2δ + u (mean latency μ, network delay δ, update time u), so P
workers deliver P/c updates per unit time until the server saturates at 1/u. With the
iteration speed-up of P (Theorem 4: the variance at fixed L is free of τ) the time to a given
precision therefore falls like min(P, P*) with the bend at

    P* = c / u = 1 + (μ + 2δ)/u

(the deterministic queueing bound; random latencies round the corner off). With u = 0 there is
no bend (P* = ∞).
"""

from __future__ import annotations

import math

import numpy as np

from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.latency import LATENCY_KINDS, LatencyModel, WorkerTiming
from workbench.core.parameters import Parameter
from workbench.core.validators import distinct_positive_ints, non_negative, positive

LATENCY = Parameter("latency", "exponential", "distribution of one gradient computation time",
                    choices=LATENCY_KINDS)
LATENCY_MEAN = Parameter("latency_mean", 1.0,
                         "mean gradient computation time μ (simulated time units)", positive)
LATENCY_SHAPE = Parameter("latency_shape", 1.0, "lognormal σ or gamma shape of the latency",
                          positive)
SERVER_UPDATE_TIME = Parameter("server_update_time", 0.3, "server time u per applied update",
                               non_negative)
NETWORK_DELAY = Parameter("network_delay", 0.1, "one-way message delay δ", non_negative)


def count_grid(name, value):
    """Distinct worker or server counts including the baseline 1, at least three of them
    (a speed-up needs its baseline, a fitted slope three points)."""
    grid = distinct_positive_ints(name, value)
    if 1 not in grid or len(grid) < 3:
        raise validation.InvalidParameter(name, value,
                                          "needs 1 (the baseline) and at least two more counts")
    return grid


#: the worker counts P of a speed-up sweep (an experiment with one P replaces the default and
#: the validator)
WORKERS = Parameter("workers", [1, 2, 4], "worker counts P (1, the baseline, and at least two "
                    "more)", count_grid)


#: the parameter-server protocols :func:`make_system` builds, by the configuration's
#: ``system`` (absent: the asynchronous server)
ASYNCHRONOUS, DOWNPOUR, ELASTIC = "asynchronous", "downpour", "elastic"
PROTOCOLS = (ASYNCHRONOUS, DOWNPOUR, ELASTIC)


def worker_timing(config: dict) -> WorkerTiming:
    """A worker's computation times: the latency model, with stragglers where configured."""
    latency = LatencyModel(config["latency"], config["latency_mean"], config["latency_shape"])
    return WorkerTiming(latency, straggler_probability=config.get("straggler_probability", 0.0),
                        straggler_slowdown=config.get("straggler_slowdown", 1.0))


def make_system(config: dict, n_workers: int,
                n_servers: int = 1) -> AsyncServerSystem | ElasticSystem:
    """The system of a sweep point, by ``config["system"]``: the asynchronous server
    (``n_servers`` servers with ``n_workers`` workers each; seed 001 Appendix A), downpour
    (one master, workers pushing every ``period`` local steps; seed 003 Algorithm 1) or elastic
    averaging (``n_workers`` chains coupled to a centre every ``period`` steps with strength
    ``coupling_strength``; seed 003 Appendix B)."""
    protocol = config.get("system", ASYNCHRONOUS)
    timing = worker_timing(config)
    update, delay = config["server_update_time"], config["network_delay"]
    if protocol == DOWNPOUR:
        return DownpourSystem(n_workers, timing, 1, update, delay, period=config["period"])
    if protocol == ELASTIC:
        return ElasticSystem(n_workers, config["period"], config["coupling_strength"], timing,
                             update, delay)
    return AsyncServerSystem(n_workers, timing, n_servers, update, delay)


def saturation_workers(config: dict) -> float:
    """P* = (μ + 2δ + u)/u, where the server saturates (module docstring); ∞ when u = 0."""
    update = config["server_update_time"]
    if update == 0:
        return math.inf
    return (config["latency_mean"] + 2 * config["network_delay"] + update) / update


def predicted_time_speedup(config: dict, workers) -> np.ndarray:
    """min(P, P*) for each worker count P (module docstring)."""
    return np.minimum(np.asarray(workers, dtype=float), saturation_workers(config))
