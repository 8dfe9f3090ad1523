"""Real-processes studies (seed 001 Appendix A's server run for real, issue 17): the shipped
``real-vs-simulated`` at a tiny size runs real processes, records, calibrates, checks and draws;
the ``real-vs-simulated`` check's logic on values set by hand, with negative controls; and the
keys and combinations a real-processes study refuses, naming the key and the line. No verdict
is asserted on timing (the fixture test of what the seed fixes is in ``test_studies.py``)."""

import numpy as np
import pytest

from bounds.verdict import HOLDS, VIOLATED
from simulators.validation import InvalidParameter
from tests.studies.refusals import refused_when_read
from workbench import experiments
from workbench.run.runner import run_experiment
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import loads

TINY = {"workers": [1, 2, 3], "n_iterations": 120, "simulated_factor": 3,
        "latency_mean": 0.002, "server_update_time": 0.0005}


@pytest.fixture(scope="module")
def dataset():
    experiment = experiments.get("real-vs-simulated")
    return run_experiment(experiment, experiment.configure(TINY), seed=3)


def test_runs_alone_as_one_point_checks_and_draws(dataset, tmp_path):
    experiment = experiments.get("real-vs-simulated")
    assert experiment.runs_alone
    assert experiment.points(experiment.configure(TINY)) == [{}]
    assert list(dataset["workers"].values) == [1, 2, 3]
    assert dataset["complete"].values.tolist() == [1, 1, 1]
    assert dataset["real_staleness_count"].sum("staleness").values.tolist() == [120] * 3
    verdicts = experiment.checks(dataset)
    assert [v.check for v in verdicts] == [
        "staleness/mean/P=1", "staleness/mean/P=2", "staleness/mean/P=3",
        "speedup/time/P=2", "speedup/time/P=3"]
    assert verdicts[0].verdict == HOLDS  # one worker is never stale, really and simulated
    assert "chi_square_p_value" in verdicts[1].evidence
    assert "fitted_bend_real" in verdicts[-1].evidence
    paths = experiment.figures(dataset, tmp_path)
    assert [p.name for p in paths] == ["real-vs-simulated.png"]
    assert all(path.exists() for path in paths)


def test_checks_on_set_values_with_negative_controls(dataset):
    experiment = experiments.get("real-vs-simulated")
    agreeing = dataset.copy(deep=True)
    for name in ("mean_staleness", "time_speedup", "log_throughput_se", "mean_staleness_se"):
        agreeing[f"simulated_{name}"] = agreeing[f"real_{name}"]
    agreeing["real_mean_staleness_se"][:] = 0.01
    agreeing["simulated_mean_staleness_se"][:] = 0.01
    agreeing["real_log_throughput_se"][:] = 0.005
    agreeing["simulated_log_throughput_se"][:] = 0.005
    assert {v.verdict for v in experiment.checks(agreeing)} == {HOLDS}
    wrong = agreeing.copy(deep=True)
    wrong["simulated_mean_staleness"] = wrong["real_mean_staleness"] + 2.0
    wrong["simulated_time_speedup"] = wrong["real_time_speedup"] * np.where(
        wrong["workers"] > 1, 1.6, 1.0)
    verdicts = {v.check: v.verdict for v in experiment.checks(wrong)}
    assert verdicts["staleness/mean/P=2"] == VIOLATED
    assert verdicts["speedup/time/P=3"] == VIOLATED


@pytest.mark.parametrize(("overrides", "field"), [
    ({"workers": [2, 4, 8]}, "n_workers"),
    ({"workers": [1, 2]}, "n_workers"),
    ({"staleness_bound": -2}, "staleness_bound"),
    ({"latency_mean": 0.0}, "latency_mean"),
    ({"sampler": "psgld"}, "sampler"),
])
def test_bad_configuration_names_the_field(overrides, field):
    with pytest.raises(InvalidParameter, match=field):
        experiments.get("real-vs-simulated").configure(overrides)


BASE = """\
[study]
name = "real"

[model]
kind = "gaussian-mean"
n_data = 200

[system]
kind = "real-processes"
n_workers = "workers"
server_update_time = 0.001

[sampler]
kind = "sgld"
step_size = 1e-4

[run]
n_iterations = 50

[constants]
workers = 1

[sweep]
workers = [1, 2, 3]

[[check]]
kind = "real-vs-simulated"
"""


def test_the_base_study_reads_and_configures():
    experiment = StudyExperiment(loads(BASE, "<real>"))
    assert experiment.runs_alone
    assert experiment.points(experiment.configure()) == [{}]


@pytest.mark.parametrize(("old", "new", "needle", "words"), [
    ('kind = "gaussian-mean"\nn_data = 200', 'kind = "sharded-gaussian"', 'kind = "real-proc',
     ("a sharded-gaussian study runs on traveling-chains / federated-rounds",)),
    ("n_iterations = 50", "n_iterations = 50\nn_replicates = 4", "n_replicates",
     ("means nothing on a real-processes point",)),
    ("server_update_time = 0.001", "server_update_time = 0.001\nnetwork_delay = 0.1",
     "network_delay", ("means nothing on a real-processes point",)),
    ("server_update_time = 0.001", "server_update_time = 0.001\nstaleness = 2", "staleness = 2",
     ("means nothing on a real-processes point",)),
    ('kind = "real-vs-simulated"', 'kind = "oracle"', 'kind = "oracle"',
     ("'real-vs-simulated' checks only",)),
    ('kind = "real-vs-simulated"', 'kind = "real-vs-simulated"\nrate_margin = 0.1',
     "rate_margin", ("unknown key",)),
    ('kind = "real-vs-simulated"', 'kind = "real-vs-simulated"\nspeedup_margin = -1',
     "speedup_margin", ("speedup_margin",)),
    ("workers = [1, 2, 3]", "workers = [1, 2, 3]\nstep_size = [1e-4, 2e-4]", "step_size = [",
     ("sweeps one dim",)),
    ('kind = "sgld"', 'kind = "psgld"', 'kind = "psgld"', ("gaussian-mean runs",)),
])
def test_a_real_processes_key_that_does_not_fit_is_refused_naming_the_line(old, new, needle,
                                                                          words):
    refused_when_read(BASE.replace(old, new, 1), needle, *words)


@pytest.mark.parametrize("system", ["constant", "asynchronous"])
def test_real_processes_keys_and_checks_are_refused_on_other_systems(system):
    text = BASE.replace('kind = "real-processes"\nn_workers = "workers"\n'
                        'server_update_time = 0.001', f'kind = "{system}"', 1)
    text = text.replace("[sweep]\nworkers = [1, 2, 3]\n", "")
    refused_when_read(text, 'kind = "real-vs-simulated"', "real-processes studies")
    text = text.replace('kind = "real-vs-simulated"', 'kind = "oracle"').replace(
        f'kind = "{system}"', f'kind = "{system}"\nstaleness_bound = 2')
    refused_when_read(text, "staleness_bound", "it is a key of real-processes studies")
