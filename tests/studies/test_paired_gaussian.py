"""Common random numbers on the Gaussian mean (issue 33, item 2): ``[study] paired`` makes the
points along its dims share the engine's noise and minibatches (their schedules stay the
point's), and the ``invariance`` and ``slope`` checks along a paired dim judge with the
covariance of a paired bootstrap over replicates, saying so in their evidence.

Exact: along a dim that changes nothing the chains read (``confidence``, which only the
summaries use), paired points are the same chains bit for bit, so their MSEs differ by
exactly 0 ± 0 and the invariance holds; unpaired (the negative control) they are independent
and the same check, at the same size, cannot decide. Along staleness the paired variances'
slope has a much smaller error than the independent one. Pairing enters the points' store
identity, and a study whose points cannot share streams is refused."""

from __future__ import annotations

import numpy as np
import pytest

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from tests.studies.refusals import refused_when_read
from workbench.run.runner import run_experiment
from workbench.store.result_store import point_identity
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import loads

SEED = 11
BASE = """\
[study]
name = "paired-gaussian"
paired = ["confidence"]

[model]
kind = "gaussian-mean"

[system]
kind = "constant"
staleness = 2

[sampler]
kind = "sgld"
step_size = 1e-4

[run]
n_iterations = 300
n_replicates = 60

[sweep]
confidence = [0.9, 0.95]

[[check]]
kind = "invariance"
over = "confidence"
"""
UNPAIRED = BASE.replace('paired = ["confidence"]\n', "")


def _judged(text: str):
    experiment = StudyExperiment(loads(text, "<paired>"))
    config = experiment.configure()
    dataset = run_experiment(experiment, config, SEED)
    return experiment, dataset, experiment.checks(dataset)


def test_paired_points_along_a_dim_the_chains_do_not_read_are_the_same_chains():
    _, dataset, [verdict] = _judged(BASE)
    estimate = dataset["estimate"].isel(checkpoint=-1)
    np.testing.assert_array_equal(estimate.sel(confidence=0.9), estimate.sel(confidence=0.95))
    assert verdict.verdict == HOLDS
    assert verdict.difference == 0 and verdict.mc_error == 0
    assert verdict.evidence["common_random_numbers"] == "paired across confidence"
    assert "paired bootstrap" in verdict.detail
    # negative control: independent streams, independent errors, undecided at this size
    _, unpaired, [independent] = _judged(UNPAIRED)
    last = unpaired["estimate"].isel(checkpoint=-1)
    assert not np.array_equal(last.sel(confidence=0.9), last.sel(confidence=0.95))
    assert independent.verdict == INCONCLUSIVE and independent.mc_error > 0
    assert "common_random_numbers" not in independent.evidence


def test_a_paired_slope_along_staleness_has_a_smaller_error_than_an_independent_one():
    """Theorem 4 of seed 001 (the variance of φ̂(θ) is free of τ at fixed L and h): the
    slope of the variance against τ on paired and on independent points of the same size."""
    text = (BASE.replace('paired = ["confidence"]', 'paired = ["staleness"]')
            .replace("staleness = 2\n", "")
            .replace("confidence = [0.9, 0.95]", "staleness = [1, 2, 4]")
            .replace('kind = "invariance"\nover = "confidence"',
                     'kind = "slope"\nover = "staleness"\nexpected = 0.0\n'
                     'test_function = "theta"\nbootstrap_resamples = 400'))
    _, _, [paired] = _judged(text)
    _, _, [independent] = _judged(text.replace('paired = ["staleness"]\n', ""))
    assert paired.evidence["common_random_numbers"] == "paired across staleness"
    assert paired.evidence["bootstrap_resamples"] == 400
    assert len(paired.evidence["log_covariance"]) == 3
    assert 0 < paired.mc_error < 0.5 * independent.mc_error


def test_pairing_enters_the_points_store_identity():
    paired = StudyExperiment(loads(BASE, "<paired>"))
    unpaired = StudyExperiment(loads(UNPAIRED, "<unpaired>"))
    point = {"confidence": 0.9}
    assert (point_identity(paired, paired.configure(), point, SEED)
            != point_identity(unpaired, unpaired.configure(), point, SEED))
    assert paired.common_streams(point) == {} and unpaired.common_streams(point) is None


@pytest.mark.parametrize("text, needle, words", [
    (BASE.replace('kind = "constant"\nstaleness = 2', 'kind = "asynchronous"\nn_servers = 2')
     .replace("confidence = [0.9, 0.95]", "n_workers = [1, 2]")
     .replace('paired = ["confidence"]', 'paired = ["n_workers"]')
     .replace('kind = "invariance"\nover = "confidence"',
              'kind = "invariance"\nover = "n_workers"'),
     "paired =", ("traveling-chains", "Gaussian mean")),
    (BASE.replace('over = "confidence"', 'over = "confidence"\nbootstrap_resamples = 10'),
     "bootstrap_resamples", ("at least 100",)),
])
def test_pairing_where_points_cannot_share_streams_is_refused(text, needle, words):
    refused_when_read(text, needle, *words)


def test_a_rate_along_a_paired_dim_resamples_its_replicates_jointly():
    """A ``rate`` check along a ``[study] paired`` dim bootstraps the replicates jointly
    across it (its evidence says ``paired``), as ``paired = true`` asks; unpaired it does not
    (negative control)."""
    text = (BASE.replace('paired = ["confidence"]', 'paired = ["n_iterations"]')
            .replace("n_iterations = 300\n", "")
            .replace("confidence = [0.9, 0.95]", "n_iterations = [100, 200, 400]")
            .replace('kind = "invariance"\nover = "confidence"',
                     'kind = "rate"\nover = "n_iterations"\nexpected = -0.5\n'
                     'bound = "theorem-3"\nbootstrap_resamples = 200\n\n[[bound]]\n'
                     'name = "theorem-3"\nregistered = "seed001-theorem-3-mse"'))
    _, _, [paired] = _judged(text)
    _, _, [independent] = _judged(text.replace('paired = ["n_iterations"]\n', ""))
    assert paired.evidence["paired"] is True
    assert independent.evidence["paired"] is False


def test_paired_points_whose_replicates_all_diverged_are_inconclusive_not_an_error():
    """h·(N + 1) = 1 at τ = 2, beyond the stability limit 2 sin(π/10): every replicate
    diverges, so the paired invariance has no replicate to judge and says so."""
    _, _, [verdict] = _judged(BASE.replace("step_size = 1e-4", "step_size = 1e-3"))
    assert verdict.verdict == INCONCLUSIVE
    assert verdict.evidence["paired_replicates"] == 0


def test_a_paired_invariance_the_staleness_breaks_is_violated():
    """Negative control of the paired judgement: at one h and L the staleness bias of φ̂(θ²)
    grows with τ, so its MSE is not flat over τ = 1, 4, 16, and the paired check says so."""
    text = (BASE.replace('paired = ["confidence"]', 'paired = ["staleness"]')
            .replace("staleness = 2\n", "")
            .replace("confidence = [0.9, 0.95]", "staleness = [1, 4, 16]")
            .replace('over = "confidence"', 'over = "staleness"'))
    _, _, [verdict] = _judged(text)
    assert verdict.verdict == VIOLATED
    assert verdict.evidence["common_random_numbers"] == "paired across staleness"
