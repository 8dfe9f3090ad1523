"""Seed 001's real-model experiments (stale-blr-speedup, stale-nn-workers, multi-server) on
tiny configurations: refusal of bad configurations by field, the dims of their Datasets, their
verdict lists and figures, and a negative control for each new check kind (speed-up slope,
time-speed-up bend, falling loss, pooled-variance oracle). multi-server is a study of parts
(``gaussian``, ``logistic``): its parts' own keys carry their prefix."""

import numpy as np
import pytest
import xarray as xr

from bounds.verdict import HOLDS, VIOLATED
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.explore.results_browser import diagnostics_rows
from workbench.run.runner import run_experiment
from workbench.systems.asynchronous.speedup import fitted_bend, speedup_verdicts
from workbench.systems.asynchronous.system import predicted_time_speedup, saturation_workers

LOGISTIC = {"n_train": 400, "n_test": 200, "n_test_points": 50, "n_evaluations": 20,
            "n_checkpoints": 5}
TINY = {
    "stale-blr-speedup": {**LOGISTIC, "workers": [1, 2, 3], "n_iterations": 200,
                          "n_replicates": 10, "step_size": 5e-5},
    "stale-nn-workers": {"workers": [1, 2, 3], "iterations_per_worker": 20,
                         "n_replicates": 2, "n_evaluations": 10, "n_checkpoints": 4,
                         "n_test_points": 30, "hidden_sizes": [8], "filters": [2, 2],
                         "hidden_size": 8},
    "multi-server": {**{f"logistic_{k}": v for k, v in LOGISTIC.items()
                        if k != "n_checkpoints"}, "n_checkpoints": 5, "servers": [1, 2, 3],
                     "gaussian_n_iterations": 200, "gaussian_n_replicates": 50,
                     "logistic_n_iterations": 100, "logistic_n_replicates": 4,
                     "logistic_step_size": 5e-5},
}


@pytest.fixture(scope="module")
def datasets():
    out = {}
    for name, overrides in TINY.items():
        experiment = experiments.get(name)
        out[name] = run_experiment(experiment, experiment.configure(overrides), seed=7)
    return out


@pytest.mark.parametrize(("name", "overrides", "field"), [
    ("stale-blr-speedup", {"workers": [2, 4, 6]}, "workers"),
    ("stale-blr-speedup", {"workers": [1, 2]}, "workers"),
    ("stale-blr-speedup", {"n_replicates": 5}, "n_replicates"),
    ("stale-blr-speedup", {"data_source": "/no/such/a9a"}, "data_source"),
    ("stale-blr-speedup", {"latency": "uniform"}, "latency"),
    ("stale-blr-speedup", {"network_delay": -1.0}, "network_delay"),
    ("stale-nn-workers", {"network": ["rnn"]}, "network[0]"),
    ("stale-nn-workers", {"hidden_sizes": [0]}, "hidden_sizes[0]"),
    ("multi-server", {"servers": [1, 2, 2]}, "servers"),
    ("multi-server", {"gaussian_n_iterations": 0}, "gaussian_n_iterations"),
    ("multi-server", {"logistic_n_iterations": 10}, "logistic_n_iterations"),
])
def test_bad_configuration_names_the_field(name, overrides, field):
    with pytest.raises(InvalidParameter) as error:
        experiments.get(name).configure(overrides)
    assert error.value.field == field


@pytest.mark.parametrize(("name", "overrides", "field"), [
    ("stale-blr-speedup", {"n_checkpoints": 30, "n_evaluations": 20}, "n_checkpoints"),
    ("stale-blr-speedup", {"n_iterations": 10, "n_evaluations": 20}, "n_iterations"),
    # a study refuses it when configured, naming the expression it evaluated
    ("stale-nn-workers", {"iterations_per_worker": 5, "n_evaluations": 10, "n_checkpoints": 4},
     "n_iterations"),
])
def test_sizes_that_cannot_share_checkpoints_are_refused(name, overrides, field):
    experiment = experiments.get(name)
    with pytest.raises(InvalidParameter) as error:
        experiment.points(experiment.configure(overrides))
    assert error.value.field == field


def test_registered_with_quick_configurations():
    for name in TINY:
        experiment = experiments.get(name)
        assert experiment.configure(quick=True)
        assert experiment.points(experiment.configure(quick=True))


