"""Topic-model studies (:mod:`workbench.studies.topic_point`, seed 004 §4.2): a small study runs
every sampler on the simulated workers and its verdicts hold, with the random topics as the
perplexity check's negative control; the time-to-perplexity check on made-up curves holds on
its claim, is violated on its negation and inconclusive when the claimed-sooner sampler never
reaches the target; determinism; refusals naming the key and line."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from simulators.validation import InvalidParameter
from tests.studies.blocks import split_point
from tests.studies.refusals import refused_when_read
from workbench.run.runner import run_experiment
from workbench.studies import topic_judgements
from workbench.studies.files import built_in, loads
from workbench.studies.gaussian_judgements import Context
from workbench.studies.parts_experiment import experiment_of

#: a small LDA study in seconds: the shipped file's form
SMALL = """\
[study]
name = "tiny-lda"
[model]
kind = "lda"
n_topics = 4
document_prior = 0.5
topic_prior = 0.01
vocabulary_size = 60
n_documents = 400
n_held_out = 40
document_length = 40
topic_concentration = 0.05
[system]
kind = "topic-workers"
n_workers = 4
trajectory_length = 5
group_size = 2
[sampler]
topic_samplers = ["d-cc", "d-ci", "d-hybrid", "sgrld", "ad-lda", "async-lda"]
step_size = 0.005
gibbs_sweeps = 10
[run]
batch_size = 20
n_replicates = 3
time_horizon = 3e6
perplexity_times = 6
perplexity_sweeps = 10
[[check]]
kind = "perplexity"
perplexity_margin = 0.1
[[check]]
kind = "time-to-perplexity"
order = ["d-hybrid", "ad-lda"]
"""


def _run(text: str = SMALL, seed: int = 3) -> tuple:
    experiment = experiment_of(loads(text, "tiny.toml"))
    dataset = run_experiment(experiment, experiment.configure(), seed=seed)
    return experiment, dataset


@pytest.fixture(scope="module")
def small():
    return _run()


def test_a_small_study_runs_every_sampler_and_its_perplexity_check_has_a_negative_control(small):
    experiment, dataset = small
    assert dataset["perplexity"].dims == ("topic_sampler", "time", "replicate")
    assert dataset["topic_sampler"].values.tolist() == ["d-cc", "d-ci", "d-hybrid", "sgrld",
                                                         "ad-lda", "async-lda"]
    truth, control = float(dataset["true_perplexity"]), float(dataset["random_perplexity"])
    assert truth < control
    verdicts = {v.check: v for v in experiment.checks(dataset)}
    for sampler in ("sgrld", "ad-lda"):
        assert verdicts[f"perplexity/{sampler}"].verdict == HOLDS, verdicts
    # negative control: random topics' perplexity in place of every sampler's is caught
    broken = dataset.copy()
    broken["perplexity"] = xr.full_like(dataset["perplexity"], control)
    judged = {v.check: v for v in experiment.checks(broken)}
    assert all(judged[f"perplexity/{s}"].verdict == VIOLATED
               for s in dataset["topic_sampler"].values), judged
    assert "cost_gibbs_token" in dataset.attrs


def test_the_run_is_deterministic(small):
    _, dataset = small
    _, again = _run()
    np.testing.assert_array_equal(dataset["perplexity"].values, again["perplexity"].values)


def _curves(sooner: np.ndarray, later: np.ndarray, target: float = 10.0) -> xr.Dataset:
    """Two samplers' perplexities on a time grid 1..10, each replicate dropping from 20 to the
    target at the given times (index into the grid) and staying there; ``target`` is also the
    second sampler's (the target sampler's) final value."""
    times = np.arange(1.0, 11.0)
    values = np.full((2, times.size, sooner.size), 20.0)
    for row, reach in enumerate((sooner, later)):
        for r, at in enumerate(reach):
            if at is not None:
                values[row, int(at):, r] = target
    values[1, -1, :] = target
    return xr.Dataset({"perplexity": (("topic_sampler", "time", "replicate"), values),
                       "true_perplexity": ((), 9.0), "random_perplexity": ((), 50.0)},
                      coords={"topic_sampler": ["fast", "slow"], "time": times,
                              "replicate": np.arange(sooner.size)})


def _time_judged(dataset: xr.Dataset):
    ctx = Context("made-up", {"false_failure_rate": 0.01}, (), {}, 0)
    options = {"order": ["fast", "slow"], "target": "slow", "time_margin": 0.0, "where": {}}
    (verdict,) = topic_judgements.time_checks(dataset, ctx, options)
    return verdict


def _time_verdict(dataset: xr.Dataset) -> str:
    return _time_judged(dataset).verdict


def test_time_to_perplexity_holds_on_its_claim_and_is_violated_on_its_negation():
    sooner = np.array([1, 2, 1, 2, 1, 1, 2, 1])
    later = np.array([6, 7, 6, 8, 7, 6, 7, 6])
    assert _time_verdict(_curves(sooner, later)) == HOLDS
    assert _time_verdict(_curves(later, sooner)) == VIOLATED
    # the claimed-sooner sampler never reaching the target cannot hold
    never = np.array([None, 2, 1, 2, 1, 1, 2, 1], dtype=object)
    censored = _time_judged(_curves(never, later))
    assert censored.verdict == INCONCLUSIVE and censored.replicate_factor == math.inf
    assert censored.evidence["cannot_decide"].startswith(
        "fast did not reach the target by the horizon 10 in every replicate")
    assert "cannot_decide" not in _time_judged(_curves(sooner, later)).evidence


def test_times_to_target_are_first_crossings_or_infinite():
    dataset = _curves(np.array([3, None], dtype=object), np.array([5, 5]))
    times = topic_judgements.times_to_target(dataset["perplexity"], 10.0)
    np.testing.assert_array_equal(times, [[4.0, np.inf], [6.0, 6.0]])


@pytest.mark.parametrize(("old", "new", "needle", "words"), [
    ("n_topics = 4", "n_topics = 1", "n_topics", ("n_topics",)),
    ("document_prior = 0.5", "document_prior = 0", "document_prior", ("document_prior",)),
    ("topic_prior = 0.01", "topic_prior = -1", "topic_prior", ("topic_prior",)),
    ('order = ["d-hybrid", "ad-lda"]', 'order = ["d-hybrid", "gibbs"]', "order",
     ("sampler of the study",)),
    ('topic_samplers = ["d-cc"', 'topic_samplers = ["d-xx"', "topic_samplers",
     ("topic_samplers[0]",)),
    ("[run]", "[run]\nn_iterations = 10", "n_iterations", ("topic-model study",)),
])
def test_refusals_name_the_key_and_line(old, new, needle, words):
    refused_when_read(SMALL.replace(old, new, 1), needle, *words)


def test_groups_that_do_not_divide_the_workers_are_refused_when_configured():
    experiment = experiment_of(loads(SMALL.replace("group_size = 2", "group_size = 3"),
                                     "tiny.toml"))
    with pytest.raises(InvalidParameter, match="group_size"):
        experiment.configure()


def test_the_shipped_studies_read():
    for name in ("lda-perplexity",):
        assert built_in(name).name == name


def test_the_step_is_tuned_by_parallel_short_runs_and_kept():
    text = SMALL.replace("gibbs_sweeps = 10", "gibbs_sweeps = 10\nstep_candidates = [1e-4, "
                         "0.005]\ntuning_time = 1e6").replace(
        '"d-cc", "d-ci", "d-hybrid", "sgrld", "ad-lda", "async-lda"', '"d-hybrid", "ad-lda"')
    _, dataset = _run(text)
    scores = dataset["tuning_perplexity"].values
    assert dataset["step_candidate"].values.tolist() == [1e-4, 0.005]
    # the smaller step has barely left the random start in the short run: the larger wins
    assert scores[1] < scores[0]
    assert float(dataset["tuned_step_size"]) == 0.005


def test_a_perplexity_check_on_a_read_corpus_is_refused_when_configured():
    experiment = experiment_of(loads(SMALL.replace('kind = "lda"', 'kind = "lda"\ncorpus = '
                                                   '"reuters"'), "tiny.toml"))
    with pytest.raises(InvalidParameter, match="no true topics"):
        experiment.configure()


def test_the_reuters_example_runs_when_the_lda_package_is_installed():
    """The optional extra ``topics`` (examples/lda-reuters.toml at a fraction of its size)."""
    pytest.importorskip("lda")
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "examples" / "lda-reuters.toml").read_text()
    text = text.replace("time_horizon = 6e6", "time_horizon = 5e5").replace(
        "n_replicates = 6", "n_replicates = 2")
    experiment = experiment_of(loads(text, "reuters.toml"))
    dataset = run_experiment(experiment, experiment.configure(), seed=1)
    assert dataset.attrs["training_documents"] == 350
    assert np.isnan(float(dataset["true_perplexity"]))
    assert np.isfinite(dataset["perplexity"].values).all()
    assert len(experiment.checks(dataset)) == 2


@pytest.mark.parametrize(("name", "dims"), [("lda-workers", ("workers",)),
                                            ("lda-load-balancing", ("slowdown", "balancing"))])
def test_the_sweeping_examples_run_at_a_small_size(name, dims):
    """examples/lda-workers.toml and lda-load-balancing.toml (adaptive trajectories on slow
    workers) on a small corpus: every sweep point runs, every check gives a verdict per point."""
    from pathlib import Path

    from workbench import experiments

    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.toml"
    experiment = experiments.get(str(path))
    small = {"n_documents": 1200, "n_held_out": 40, "n_replicates": 2, "time_horizon": 4e5,
             "perplexity_times": 2, "perplexity_sweeps": 4, "gibbs_sweeps": 4}
    dataset = run_experiment(experiment, experiment.configure(small, quick=True), seed=2)
    assert set(dims) <= set(dataset["perplexity"].dims)
    points = int(np.prod([dataset.sizes[d] for d in dims]))
    samplers = dataset.sizes["topic_sampler"]
    assert len(experiment.checks(dataset)) == points * (samplers + 1)


def test_seed_004s_load_balancing_plan_gives_slow_workers_10_steps_and_fast_ones_d_times_10():
    from workbench.studies.topic_point import speed_factors, trajectory_length
    from workbench.systems.topics.dsgld import trajectory_plan

    config = {"n_workers": 20, "n_slow_workers": 10, "slowdown": 10.0, "trajectory_length": 10,
              "slow_trajectory_length": 10}
    adaptive = trajectory_length({**config, "balancing": "adaptive"})
    assert adaptive == 55.0  # τ̄ = 10·(10·10 + 10)/20
    plan = trajectory_plan(speed_factors(config), adaptive, "adaptive")
    np.testing.assert_array_equal(plan, [100] * 10 + [10] * 10)
    fixed = trajectory_length({**config, "balancing": "fixed"})
    np.testing.assert_array_equal(trajectory_plan(speed_factors(config), fixed, "fixed"),
                                  [55] * 20)
    assert trajectory_length({**config, "slow_trajectory_length": 0, "balancing": "fixed"}) == 10


#: SMALL with its step tuned, shorter, and its perplexity check alone (any samplers)
TUNED = SMALL[:SMALL.rindex("[[check]]")].replace(
    "gibbs_sweeps = 10", "gibbs_sweeps = 10\nstep_candidates = [1e-4, 0.005]\ntuning_time = 5e5"
).replace("time_horizon = 3e6", "time_horizon = 1e6")


@pytest.mark.parametrize(("samplers", "groups"), [
    ('"ad-lda", "d-hybrid", "sgrld"', ([0], [1, 2])),  # the tuning's record in a later group
    ('"d-cc", "async-lda", "sgrld"', ([0, 1], [2])),
    ('"ad-lda", "async-lda"', ([0], [1])),  # no sampler needs the step: it is tuned to record
])
def test_samplers_run_apart_finish_into_the_whole_point(samplers, groups):
    """Issue 35, every point splittable: a topic-model point's samplers, each from its own seed
    with the step tuned once per point, run by separate tasks and joined, give the point one
    task gives, bit for bit. Negative control: another seed's samplers give another point."""
    text = TUNED.replace('"d-cc", "d-ci", "d-hybrid", "sgrld", "ad-lda", "async-lda"', samplers)
    experiment = experiment_of(loads(text, "tiny.toml"))
    config = experiment.configure()
    [point] = experiment.points(config)
    assert experiment.replicate_blocks(config, point) == len(samplers.split(","))
    whole = experiment.run_point(config, point, 3)
    assert "tuned_step_size" in whole
    xr.testing.assert_identical(split_point(experiment, config, point, 3, groups), whole)
    with pytest.raises(AssertionError):
        xr.testing.assert_identical(split_point(experiment, config, point, 4, groups), whole)
