"""The built-in ``protocols-networks`` (seed 003 Appendix C, Figures 1-2; issue 32) and what it
adds to every held-out study: draws kept at listed updates by the engine, thinning by simulated
wall-clock (samples from the master every R seconds), the samples' averaged prediction, and
schedules read ``factor`` times as stale (the negative control's counterfactual)."""

from __future__ import annotations

import numpy as np
import pytest

from bounds.verdict import HOLDS, VIOLATED
from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.downpour import DownpourSystem
from simulators.latency import LatencyModel, WorkerTiming
from tests.studies.refusals import refused_when_read
from workbench import experiments
from workbench.data.digits import digits
from workbench.engine.replay import replay
from workbench.models.classification import averaged_prediction_scores
from workbench.models.mlp import MultilayerPerceptron
from workbench.run.runner import run_experiment
from workbench.samplers.psgld import PSGLD
from workbench.studies import library
from workbench.studies.files import loads
from workbench.studies.held_out_point import make_model
from workbench.studies.parts_experiment import PartsExperiment
from workbench.systems.asynchronous.run import (
    pooled_prediction,
    prediction_sums,
    wall_clock_draws,
)

STUDY = library.DIRECTORY / "protocols-networks.toml"
TEXT = STUDY.read_text()
#: the study as a user's file: without its figure, which names the workbench's own code
USER_TEXT = "\n".join(line for line in TEXT.splitlines() if not line.startswith("figure ="))


def _model():
    data = digits()
    return MultilayerPerceptron(data.train_features[:200], labels=data.train_labels[:200],
                                hidden_sizes=(6,), n_classes=10,
                                test_features=data.test_features[:40],
                                test_labels=data.test_labels[:40])


def _replay(schedule, model, thin):
    start = 0.1 * np.random.default_rng(5).standard_normal((4, 1, model.dim))
    return replay(schedule, PSGLD(1e-3), model.minibatch_gradient(), n_updates=40,
                  n_replicates=4, initial_position=start, seed=11, batch_size=10,
                  test_functions=(), thin=thin, replicate_block=2)


def test_listed_updates_keep_the_draws_thinning_keeps_bit_for_bit():
    model = _model()
    schedule = AsyncServerSystem(3, WorkerTiming(LatencyModel("exponential", 1.0))
                                 ).simulate(40, seed=2)
    every = _replay(schedule, model, 1)
    thinned, listed = _replay(schedule, model, 4), _replay(schedule, model, list(range(4, 41, 4)))
    np.testing.assert_array_equal(thinned.draws, listed.draws)
    np.testing.assert_array_equal(thinned.draw_iterations, listed.draw_iterations)
    some = _replay(schedule, model, [7, 1, 33, 7])  # unsorted, repeated: kept once, in order
    np.testing.assert_array_equal(some.draw_iterations, [1, 7, 33])
    np.testing.assert_array_equal(some.draws, every.draws[:, :, [0, 6, 32]])
    with pytest.raises(validation.InvalidParameter, match="thin"):
        _replay(schedule, model, [0, 5])
    with pytest.raises(validation.InvalidParameter, match="thin"):
        _replay(schedule, model, [41])


