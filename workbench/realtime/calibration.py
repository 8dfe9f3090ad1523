"""The simulator calibrated on a real run, and real against simulated schedules.

:func:`calibrate` fits the parameters of :class:`simulators.async_server.AsyncServerSystem`
(seed 001 Appendix A) to a recorded run:

- compute time: per event ``finish_time - start_time`` (read to announcement). Worker p's speed
  factor is the mean over all workers divided by its own mean; the times scaled by their
  worker's factor are pooled and the latency family (exponential, lognormal, gamma) with the
  smallest AIC (maximum-likelihood fits; the gamma family contains the exponential, so a
  plain likelihood would never choose the latter) is chosen, ``constant`` when their
  coefficient of variation is below 2 %. Stragglers are not fitted separately: a heavy tail
  shows up as a lognormal or a small gamma shape;
- server update time u: the mean of ``apply_times - update_starts``;
- network delay δ: the mean of two one-way medians: gradient to server (announcement to the
  start of its update, over gradients that found the server idle, so that no queueing enters)
  and server to worker (the update's publication to the worker's next read).

:func:`staleness_test` compares the staleness of the applied updates of two schedules with a
chi-square test of homogeneity on their counts (``scipy.stats.chi2_contingency``), not with a
Kolmogorov-Smirnov test: staleness is discrete with few values and many ties, for which the KS
p-value (derived for continuous distributions) is wrong. Adjacent staleness values are pooled,
from 0 upwards, until every expected cell count is at least 5. Staleness is serially
correlated along a run, and the test assumes independent draws, so each sequence is thinned to
every ``thin``-th update first (the number of workers, about one worker cycle, is the usual
choice).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import Schedule
from simulators.seeding import SeedLike
from workbench.realtime.server import RealRun

BATCHES = 20  # batches of the batch-means standard errors
CONSTANT_VARIATION = 0.02  # coefficient of variation below which compute times are constant
MIN_EXPECTED = 5.0  # smallest expected count of a chi-square cell


@dataclass(frozen=True)
class Calibration:
    """The simulator's parameters fitted to one run (module docstring); times in seconds."""

    timing: WorkerTiming
    server_update_time: float
    network_delay: float
    staleness_bound: int | None
    n_compute_times: int

    def system(self) -> AsyncServerSystem:
        """The calibrated system, with the run's workers."""
        return AsyncServerSystem(len(self.timing.speed_factors), self.timing, 1,
                                 self.server_update_time, self.network_delay,
                                 self.staleness_bound)

    def simulate(self, n_updates: int, seed: SeedLike) -> Schedule:
        return self.system().simulate(n_updates, seed)

    def describe(self) -> dict:
        return {**self.system().describe(), "n_compute_times": self.n_compute_times}


def fit_latency(times: np.ndarray) -> LatencyModel:
    """The latency family and parameters that fit positive ``times`` best (module docstring)."""
    times = np.asarray(times, dtype=float)
    if times.size < 2 or np.any(times <= 0) or not np.all(np.isfinite(times)):
        raise validation.InvalidParameter("compute_times", times.size,
                                          "needs at least two positive, finite times")
    mean = float(times.mean())
    if times.std() < CONSTANT_VARIATION * mean:
        return LatencyModel("constant", mean)
    logs = np.log(times)
    sigma = float(logs.std())  # the maximum-likelihood lognormal σ
    shape, _, scale = stats.gamma.fit(times, floc=0)
    shape, scale = float(shape), float(scale)
    candidates = [  # (AIC = 2 k - 2 log-likelihood, model)
        (2 - 2 * stats.expon.logpdf(times, scale=mean).sum(), LatencyModel("exponential", mean)),
        (4 - 2 * stats.lognorm.logpdf(times, sigma, scale=math.exp(logs.mean())).sum(),
         LatencyModel("lognormal", math.exp(logs.mean() + sigma**2 / 2), sigma)),
        (4 - 2 * stats.gamma.logpdf(times, shape, scale=scale).sum(),
         LatencyModel("gamma", float(shape * scale), float(shape))),
    ]
    return min(candidates, key=lambda candidate: candidate[0])[1]


def calibrate(run: RealRun) -> Calibration:
    """Fit the simulator's latency model to a recorded run (module docstring)."""
    schedule = run.schedule
    if run.n_applied < 2:
        raise validation.InvalidParameter("run", run.n_applied,
                                          "needs at least two applied updates to calibrate")
    n_workers = int(schedule.attrs["n_workers"])
    compute = schedule.finish_time - schedule.start_time
    means = np.array([compute[schedule.worker == w].mean() if np.any(schedule.worker == w)
                      else np.nan for w in range(n_workers)])
    overall = float(compute.mean())
    factors = np.where(np.isfinite(means), overall / means, 1.0)
    latency = fit_latency(compute * factors[schedule.worker])

    slots = np.cumsum(schedule.applied) - 1  # slot of each applied event
    applied = np.flatnonzero(schedule.applied)
    slot = slots[applied]
    finish = schedule.finish_time[applied]
    idle = (slot == 0) | (run.apply_times[np.maximum(slot - 1, 0)] <= finish)
    to_server = run.update_starts[slot] - finish
    to_worker = []
    for event, update in zip(applied, slot, strict=True):
        later = np.flatnonzero(schedule.worker[event + 1:] == schedule.worker[event])
        if later.size:
            to_worker.append(schedule.start_time[event + 1 + later[0]] - run.apply_times[update])
    delays = [float(np.median(gaps)) for gaps in (to_server[idle], to_worker) if len(gaps)]
    network_delay = max(0.0, float(np.mean(delays))) if delays else 0.0
    bound = int(schedule.attrs.get("staleness_bound", -1))
    return Calibration(
        timing=WorkerTiming(latency, tuple(float(f) for f in factors)),
        server_update_time=float(np.mean(run.apply_times - run.update_starts)),
        network_delay=network_delay,
        staleness_bound=None if bound < 0 else bound,
        n_compute_times=int(compute.size),
    )


