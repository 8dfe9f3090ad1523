"""Seed 003's protocols in a study on a model without an oracle: ``[system] kind = "downpour"``
(Algorithm 1) and ``"elastic"`` (Appendix B), built by the same
:func:`workbench.systems.asynchronous.system.make_system` as ``downpour-period`` and
``elastic-vs-downpour``, replayed by the engine's protocol replay.

Reduce-to-serial equivalences, bit for bit: downpour with π = 1 is the asynchronous server with
the same workers, timing and seed (SGLD carries no state between steps); with one worker it is
so for a sampler with a momentum too, while with several workers each keeps its own momentum
(Algorithm 1), which the plain server's one chain cannot; elastic averaging with one chain and
no coupling is the serial chain."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bounds.verdict import HOLDS, VIOLATED
from tests.studies.refusals import assert_names
from workbench.run.runner import run_experiment
from workbench.studies.document import StudyError
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import loads

BASE = """\
[study]
name = "protocol-study"

[model]
kind = "logistic-regression"
n_train = 2000
n_test = 500
n_test_points = 200

[system]
kind = "asynchronous"

[sampler]
kind = "sgld"
step_size = 2e-5

[run]
burn_in = 0
n_iterations = 400
n_replicates = 6
n_evaluations = 40
n_checkpoints = 5
batch_size = 50

[sweep]
n_workers = [1, 3]

[[check]]
kind = "ordering"
over = "n_workers"
test_function = "log_loss"
"""
ASYNCHRONOUS = 'kind = "asynchronous"'


def _system(text: str, lines: str) -> str:
    return text.replace(ASYNCHRONOUS, lines)


def _run(text: str, sampler: str = "sgld", workers: str = "[1, 3]"):
    text = text.replace('kind = "sgld"', f'kind = "{sampler}"').replace(
        "n_workers = [1, 3]", f"n_workers = {workers}")
    experiment = StudyExperiment(loads(text, "<protocols>"))
    return run_experiment(experiment, experiment.configure(), seed=11)


def test_downpour_with_period_one_is_the_asynchronous_server_bit_for_bit():
    server = _run(BASE)
    downpour = _run(_system(BASE, 'kind = "downpour"\nperiod = 1'))
    np.testing.assert_array_equal(downpour["estimate"].values, server["estimate"].values)
    assert np.isfinite(server["estimate"].values).all()
    assert float(server["mean_staleness"].sel(n_workers=3)) > 1  # several workers: stale


@pytest.mark.parametrize("sampler", ["sghmc-euler", "psgld"])
def test_downpour_keeps_a_state_per_worker(sampler):
    """One worker: the same chain as the server's. Three: each worker's momentum or
    preconditioner is its own (seed 003 Algorithm 1), so the runs differ."""
    server = _run(BASE, sampler)
    downpour = _run(_system(BASE, 'kind = "downpour"\nperiod = 1'), sampler)
    np.testing.assert_array_equal(downpour["estimate"].sel(n_workers=1).values,
                                  server["estimate"].sel(n_workers=1).values)
    assert not np.array_equal(downpour["estimate"].sel(n_workers=3).values,
                              server["estimate"].sel(n_workers=3).values)


def test_elastic_with_one_uncoupled_chain_is_the_serial_chain():
    serial = _run(BASE, workers="[1]")
    elastic = _run(_system(BASE, 'kind = "elastic"\nperiod = 2\ncoupling_strength = 0.0'),
                   workers="[1]")
    np.testing.assert_array_equal(elastic["estimate"].values, serial["estimate"].values)


def test_elastic_pools_its_chains_and_counts_their_own_steps():
    elastic = _run(_system(BASE, 'kind = "elastic"\nperiod = 4\ncoupling_strength = 0.5'))
    np.testing.assert_array_equal(elastic["iterations_per_worker"].values,
                                  elastic["iterations"].values)
    assert np.isfinite(elastic["estimate"].values).all()
    # the chains are pooled: one estimate per replicate, as seed 003 Appendix B averages them
    assert set(elastic["estimate"].dims) == {"test_function", "n_workers", "checkpoint",
                                             "replicate"}


def test_a_longer_downpour_period_makes_pushes_staler_in_local_steps():
    """Staleness counts master versions; each push of period π carries π local steps."""
    one = _run(_system(BASE, 'kind = "downpour"\nperiod = 1'))
    four = _run(_system(BASE, 'kind = "downpour"\nperiod = 4'))
    assert float(one["mean_staleness"].sel(n_workers=1)) == 0
    assert float(four["mean_staleness"].sel(n_workers=3)) > 1
    assert not np.array_equal(one["estimate"].values, four["estimate"].values)


@pytest.mark.parametrize("lines, needle, words", [
    ('kind = "asynchronous"\nperiod = 2', "period = 2", ("period",)),
    ('kind = "downpour"\ncoupling_strength = 0.5', "coupling_strength", ("coupling_strength",)),
    ('kind = "elastic"\ncoupling_strength = 1.5', "coupling_strength",
     ("coupling_strength",)),
    ('kind = "elastic"\nperiod = 0', "period = 0", ("period",)),
    ('kind = "elastic"\nbudget = "downpour"', "budget", ("means nothing", "without an oracle")),
    ('kind = "downpour"\nprotocol = "elastic"', "protocol =", ("means nothing",)),
])
def test_a_protocol_key_that_does_not_fit_is_refused_naming_the_line(lines, needle, words):
    text = _system(BASE, lines)
    with pytest.raises(StudyError) as caught:
        StudyExperiment(loads(text, "<protocols>")).configure()
    assert_names(str(caught.value), text, needle, *words)


GAUSSIAN = """\
[study]
name = "gaussian-protocols"