def test_wall_clock_draws_are_the_updates_current_every_r_seconds_by_hand():
    # one worker, constant latency 1: update k is applied at time k (no network, no server time)
    schedule = AsyncServerSystem(1, WorkerTiming(LatencyModel("constant", 1.0))
                                 ).simulate(20, seed=0)
    times = schedule.update_times(20)[:, 0]
    np.testing.assert_allclose(times, np.arange(1, 21))
    config = {"sample_interval": 2.5, "n_evaluations": 6, "n_checkpoints": 3}
    updates, at = wall_clock_draws(schedule, config, 20, burn_in=0)
    np.testing.assert_allclose(at, [2.5, 5, 7.5, 10, 12.5, 15])
    np.testing.assert_array_equal(updates, [2, 5, 7, 10, 12, 15])
    # after a burn-in of 4 updates the clock starts at update 4's time
    updates, at = wall_clock_draws(schedule, {**config, "sample_interval": 0.5}, 20, burn_in=4)
    np.testing.assert_allclose(at, [4.5, 5, 5.5, 6, 6.5, 7])
    np.testing.assert_array_equal(updates, [4, 5, 5, 6, 6, 7])  # repeated between updates
    with pytest.raises(validation.InvalidParameter, match="sample_interval.*raise n_iterations"):
        wall_clock_draws(schedule, {**config, "sample_interval": 4.0}, 20, burn_in=0)
    with pytest.raises(validation.InvalidParameter, match="before the first update"):
        wall_clock_draws(schedule, {**config, "sample_interval": 0.5}, 20, burn_in=0)


def test_averaged_prediction_scores_by_hand():
    mean = np.array([[[0.7, 0.3], [0.4, 0.6], [0.9, 0.1]]])  # one replicate, M = 3, K = 2
    scores = averaged_prediction_scores(mean, np.array([0, 0, 1]))
    np.testing.assert_allclose(scores["averaged_log_loss"],
                               [-(np.log(0.7) + np.log(0.4) + np.log(0.1)) / 3])
    np.testing.assert_allclose(scores["averaged_error"], [2 / 3])


def test_the_averaged_prediction_pools_chains_and_draws_up_to_each_checkpoint():
    model = _model()
    draws = 0.3 * np.random.default_rng(1).standard_normal((3, 2, 7, model.dim))
    checkpoints = np.array([1, 4, 7])
    valid = np.array([True, False, True])
    scores, total, votes = prediction_sums(model, draws, checkpoints, len(draws))
    per_example = pooled_prediction(total, votes, valid, draws.shape[2])
    probabilities = model.held_out_predictions(draws)  # (replicate, server, draw, M, K)
    for c, count in enumerate(checkpoints):
        mean = probabilities[:, :, :count].mean(axis=(1, 2))
        expected = averaged_prediction_scores(mean, model.test_labels)
        for name in ("averaged_log_loss", "averaged_error"):
            np.testing.assert_allclose(scores[name][c], expected[name], rtol=1e-12)
    # per digit, over the valid replicates' 2 x 2 x 7 draws pooled
    kept = probabilities[valid].reshape(-1, *probabilities.shape[-2:])  # (draw, M, K)
    pooled = kept.mean(axis=0)
    np.testing.assert_allclose(per_example["predictive_entropy"],
                               -(pooled * np.log(pooled)).sum(axis=-1), rtol=1e-12)
    np.testing.assert_array_equal(per_example["predicted_class"], pooled.argmax(axis=-1))
    agree = (kept.argmax(axis=-1) == pooled.argmax(axis=-1)).mean(axis=0)
    np.testing.assert_allclose(per_example["disagreement"], 1 - agree, rtol=1e-12)
    assert 0 < per_example["disagreement"].max() < 1


def test_twice_as_stale_reads_each_version_twice_as_far_back():
    schedule = DownpourSystem(4, WorkerTiming(LatencyModel("exponential", 1.0))
                              ).simulate(200, seed=4)
    stale = schedule.update_staleness(200)
    doubled = schedule.with_staleness_scaled(2)
    twice = doubled.update_staleness(200)
    current = np.arange(200)[:, None]  # the version an update is applied to
    np.testing.assert_array_equal(twice, np.minimum(2 * stale, current))
    assert twice.mean() > 1.9 * stale.mean() > 0
    np.testing.assert_array_equal(schedule.with_staleness_scaled(1).version_read,
                                  schedule.version_read)
    np.testing.assert_array_equal(schedule.with_staleness_scaled(0).version_read,
                                  schedule.without_staleness().version_read)


@pytest.fixture(scope="module")
def quick():
    experiment = experiments.get("protocols-networks")  # with its figure plug-in
    return experiment, run_experiment(experiment, experiment.configure(quick=True), seed=2016)


