"""Common random numbers on a model without an oracle (issue 33, item 2): ``[study] paired`` makes
the points of Bayesian logistic regression along its dims share the engine's noise and
minibatches (their starts come from one stream for every point), and the ``ordering``,
``invariance`` and ``slope`` checks along a paired dim judge the points' values jointly.

Exact: along a dim the chains do not read (``confidence``; constant latencies, so that the
schedule, which stays the point's, is the same at every point), paired points are the same chains,
so an ordering's paired difference is 0 ± 0 and the invariance holds exactly; unpaired (the
negative control) the same checks see independent chains. Along the workers, the paired
ordering's errors are smaller than the independent ones.

Without ``[study] paired`` the points still share their replicates' starts (one stream of
starts for every point) along the dims that leave the model, the replicates and the chains
pooled alone: the checks judge them as paired replicates there (``pair_common_starts = false``:
as independent), with a negative control of their own."""

from __future__ import annotations

import numpy as np
import pytest

from bounds.verdict import HOLDS, VIOLATED
from workbench.run.runner import run_experiment
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import loads

SEED = 3
BASE = """\
[study]
name = "paired-logistic"
paired = ["confidence"]

[model]
kind = "logistic-regression"
n_train = 500
n_test = 200
n_test_points = 100

[system]
kind = "asynchronous"
n_workers = 2
latency = "constant"         # a schedule the same at every point: the chains differ by noise

[sampler]
kind = "sgld"
step_size = 1e-4

[run]
burn_in = 0
n_iterations = 200
n_replicates = 20
n_evaluations = 20
n_checkpoints = 4
batch_size = 20

[sweep]
confidence = [0.9, 0.95, 0.99]

[[check]]
kind = "ordering"
over = "confidence"
test_function = "log_loss"

[[check]]
kind = "invariance"
over = "confidence"
test_function = "log_loss"

[[check]]
kind = "slope"
over = "confidence"
expected = 0.0
test_function = "log_loss"
"""
UNPAIRED = BASE.replace('paired = ["confidence"]\n', "")
#: judged as independent points (their replicates' common starts not paired)
INDEPENDENT = BASE.replace('paired = ["confidence"]\n', "pair_common_starts = false\n")


def _judged(text: str):
    experiment = StudyExperiment(loads(text, "<paired>"))
    dataset = run_experiment(experiment, experiment.configure(), SEED)
    return dataset, experiment.checks(dataset)


def test_paired_points_along_a_dim_the_chains_do_not_read_are_the_same_chains():
    dataset, verdicts = _judged(BASE)
    estimate = dataset["estimate"].isel(checkpoint=-1).sel(test_function="log_loss")
    np.testing.assert_array_equal(estimate.sel(confidence=0.9), estimate.sel(confidence=0.99))
    orderings = [v for v in verdicts if v.kind == "ordering"]
    [invariance] = [v for v in verdicts if v.kind == "invariance"]
    [slope] = [v for v in verdicts if v.kind == "slope"]
    assert len(orderings) == 2
    assert all(v.observed == 0 and v.mc_error == 0 for v in orderings)
    assert invariance.verdict == HOLDS and invariance.mc_error == 0
    assert slope.verdict == HOLDS
    for verdict in (*orderings, invariance, slope):
        assert verdict.evidence["common_random_numbers"] == "paired across confidence"
        assert verdict.evidence["paired_replicates"] == 20
        assert "paired replicates' covariance" in verdict.detail
    # negative control: chains on their own streams from common starts, judged paired by
    # their starts (errors > 0), and with pair_common_starts = false as independent
    unpaired, starts_only = _judged(UNPAIRED)
    last = unpaired["estimate"].isel(checkpoint=-1).sel(test_function="log_loss")
    assert not np.array_equal(last.sel(confidence=0.9), last.sel(confidence=0.99))
    assert all(v.mc_error > 0 and v.evidence["common_random_numbers"]
               == "starts common across confidence" for v in starts_only)
    assert all("Replicate r starts from the same draw at every confidence" in v.detail
               for v in starts_only)
    _, independent = _judged(INDEPENDENT)
    assert all(v.mc_error > 0 and "common_random_numbers" not in v.evidence
               for v in independent)


def test_a_paired_ordering_along_the_workers_has_smaller_errors_than_an_independent_one():
    text = (BASE.replace('paired = ["confidence"]', 'paired = ["n_workers"]')
            .replace("n_workers = 2\n", "")
            .replace("confidence = [0.9, 0.95, 0.99]", "n_workers = [1, 2, 4]")
            .replace('over = "confidence"', 'over = "n_workers"'))
    _, paired = _judged(text)
    _, independent = _judged(text.replace('paired = ["n_workers"]\n',
                                          "pair_common_starts = false\n"))
    ordered = [(a.mc_error, b.mc_error) for a, b in zip(paired, independent, strict=True)
               if a.kind == "ordering"]
    assert len(ordered) == 2
    assert all(0 < mine < 0.5 * theirs for mine, theirs in ordered)