def test_dims_and_verdicts(datasets, tmp_path):
    blr = datasets["stale-blr-speedup"]
    assert dict(blr["estimate"].sizes) == {"workers": 3, "test_function": 2, "checkpoint": 5,
                                           "replicate": 10}
    assert blr["iterations_per_worker"].sel(workers=2).values[-1] == 100
    assert np.all(np.diff(blr["time"].values, axis=1) > 0)
    nn = datasets["stale-nn-workers"]
    assert dict(nn["mean"].sizes) == {"network": 2, "workers": 3, "test_function": 2,
                                      "checkpoint": 4}
    assert nn["iterations_per_worker"].sel(network="mlp").values[:, -1].tolist() == [20] * 3
    multi = datasets["multi-server"]
    assert dict(multi["estimate"].sizes) == {"servers": 3, "checkpoint": 5, "replicate": 50}
    assert dict(multi["logistic_estimate"].sizes) == {
        "logistic_servers": 3, "logistic_test_function": 2, "logistic_checkpoint": 5,
        "logistic_replicate": 4}
    # the pooled exact variance falls like 1/S up to the servers' different schedules
    ratio = multi["exact_variance"].isel(checkpoint=-1).values * [1, 2, 3]
    np.testing.assert_allclose(ratio / ratio[0], 1.0, rtol=0.1)
    for name, dataset in datasets.items():
        experiment = experiments.get(name)
        verdicts = experiment.checks(dataset)
        assert verdicts and all(np.isfinite(v.margin) or v.verdict for v in verdicts)
        assert all(path.exists() for path in experiment.figures(dataset, tmp_path))
    names = [v.check for v in experiments.get("stale-blr-speedup").checks(blr)]
    assert names == ["speed-up/iteration", "speed-up/slope", "speed-up/time-bend",
                     "theorem4/variance-at-L"]


def test_held_out_runs_store_diagnostics_with_every_server_a_chain(datasets):
    """The shared held-out run gives every experiment on it ESS, R-hat, MCSE per held-out φ
    and the KSD per replicate; a replicate of S servers is S chains (multi-server: 4 replicates
    give 4, 8, 12 chains, where pooling the servers first would give 4 every time); so does
    multi-server's Gaussian part."""
    blr = datasets["stale-blr-speedup"]
    assert blr["rhat"].dims == ("workers", "test_function")
    assert blr["ksd"].dims == ("workers", "replicate")
    assert (blr["diagnostic_chains"] == 10).all()
    nn = datasets["stale-nn-workers"]
    assert nn["ess_bulk"].dims == ("network", "workers", "test_function")
    assert nn["ksd"].dims == ("network", "workers", "replicate")
    multi = datasets["multi-server"]
    assert multi["logistic_diagnostic_chains"].values.tolist() == [4, 8, 12]
    assert multi["logistic_ksd"].dims == ("logistic_servers", "logistic_replicate")
    for dataset in datasets.values():
        ksd = [v for name, v in dataset.data_vars.items() if name.endswith("ksd")]
        assert ksd and all(bool((v > 0).all()) for v in ksd)
    # the Gaussian part's draws are diagnosed too, 50 replicates x S servers
    assert multi["diagnostic_chains"].values.tolist() == [50, 100, 150]
    assert multi["rhat"].dims == ("servers", "test_function")
    # the Experiment browser shows a prefixed part's diagnostics under the part's name
    rows = diagnostics_rows(multi)
    logistic = [row for row in rows if row.get("part") == "logistic"]
    assert len(logistic) == 3 * 2  # servers x held-out test functions
    assert [row["diagnostic_chains"] for row in logistic[::2]] == [4, 8, 12]
    gaussian = [row for row in rows if "part" not in row]
    assert [row["diagnostic_chains"] for row in gaussian] == [50, 100, 150]
    assert len(diagnostics_rows(blr)) == 3 * 2 and "part" not in diagnostics_rows(blr)[0]


def _curves(workers, exponent=1.0, bend=np.inf, n=12):
    """Variance c/(P·k)^exponent against iterations per worker k, times from min(P, bend)."""
    workers = np.asarray(workers, dtype=float)
    per_worker = np.geomspace(10, 1000, n)[None, :] / workers[:, None] * workers.max()
    variance = 1.0 / (workers[:, None] * per_worker) ** exponent
    times = per_worker * workers[:, None] / np.minimum(workers, bend)[:, None]
    return per_worker, variance, 0.01 * variance, times


def test_speedup_slope_and_bend_hold_on_exact_curves():
    workers = [1, 2, 4, 6, 9]
    verdicts = speedup_verdicts("s", workers, *_curves(workers, bend=5.0), z=3.0, bend=5.0)
    assert [v.verdict for v in verdicts] == [HOLDS] * 3
    assert verdicts[1].observed == pytest.approx(1.0, abs=1e-6)
    assert verdicts[2].evidence["fitted_bend"] == pytest.approx(5.0, rel=0.02)


def test_wrong_speedup_slope_is_violated():
    workers = [1, 2, 4, 6, 9]
    verdicts = speedup_verdicts("s", workers, *_curves(workers), z=3.0, bend=np.inf,
                                expected_slope=2.0)
    assert verdicts[1].verdict == VIOLATED