def test_the_quick_study_samples_every_r_seconds_on_both_parts(quick):
    experiment, dataset = quick
    config = experiment.configure(quick=True)
    interval, count = config["sample_interval"], config["n_evaluations"]
    for prefix in ("", "elastic_"):
        times = dataset[prefix + "time"]
        # every point's checkpoints lie at the same wall-clock, whatever its worker count
        assert float(times.isel({prefix + "checkpoint": -1}).min()) == interval * count
        assert float((times - times.isel({prefix + "workers": 0})).__abs__().max()) == 0
        steps = dataset[prefix + "iterations"].isel({prefix + "checkpoint": -1})
        assert int(steps.sel({prefix + "workers": 4}).min()) > int(
            steps.sel({prefix + "workers": 1}).max()) or prefix  # downpour: 4 pushes a round


def test_the_averaged_prediction_is_no_worse_than_the_mean_per_draw_loss(quick):
    """Jensen: -log of a mean probability <= the mean of -log, for the same draws, every
    replicate and checkpoint (the per-draw φ̂_L pools the same chains' draws)."""
    _, dataset = quick
    for prefix in ("", "elastic_"):
        estimate = dataset[prefix + "estimate"]
        per_draw = estimate.sel({prefix + "test_function": "log_loss"})
        averaged = estimate.sel({prefix + "test_function": "averaged_log_loss"})
        assert bool((averaged <= per_draw + 1e-12).all())
        error = estimate.sel({prefix + "test_function": "averaged_error"})
        assert float(error.min()) >= 0 and float(error.max()) <= 1


def test_the_checks_judge_the_seeds_claim_and_its_negation_is_violated(quick):
    experiment, dataset = quick
    verdicts = {v.check: v.verdict for v in experiment.checks(dataset)}
    assert sorted(verdicts) == sorted(
        f"{part}/{network}/{what}-falls/P=1->4" for part in ("downpour", "elastic")
        for network in ("mlp", "cnn") for what in ("error", "nll", "loss"))
    assert HOLDS in verdicts.values()
    # negative control: the opposite claim (the error rises with P) where it holds here
    rises = TEXT.replace('kind = "ordering"', 'kind = "ordering"\ndirection = "rises"')
    opposite = {v.check: v.verdict for v in
                PartsExperiment(loads(rises, str(STUDY))).checks(dataset)}
    assert all(opposite[check] != HOLDS for check, verdict in verdicts.items()
               if verdict == HOLDS)
    assert VIOLATED in opposite.values()


def test_the_samples_own_nll_check_reads_log_loss_and_is_violated_when_four_workers_raise_it(
        quick):
    """Negative control of ``loss-falls``: downpour's per-draw held-out NLL (``log_loss``) at
    P = 4 raised by 10 nats, far beyond its Monte Carlo error, makes both networks'
    ``loss-falls`` violated and leaves every other check as judged (the full-size control, reads
    twice as stale as the schedule says, is ``benchmarks/twice_stale_control.py``)."""
    experiment, dataset = quick
    judged = {v.check: v for v in experiment.checks(dataset)}
    raised = dataset.copy(deep=True)
    at = {"workers": 4, "test_function": "log_loss"}
    for name in ("estimate", "mean"):  # downpour's workers pair their replicates' starts
        raised[name].loc[at] = raised[name].loc[at] + 10.0
    for verdict in experiment.checks(raised):
        if verdict.check.startswith("downpour/") and "/loss-falls/" in verdict.check:
            assert judged[verdict.check].verdict != VIOLATED
            assert verdict.verdict == VIOLATED and verdict.observed < -9
        else:
            assert verdict.verdict == judged[verdict.check].verdict, verdict.check