def test_a_paired_ordering_claimed_the_wrong_way_is_violated():
    """Negative control: the test loss falls from one worker to two at this budget; claimed to
    rise, the paired ordering of that pair is violated."""
    text = (BASE.replace('paired = ["confidence"]', 'paired = ["n_workers"]')
            .replace("n_workers = 2\n", "")
            .replace("confidence = [0.9, 0.95, 0.99]", "n_workers = [1, 2, 4]")
            .replace('over = "confidence"', 'over = "n_workers"')
            .replace('kind = "ordering"\nover = "n_workers"',
                     'kind = "ordering"\nover = "n_workers"\ndirection = "rises"'))
    _, verdicts = _judged(text)
    [first] = [v for v in verdicts if v.check == "ordering/log_loss/rises/n_workers=1->2"]
    assert first.verdict == VIOLATED
    assert first.evidence["common_random_numbers"] == "paired across n_workers"


def test_a_paired_speed_up_family_judges_the_worker_counts_jointly():
    """Along the paired workers, Theorem 4's invariance of the variance at L takes the paired
    replicates' covariance, and the speed-ups the covariance of their crossings from a paired
    bootstrap: errors far smaller than independent curves give (on log S_4, 1.95 unpaired,
    0.064 paired); unpaired (the negative control) none says so."""
    text = (BASE.replace('paired = ["confidence"]', 'paired = ["n_workers"]')
            .replace("n_workers = 2\n", "")
            .replace("confidence = [0.9, 0.95, 0.99]", "n_workers = [1, 2, 4]"))
    text = text[:text.index("[[check]]")] + (
        '[[check]]\nkind = "speed-up"\nover = "n_workers"\ntest_function = "log_loss"\n')
    _, paired = _judged(text)
    _, independent = _judged(text.replace('paired = ["n_workers"]\n',
                                          "pair_common_starts = false\n"))
    [mine] = [v for v in paired if v.check.startswith("theorem4/variance-at-L/")]
    [theirs] = [v for v in independent if v.check.startswith("theorem4/variance-at-L/")]
    assert mine.evidence["common_random_numbers"] == "paired across n_workers"
    assert mine.evidence["paired_replicates"] == 20 and "log_covariance" in mine.evidence
    assert 0 < mine.mc_error < theirs.mc_error
    speedups = [v for v in paired if v.check.startswith("speed-up/")]
    unpaired = {v.check: v for v in independent}
    assert len(speedups) == 3
    for verdict in speedups:
        assert ("the crossings' errors come from a paired bootstrap over their 20 replicates"
                in verdict.detail)
        assert verdict.evidence["common_random_numbers"] == "paired across n_workers"
        assert 0 < verdict.mc_error < 0.1 * unpaired[verdict.check].mc_error
    assert "crossing_log_covariance" in speedups[0].evidence
    assert not any("share their random numbers" in v.detail or "common_random_numbers" in
                   v.evidence for v in independent)


def _synthetic_curves(efficiencies, replicates=200):
    """Paired variance curves of worker counts 1, 2, 4 (the same normals at every count and
    checkpoint) over a common number of updates L, variance 1/(L·e_P) with L/P iterations per
    worker, so the iteration speed-up is P·e_P, as a speed-up family reads them
    (:func:`workbench.systems.asynchronous.speedup.speedup_family`)."""
    import xarray as xr

    workers = np.array([1, 2, 4])
    updates = np.array([40.0, 80, 160, 320, 640, 1280])
    normals = np.random.default_rng(6).standard_normal(replicates)
    estimate = np.stack([normals / np.sqrt(updates * e)[:, None] for e in efficiencies])
    variance = estimate.var(axis=-1, ddof=1)
    squares = (estimate - estimate.mean(axis=-1, keepdims=True)) ** 2
    per_worker = updates / workers[:, None]
    dims = ("workers", "checkpoint")
    return xr.Dataset({
        "estimate": (dims + ("replicate",), estimate),
        "variance": (dims, variance),
        "variance_se": (dims, squares.std(axis=-1, ddof=1) / np.sqrt(replicates)),
        "iterations_per_worker": (dims, per_worker),
        "time": (dims, per_worker),
        "mean_staleness": ("workers", [0.0, 1.0, 3.0]),
        "n_valid": (dims, np.full(per_worker.shape, replicates))},
        coords={"workers": workers})