[model]
kind = "gaussian-mean"
n_data = 500

[system]
kind = "protocol"
n_workers = 2
budget = "downpour"

[sampler]
kind = "sgld"
step_size = 1e-4

[run]
n_iterations = 40
n_replicates = 40
n_checkpoints = 4

[sweep]
protocol = ["downpour", "elastic"]
period = [2, 4]

[[check]]
kind = "oracle"
difference = "protocol"
"""


@pytest.mark.parametrize("old, new, needle, words", [
    ('kind = "protocol"', 'kind = "downpour"\ncoupling_strength = 0.5', "coupling_strength",
     ("coupling_strength", "elastic / protocol")),
    ('budget = "downpour"', 'budget = "shared"', "budget", ("budget", "per-chain")),
    ('budget = "downpour"', 'coupling = "strong"', "coupling =", ("unknown key",)),
    ('n_workers = 2', 'n_workers = 2\nstaleness = 3', "staleness", ("means nothing",
                                                                    "protocol oracle")),
    ('n_data = 500', 'n_data = 500\ndim = 2', "dim = 2", ("means nothing",)),
    ('kind = "sgld"', 'kind = "sghmc-euler"', 'kind = "sghmc-euler"', ("runs sgld",)),
    ('period = [2, 4]', 'period = [2, 4]\nstaleness = [1, 2]', "staleness = [1, 2]",
     ("means nothing",)),
    ('difference = "protocol"', 'difference = "n_workers"', "difference", ("sweep dim",)),
    ('protocol = ["downpour", "elastic"]', 'protocol = ["elastic"]\nn_data = [100, 200, 300]',
     "difference", ("two values",)),
    ('kind = "oracle"', 'kind = "invariance"\nover = "period"', 'kind = "invariance"',
     ("not a check of seed 003's protocols on the Gaussian mean", "oracle / envelope / rate")),
    ('kind = "protocol"', 'kind = "elastic"\nprotocol = "downpour"', 'protocol = "downpour"',
     ("means nothing", "protocol studies")),
])
def test_a_gaussian_protocol_key_that_does_not_fit_is_refused_naming_the_line(old, new, needle,
                                                                              words):
    text = GAUSSIAN.replace(old, new, 1)
    if 'kind = "elastic"' in new or 'kind = "downpour"' in new:
        text = text.replace('protocol = ["downpour", "elastic"]\n', "")
    if "n_data = [" in new:
        text = text.replace('difference = "protocol"', 'difference = "n_data"')
    with pytest.raises(StudyError) as caught:
        StudyExperiment(loads(text, "<protocols>")).configure()
    assert_names(str(caught.value), text, needle, *words)


def test_a_difference_check_without_a_protocol_system_is_refused_naming_the_line():
    text = ('[study]\nname = "g"\n[model]\nkind = "gaussian-mean"\n[system]\n'
            'kind = "constant"\n[sweep]\nstaleness = [1, 2]\n[[check]]\nkind = "oracle"\n'
            'difference = "staleness"\n')
    with pytest.raises(StudyError) as caught:
        loads(text, "<test>")
    assert_names(str(caught.value), text, "difference", "downpour or elastic")


def test_downpour_on_sharded_data_is_refused_naming_its_systems():
    text = ('[study]\nname = "g"\n[model]\nkind = "sharded-gaussian"\n[system]\n'
            'kind = "downpour"\n[[check]]\nkind = "oracle"\n')
    with pytest.raises(StudyError) as caught:
        loads(text, "<test>")
    assert_names(str(caught.value), text, 'kind = "downpour"',
                 "a sharded-gaussian study runs on traveling-chains / federated-rounds")


@pytest.fixture(scope="module")
def gaussian():
    experiment = StudyExperiment(loads(GAUSSIAN, "<gaussian>"))
    return experiment, run_experiment(experiment, experiment.configure(), seed=5)


def test_the_gaussian_mean_runs_both_protocols_against_their_exact_oracle(gaussian, tmp_path):
    """Seed 003 on the Gaussian mean in a study: the dim protocol, each point judged against
    its own oracle and the MSE difference at each π; elastic at downpour's budget runs
    n_iterations·π/P local steps per chain (40·2/2 = 40, 40·4/2 = 80), downpour n_iterations
    pushes. Elastic judged against a hundred times its exact MSE is the negative control."""
    experiment, dataset = gaussian
    assert dataset["estimate"].dims == ("protocol", "period", "test_function", "checkpoint",
                                        "replicate")
    last = dataset["iterations"].isel(checkpoint=-1)
    assert last.sel(protocol="downpour").values.tolist() == [40, 40]
    assert last.sel(protocol="elastic").values.tolist() == [40, 80]
    verdicts = experiment.checks(dataset)
    assert [v.check for v in verdicts[-2:]] == ["oracle/mse-difference/theta/period=2",
                                                "oracle/mse-difference/theta/period=4"]
    assert len(verdicts) == 3 * 4 + 2
    assert VIOLATED not in {v.verdict for v in verdicts}, [v.detail for v in verdicts]
    wrong = dataset.copy()  # elastic judged against a hundred times its exact MSE
    wrong["exact_mse"] = dataset["exact_mse"] * xr.DataArray([1, 100], dims="protocol")
    assert [v.verdict for v in experiment.checks(wrong)[-2:]] == [VIOLATED] * 2
    assert [p.name for p in experiment.figures(dataset, tmp_path)] == [
        "gaussian-protocols-oracle.png"]


def test_per_chain_budget_runs_n_iterations_on_every_elastic_chain():
    text = GAUSSIAN.replace('budget = "downpour"', 'budget = "per-chain"')
    experiment = StudyExperiment(loads(text, "<gaussian>"))
    config = experiment.configure()
    assert [experiment.resolve(config, p)["n_iterations"] for p in experiment.points(config)] \
        == [40] * 4
    assert [experiment.resolve(config, p)["system"] for p in experiment.points(config)] == \
        ["downpour"] * 2 + ["elastic"] * 2


def test_the_plan_counts_local_steps_per_push_and_per_chain():
    """Work (what --max-work limits and progress counts) is gradient evaluations: a downpour
    push is π local steps; elastic averaging runs P chains."""
    def work(lines: str) -> list[int]:
        experiment = StudyExperiment(loads(_system(BASE, lines), "<protocols>"))
        config = experiment.configure()
        return [experiment.work(config, point) for point in experiment.points(config)]

    server = work(ASYNCHRONOUS)
    assert server == [400 * 6] * 2
    assert work('kind = "downpour"\nperiod = 4') == [4 * w for w in server]
    assert work('kind = "elastic"\nperiod = 4') == [1 * server[0], 3 * server[1]]


SERVERS = BASE.replace('kind = "asynchronous"', 'kind = "asynchronous"\nn_workers = 2').replace(
    "burn_in = 0\nn_iterations = 400\nn_replicates = 6", "burn_in = 500\nn_iterations = 1000\n"
    "n_replicates = 48").replace("n_evaluations = 40", "n_evaluations = 50").replace(
    "n_workers = [1, 3]", "n_servers = [1, 2, 4]").replace(
    'kind = "ordering"\nover = "n_workers"',
    'kind = "slope"\nover = "n_servers"\nexpected = -1\nslope_margin = 0.75')


@pytest.fixture(scope="module")
def servers():
    experiment = StudyExperiment(loads(SERVERS, "<servers>"))
    return run_experiment(experiment, experiment.configure(), seed=3)


def test_pooled_servers_cut_the_variance_like_one_over_s(servers, tmp_path):
    """Seed 001 §3.3, Theorem 7: S servers, each with its own workers and chain, pooled at
    test time: the variance of φ̂_L falls like 1/S (seed 3, measured: slope −0.81 ± 0.20,
    `holds` within 0.75 of −1); a claimed slope of +1 is the negative control."""
    experiment = StudyExperiment(loads(SERVERS, "<servers>"))
    [verdict] = experiment.checks(servers)
    assert verdict.check == "slope/variance-vs-n_servers/log_loss"
    assert verdict.verdict == HOLDS, verdict.detail
    wrong = StudyExperiment(loads(SERVERS.replace("expected = -1", "expected = 1"), "<wrong>"))
    assert [v.verdict for v in wrong.checks(servers)] == [VIOLATED]
    assert [p.name for p in experiment.figures(servers, tmp_path)] == [
        "protocol-study-slope.png"]


def test_several_servers_under_a_protocol_are_refused_naming_the_field():
    text = _system(BASE, 'kind = "downpour"\nperiod = 2\nn_servers = 2')
    with pytest.raises(StudyError) as caught:
        StudyExperiment(loads(text, "<protocols>")).configure()
    assert_names(str(caught.value), text, "n_servers = 2",
                 "only the asynchronous system runs several servers")