@pytest.mark.parametrize(("old", "new", "needle", "words"), [
    ("sample_interval = 5.0", "sample_interval = 0.0", "sample_interval = 0.0",
     ("sample_interval", "> 0")),
    ("sample_interval = 5.0", "sample_interval = -5.0", "sample_interval = -5.0",
     ("sample_interval", "> 0")),
    ('thinning = "wall-clock"\n', 'thinning = "seconds"\n', 'thinning = "seconds"',
     ("thinning",)),
    ("n_workers = \"workers\"\nperiod = 1\nlatency = \"gamma\"",
     "n_workers = 0\nperiod = 1\nlatency = \"gamma\"", "n_workers = 0", ("n_workers",)),
])
def test_bad_input_is_refused_naming_the_field(old, new, needle, words):
    refused_when_read(USER_TEXT.replace(old, new, 1), needle, *words)


def test_an_averaged_prediction_is_refused_on_a_model_without_one():
    text = (USER_TEXT.replace('kind = "network"', 'kind = "logistic-regression"')
            .replace("hidden_sizes = [50]\nfilters = [4, 8]\nhidden_size = 32\n", "")
            .replace('network = ["mlp", "cnn"]\n', ""))
    refused_when_read(text, "averaged_prediction = true", "averaged_prediction", "network")


def test_the_figure_draws_the_curves_and_the_uncertainty_of_the_held_out_digits(quick,
                                                                                tmp_path):
    experiment, dataset = quick
    at = dataset.sel(network="mlp", workers=4)
    config = experiment.configure(quick=True)
    n = int(config["n_test_points"])
    assert at["test_row"].size == n and len(set(at["test_row"].values.tolist())) == n
    # the stored rows and labels are the held-out digits the point's model scored
    part = experiment.study.parts[0]
    resolved = experiment.experiments[part.name].resolve(
        experiment.study.part_config(config, part), {"network": "mlp", "workers": 4})
    model = make_model("protocols-networks", resolved, 2016, None)
    np.testing.assert_array_equal(digits().test_features[at["test_row"].values],
                                  model.test_features)
    np.testing.assert_array_equal(at["test_label"].values, model.test_labels)
    entropy, disagreement = at["predictive_entropy"].values, at["disagreement"].values
    assert ((0 <= entropy) & (entropy <= np.log(10) + 1e-12)).all()
    assert ((0 <= disagreement) & (disagreement < 1)).all()
    # where every sample agrees, the prediction is the averaged one; wrong ones exist early on
    assert (at["predicted_class"].values != at["test_label"].values).any()
    paths = [p for p in experiment.figures(dataset, tmp_path)
             if p.name == "protocols-networks.png"]
    assert paths and paths[0].stat().st_size > 30_000


def test_twice_as_stale_changes_nothing_without_staleness_and_doubles_it_with_four(quick,
                                                                                   monkeypatch):
    """The counterfactual reaches the replay: with every read twice as stale, the one-worker
    points (staleness 0) are the same bits, and the four-worker points read twice as far back
    and end elsewhere (the measured full-size effect is in the study file's comment)."""
    import workbench.systems.asynchronous.run as held_out_run

    experiment, dataset = quick
    scheduled = held_out_run.schedule_for
    monkeypatch.setattr(held_out_run, "schedule_for",
                        lambda *a, **k: scheduled(*a, **k).with_staleness_scaled(2))
    doubled = run_experiment(experiment, experiment.configure(quick=True), seed=2016)
    one, four = {"workers": 1}, {"workers": 4}
    assert float(dataset["mean_staleness"].sel(four).min()) > 2
    np.testing.assert_allclose(doubled["mean_staleness"].sel(four),
                               2 * dataset["mean_staleness"].sel(four), rtol=0.01)
    np.testing.assert_array_equal(doubled["estimate"].sel(one), dataset["estimate"].sel(one))
    assert not np.allclose(doubled["estimate"].sel(four), dataset["estimate"].sel(four))
    # elastic chains read no stale parameters: the same bits at every worker count
    np.testing.assert_array_equal(doubled["elastic_estimate"], dataset["elastic_estimate"])