def test_a_paired_speed_up_family_that_falls_short_of_linear_is_violated():
    """Negative control of the paired family: efficiencies 0.7 and 0.5 at P = 2 and 4
    (speed-ups 1.4 and 2, slope 0.5; variances at the common L a factor 2 apart) are violated
    (iteration, slope and Theorem 4's invariance) with the paired errors; with speed-ups
    exactly P every one holds."""
    from bounds.verdict import z_for_family
    from workbench.studies.held_out_judgements import _paired_curves
    from workbench.systems.asynchronous.speedup import speedup_family

    margins = {"speedup_margin": 0.1, "slope_margin": 0.1, "bend_margin": 0.25,
               "invariance_margin": 0.25}
    z = z_for_family(0.001, 4)
    for efficiencies, expected in (((1.0, 0.7, 0.5), VIOLATED), ((1.0, 1.0, 1.0), HOLDS)):
        curves = _synthetic_curves(efficiencies)
        verdicts = {v.check.split("/")[-1]: v for v in speedup_family(
            "speed-up", "theorem4/variance-at-L", curves, "workers", z, bend=np.inf,
            margins=margins, n_replicates=200, detail="",
            paired=_paired_curves(curves, "workers", np.random.default_rng(0), False))}
        for name in ("iteration", "slope", "variance-at-L"):
            assert verdicts[name].verdict == expected, name
            assert verdicts[name].evidence["common_random_numbers"] == "paired across workers"


# ------------------------------------------------------------------ common starts alone
#: the workers swept without [study] paired: every point its own streams, replicate r of every
#: point the same start (one stream of starts for every point)
WORKERS = (BASE.replace('paired = ["confidence"]\n', "")
           .replace("n_workers = 2\n", "")
           .replace("confidence = [0.9, 0.95, 0.99]", "n_workers = [1, 2, 4]")
           .replace('over = "confidence"', 'over = "n_workers"'))


def _speed_up_study(text: str) -> str:
    return text[:text.index("[[check]]")] + (
        '[[check]]\nkind = "speed-up"\nover = "n_workers"\ntest_function = "log_loss"\n')


def test_common_starts_alone_pair_the_speed_ups_and_shrink_their_errors():
    """Without [study] paired, the workers' points share their replicates' starts alone: the
    speed-up family judges them as paired replicates (the crossings' covariance from the
    paired bootstrap), with errors a fraction of the independent ones that
    ``pair_common_starts = false`` gives (which say nothing of pairing)."""
    text = _speed_up_study(WORKERS)
    _, paired = _judged(text)
    _, independent = _judged(text.replace("[study]\n", "[study]\npair_common_starts = false\n"))
    theirs = {v.check: v for v in independent}
    assert len(paired) == 4
    for verdict in paired:
        assert verdict.evidence["common_random_numbers"] == "starts common across n_workers"
        assert "common_random_numbers" not in theirs[verdict.check].evidence
    for verdict in (v for v in paired if v.check.startswith("speed-up/")):
        assert 0 < verdict.mc_error < 0.5 * theirs[verdict.check].mc_error, verdict.check


def test_an_ordering_paired_by_its_starts_alone_is_violated_where_the_loss_rises():
    """Negative control of the starts' pairing: every replicate's held-out loss at two
    workers raised by 0.1 (about ten times the paired error of the pair, 0.009; not two of
    the independent one, 0.07) makes the claimed fall from one worker to two violated, judged
    paired by the starts; as independent points the same data cannot tell."""
    experiment = StudyExperiment(loads(WORKERS, "<starts>"))
    dataset = run_experiment(experiment, experiment.configure(), SEED)
    at = {"n_workers": 2, "test_function": "log_loss"}
    for name in ("estimate", "mean"):
        dataset[name].loc[at] = dataset[name].loc[at] + 0.1
    [paired] = [v for v in experiment.checks(dataset)
                if v.check == "ordering/log_loss/falls/n_workers=1->2"]
    assert paired.verdict == VIOLATED and paired.observed < -0.05
    assert paired.evidence["common_random_numbers"] == "starts common across n_workers"
    independent = StudyExperiment(loads(
        WORKERS.replace("[study]\n", "[study]\npair_common_starts = false\n"), "<starts>"))
    [theirs] = [v for v in independent.checks(dataset)
                if v.check == "ordering/log_loss/falls/n_workers=1->2"]
    assert theirs.verdict != VIOLATED and theirs.mc_error > 4 * paired.mc_error


