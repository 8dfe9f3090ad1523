"""Experiment ``real-vs-simulated`` at a tiny size: it runs real processes, records, calibrates,
checks and draws. No verdict is asserted on timing; the checks' logic is tested on a dataset
whose values are set by hand, with negative controls."""

import numpy as np
import pytest

from bounds.verdict import HOLDS, VIOLATED
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.experiments.real_vs_simulated.checks import real_vs_simulated_checks
from workbench.run.runner import run_experiment

TINY = {"workers": [1, 2, 3], "n_updates": 120, "simulated_factor": 3, "latency_mean": 0.002,
        "server_delay": 0.0005}


@pytest.fixture(scope="module")
def dataset():
    experiment = experiments.get("real-vs-simulated")
    return run_experiment(experiment, experiment.configure(TINY), seed=3)


def test_runs_checks_and_draws(dataset, tmp_path):
    assert list(dataset["workers"].values) == [1, 2, 3]
    assert dataset["complete"].values.tolist() == [1, 1, 1]
    assert dataset["real_staleness_count"].sum("staleness").values.tolist() == [120] * 3
    verdicts = real_vs_simulated_checks(dataset)
    assert [v.check for v in verdicts] == [
        "staleness/mean/P=1", "staleness/mean/P=2", "staleness/mean/P=3",
        "speedup/time/P=2", "speedup/time/P=3"]
    assert verdicts[0].verdict == HOLDS  # one worker is never stale, really and simulated
    assert "chi_square_p_value" in verdicts[1].evidence
    assert "fitted_bend_real" in verdicts[-1].evidence
    paths = experiments.get("real-vs-simulated").figures(dataset, tmp_path)
    assert all(path.exists() for path in paths)


def test_checks_on_set_values_with_negative_controls(dataset):
    agreeing = dataset.copy(deep=True)
    for name in ("mean_staleness", "time_speedup", "log_throughput_se", "mean_staleness_se"):
        agreeing[f"simulated_{name}"] = agreeing[f"real_{name}"]
    agreeing["real_mean_staleness_se"][:] = 0.01
    agreeing["simulated_mean_staleness_se"][:] = 0.01
    agreeing["real_log_throughput_se"][:] = 0.005
    agreeing["simulated_log_throughput_se"][:] = 0.005
    assert {v.verdict for v in real_vs_simulated_checks(agreeing)} == {HOLDS}
    wrong = agreeing.copy(deep=True)
    wrong["simulated_mean_staleness"] = wrong["real_mean_staleness"] + 2.0
    wrong["simulated_time_speedup"] = wrong["real_time_speedup"] * np.where(
        wrong["workers"] > 1, 1.6, 1.0)
    verdicts = {v.check: v.verdict for v in real_vs_simulated_checks(wrong)}
    assert verdicts["staleness/mean/P=2"] == VIOLATED
    assert verdicts["speedup/time/P=3"] == VIOLATED


@pytest.mark.parametrize(("overrides", "field"), [
    ({"workers": [2, 4, 8]}, "workers"),
    ({"staleness_bound": -2}, "staleness_bound"),
    ({"latency_mean": 0.0}, "latency_mean"),
    ({"sampler": "psgld"}, "sampler"),
])
def test_bad_configuration_names_the_field(overrides, field):
    with pytest.raises(InvalidParameter, match=field):
        experiments.get("real-vs-simulated").configure(overrides)