@dataclass(frozen=True)
class StalenessComparison:
    """A chi-square test of homogeneity of two staleness distributions (module docstring)."""

    statistic: float
    p_value: float
    dof: int
    bins: tuple[str, ...]
    counts: tuple[tuple[int, ...], tuple[int, ...]]
    thin: int

    def rejects(self, level: float) -> bool:
        return self.p_value < level

    def describe(self) -> str:
        return (f"chi-square homogeneity on staleness counts (thinned 1 in {self.thin}): "
                f"X² = {self.statistic:.2f}, dof = {self.dof}, p = {self.p_value:.3f}")


def staleness_test(first: Schedule, second: Schedule, thin: int) -> StalenessComparison:
    """Do the applied updates of two schedules have the same staleness distribution?"""
    thin = validation.integer("thin", thin, minimum=1)
    samples = [schedule.staleness[schedule.applied][::thin] for schedule in (first, second)]
    if min(sample.size for sample in samples) == 0:
        raise validation.InvalidParameter("schedule", 0, "needs applied updates to compare")
    top = int(max(sample.max() for sample in samples))
    table = np.stack([np.bincount(sample, minlength=top + 1) for sample in samples])
    edges = _pooled_edges(table)
    pooled = np.stack([np.add.reduceat(row, edges) for row in table])
    labels = tuple(f"{lo}" if hi == lo + 1 else f"{lo}-{hi - 1}" if hi <= top else f">={lo}"
                   for lo, hi in zip(edges, [*edges[1:], top + 1], strict=True))
    counts = tuple(tuple(int(c) for c in row) for row in pooled)
    if pooled.shape[1] < 2:  # one value only in both: nothing to tell apart
        return StalenessComparison(0.0, 1.0, 0, labels, counts, thin)
    statistic, p_value, dof, _ = stats.chi2_contingency(pooled, correction=False)
    return StalenessComparison(float(statistic), float(p_value), int(dof), labels, counts, thin)


def _pooled_edges(table: np.ndarray) -> np.ndarray:
    """Left edges of staleness bins, adjacent values pooled from 0 upwards until every
    expected count of the 2 × K table is at least :data:`MIN_EXPECTED`."""
    totals = table.sum(axis=1)
    share = totals.min() / totals.sum()  # expected count of a bin = column total × row share
    edges, column = [], 0
    columns = table.sum(axis=0)
    for value, count in enumerate(columns):
        if not edges or column * share >= MIN_EXPECTED:
            edges.append(value)
            column = 0
        column += count
    if len(edges) > 1 and column * share < MIN_EXPECTED:
        edges.pop()  # the last bin is too small: join it to the one before
    return np.asarray(edges, dtype=np.int64)


def throughput(schedule: Schedule) -> float:
    """Applied updates per second between the first and the last applied update."""
    times = schedule.time[schedule.applied]
    if times.size < 2 or times[-1] <= times[0]:
        return math.nan
    return (times.size - 1) / float(times[-1] - times[0])


def batch_means(values: np.ndarray, batches: int = BATCHES) -> tuple[float, float]:
    """Mean of a serially correlated sequence and its standard error by batch means (the
    sequence cut into ``batches`` consecutive batches of equal length; any remainder at the
    start is left out)."""
    values = np.asarray(values, dtype=float)
    size = values.size // batches
    if size < 1:
        return float(values.mean()) if values.size else math.nan, math.nan
    means = values[values.size - size * batches:].reshape(batches, size).mean(axis=1)
    return float(means.mean()), float(means.std(ddof=1) / math.sqrt(batches))


def mean_staleness(schedule: Schedule) -> tuple[float, float]:
    """Mean staleness of the applied updates and its batch-means standard error."""
    return batch_means(schedule.staleness[schedule.applied])


def log_throughput_error(schedule: Schedule) -> float:
    """Standard error of log :func:`throughput`: the batch-means relative error of the mean
    time between applied updates."""
    gaps = np.diff(schedule.time[schedule.applied])
    mean, error = batch_means(gaps)
    return error / mean if mean > 0 else math.nan


def updates_per_worker_iteration(schedule: Schedule) -> float:
    """Applied updates per gradient computed by one worker: the schedule's iteration speed-up
    (P when nothing is dropped; each dropped gradient lowers it)."""
    n_workers = int(schedule.attrs["n_workers"])
    gradients = int(np.count_nonzero(schedule.kind == 0))
    return schedule.n_updates() * n_workers / gradients if gradients else math.nan