@pytest.mark.parametrize(("change", "common"), [
    ("", ("n_workers",)),                                   # an asynchronous server's workers
    ('kind = "downpour"', ("n_workers",)),
    ('kind = "elastic"', ()),                               # a chain per worker
    ('kind = "asynchronous"\n[sweep]\nn_servers = [1, 2]', ("n_workers",)),
])
def test_the_dims_whose_points_share_their_starts(change, common):
    """A dim pairs the replicates by their starts where its points draw the same starts: the
    same model, replicates and chains pooled; elastic pools a chain per worker, and the
    servers pooled change the starts too."""
    from workbench.studies.held_out_point import common_start_dims

    text = WORKERS
    if change:
        system, _, sweep = change.partition("\n[sweep]\n")
        text = text.replace('kind = "asynchronous"', system, 1)
        text = text.replace("[sweep]\n", f"[sweep]\n{sweep}\n" if sweep else "[sweep]\n", 1)
    experiment = StudyExperiment(loads(text, "<starts>"))
    assert common_start_dims(experiment, experiment.configure()) == common


def test_a_swept_model_draws_its_own_starts():
    """stale-nn-workers sweeps the network (mlp, cnn) and the workers: its replicates share
    their starts along the workers only."""
    from workbench.experiments import get
    from workbench.studies.held_out_point import common_start_dims

    experiment = get("stale-nn-workers")
    assert common_start_dims(experiment, experiment.configure(quick=True)) == ("workers",)


@pytest.mark.parametrize(("text", "needle", "words"), [
    (BASE.replace("[study]\n", "[study]\npair_common_starts = 1\n"), "pair_common_starts",
     ("true or false",)),
    ("[study]\nname = \"g\"\npair_common_starts = false\n\n[run]\nn_iterations = 10\n",
     "pair_common_starts", ("means nothing here", "model without an oracle")),
])
def test_pair_common_starts_is_refused_where_it_cannot_apply(text, needle, words):
    from tests.studies.refusals import refused_when_read

    refused_when_read(text, needle, *words)


def _shipped_text(name: str) -> str:
    """A shipped study's text without its figure plug-in (which only shipped files name)."""
    import re

    from workbench.studies.library import DIRECTORY

    return re.sub(r"\nfigure = .*\n", "\n", (DIRECTORY / f"{name}.toml").read_text())


def test_a_study_of_parts_gives_pair_common_starts_to_its_parts_without_an_oracle():
    """multi-server's logistic part takes the study's ``pair_common_starts = false``; its
    Gaussian part, whose points share no random starts, keeps the default."""
    text = _shipped_text("multi-server").replace(
        "[study]\n", "[study]\npair_common_starts = false\n", 1)
    parts = {part.name: part.study.pair_common_starts for part in loads(text, "<parts>").parts}
    assert parts == {"gaussian": True, "logistic": False}


def test_pair_common_starts_is_refused_on_parts_that_share_no_starts():
    """downpour-period's parts are the Gaussian mean's protocols and logistic regression from
    Laplace starts: none draws random starts per replicate from one stream."""
    from tests.studies.refusals import refused_when_read

    text = _shipped_text("downpour-period").replace(
        "[study]\n", "[study]\npair_common_starts = false\n", 1)
    refused_when_read(text, "pair_common_starts", "means nothing here")


def test_a_study_of_parts_gives_paired_to_its_parts_or_refuses_it():
    """``[study] paired`` of a study of parts reaches every part (it was read and ignored):
    protocols-networks' downpour and elastic parts pair their workers; multi-server's pooled
    Gaussian part cannot pair its servers, so the line is refused, naming it."""
    from tests.studies.refusals import refused_when_read

    text = _shipped_text("protocols-networks").replace(
        "[study]\n", '[study]\npaired = ["workers"]\n', 1)
    assert [part.study.paired for part in loads(text, "<parts>").parts] == [("workers",)] * 2
    text = _shipped_text("multi-server").replace("[study]\n", '[study]\npaired = ["servers"]\n', 1)
    refused_when_read(text, "paired = ", "pooled-servers")


def test_a_dim_zipped_with_a_model_setting_does_not_share_its_starts():
    """The workers zipped with the network (``[sweep.zip]``): every worker count is another
    network, whose starts are its own; zipped with the step size instead, they share them."""
    from pathlib import Path

    from workbench.studies.held_out_point import common_start_dims

    text = (Path(__file__).resolve().parents[2] / "examples" / "network-workers.toml").read_text()
    text = text.replace('network = "mlp"\n', "")
    for zipped, common in (('network = ["mlp", "cnn"]', ()),
                           ("step_size = [0.001, 0.002]", ("n_workers",))):
        swept = text.replace("[sweep]\nn_workers = [1, 2, 4, 6, 9]",
                             f"[sweep.zip]\nn_workers = [1, 2]\n{zipped}")
        experiment = StudyExperiment(loads(swept, "<zipped>"))
        assert common_start_dims(experiment, experiment.configure(quick=True)) == common