def test_wrong_time_bend_is_violated():
    workers = [1, 2, 4, 6, 9]
    # the system saturates at 3 workers; a latency model claiming 8 is wrong
    verdicts = speedup_verdicts("s", workers, *_curves(workers, bend=3.0), z=3.0, bend=8.0)
    assert verdicts[2].verdict == VIOLATED
    assert fitted_bend(workers, verdicts[2].evidence["time_speedup"],
                       [0.01] * 5) == pytest.approx(3.0, rel=0.02)


def test_predicted_bend_from_latencies():
    config = {"latency_mean": 1.0, "network_delay": 0.1, "server_update_time": 0.3}
    assert saturation_workers(config) == pytest.approx(5.0)
    assert predicted_time_speedup(config, [1, 4, 9]).tolist() == pytest.approx([1, 4, 5])
    assert saturation_workers({**config, "server_update_time": 0.0}) == np.inf


def test_rising_loss_is_violated_and_located(datasets):
    nn = datasets["stale-nn-workers"].copy(deep=True)
    loss = nn["mean"].loc[{"test_function": "log_loss"}]
    # losses 1.0, 0.5, 3.0 at the budget with tiny errors: falls from 1 to 2, rises at 3; in
    # every replicate too, as the workers pair them by their common starts
    loss[:, :, -1] = np.array([1.0, 0.5, 3.0])
    nn["mean_se"].loc[{"test_function": "log_loss"}] = 1e-3
    at = {"test_function": "log_loss", "checkpoint": nn["checkpoint"][-1]}
    spread = 1e-3 * np.random.default_rng(0).standard_normal(nn.sizes["replicate"])
    nn["estimate"].loc[at] = (xr.DataArray([1.0, 0.5, 3.0], dims="workers")
                              + xr.DataArray(spread, dims="replicate"))
    verdicts = [v for v in experiments.get("stale-nn-workers").checks(nn)
                if v.check.startswith("mlp/")]
    assert [v.verdict for v in verdicts] == [HOLDS, VIOLATED]
    assert "up to P = 2" in verdicts[0].detail
    assert verdicts[1].evidence["turning_point"] == 2


def test_pooled_variance_without_the_1_over_s_is_violated(datasets):
    multi = datasets["multi-server"].copy(deep=True)
    experiment = experiments.get("multi-server")
    right = {v.check: v.verdict for v in experiment.checks(multi)}
    assert right["gaussian/oracle/variance/S=3"] != VIOLATED
    # an oracle that forgets to divide by S (servers not pooled) must be caught
    multi["exact_variance"] = multi["exact_variance"] * multi["servers"]
    wrong = {v.check: v.verdict for v in experiment.checks(multi)}
    assert wrong["gaussian/oracle/variance/S=3"] == VIOLATED


def test_libsvm_pair_by_path(tmp_path):
    """``--set data_source=PATH`` reads PATH and PATH.t (seed 001's a9a, a9a.t) into the
    model."""
    from workbench.systems.asynchronous.models import logistic_model

    rng = np.random.default_rng(0)
    for path, rows in ((tmp_path / "pair", 30), (tmp_path / "pair.t", 12)):
        lines = [f"{rng.choice([-1, 1])} " + " ".join(
            f"{j}:1" for j in sorted(rng.choice(np.arange(1, 7), 3, replace=False)))
            for _ in range(rows)]
        path.write_text("\n".join(lines) + "\n")
    experiment = experiments.get("stale-blr-speedup")
    config = experiment.configure({"data_source": str(tmp_path / "pair"), "n_test_points": 5})
    model = logistic_model(experiment.name, config, seed=1)
    assert (model.n_data, model.dim, model.test_features.shape[0]) == (30, 6, 5)


def test_held_out_replicates_run_in_seeding_blocks():
    """A held-out point runs its replicates in seeding blocks of ``replicate_block``: the
    first R replicates of a larger run are the bits of a run of R (what ``--until-decided``'s
    later looks rely on), and a run too large for the memory budget in one block runs block
    by block, with the same bits."""
    from workbench.core.memory_budget import replay_memory_budget

    experiment, point = experiments.get("stale-blr-speedup"), {"workers": 2}
    tiny = TINY["stale-blr-speedup"]

    def estimate(n_replicates, replicate_block):
        config = experiment.configure({**tiny, "n_replicates": n_replicates,
                                       "replicate_block": replicate_block})
        return experiment.run_point(config, point, seed=7)["estimate"].values

    grown = estimate(20, 10)
    np.testing.assert_array_equal(estimate(10, 10), grown[..., :10])
    assert not np.array_equal(estimate(20, 20)[..., :10], grown[..., :10])  # other streams
    # one block of 20 replicates needs about 65 MiB to step, a block of 10 about 33 MiB
    with replay_memory_budget(40 << 20):
        np.testing.assert_array_equal(estimate(20, 10), grown)
        with pytest.raises(InvalidParameter, match="too small for this run"):
            estimate(20, 20)
