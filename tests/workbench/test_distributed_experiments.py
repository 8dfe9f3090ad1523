"""The distributed-data experiments end to end on small configurations: their verdicts, the
negative controls (uncorrected D-SGLD, DSGLD against the FSGLD oracle, coupling without the
noise correction), determinism, storage and refusal of bad configurations."""

import numpy as np
import pytest
import xarray as xr

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.run.runner import run_experiment
from workbench.stats.diagnostics import KSD_DRAWS, kernel_stein_discrepancy, spaced
from workbench.store.netcdf import read_netcdf, write_netcdf
from workbench.studies.limit_judgements import limit_checks, richardson_weights
from workbench.studies.sharded_judgements import relaxation_note, selections, stationary_check
from workbench.systems.distributed.windows import posterior_checks, window_oracle_checks

SMALL = {
    "fsgld-gaussian": {"shard_sizes": [40] * 5, "local_updates": [1, 10], "n_chains": 8,
                       "n_replicates": 3, "burn_in": 500, "n_iterations": 2000, "thin": 10,
                       "welling_teh_step_size": 1e-3, "grid_points": 11,
                       "centre_half_width": 3.0},
    "dsgld-imbalance": {"shard_sizes": [50] * 4 + [150] * 4,
                        "trajectory_lengths": [14] * 4 + [2] * 4, "batch_size": 20,
                        "welling_teh_step_size": 1.25e-5, "burn_in": 1000,
                        "n_iterations": 4000, "thin": 10},
    "dsgld-trajectory": {"shard_sizes": [100] * 4, "trajectory_length": [500, 10],
                         "batch_size": 20, "welling_teh_step_size": 5e-5, "burn_in": 2000,
                         "n_iterations": 4000, "n_replicates": 3, "thin": 10},
    "dsgld-load-balancing": {"shard_sizes": [50] * 8, "slowdown": [1.0, 5.0],
                             "n_slow_workers": 4, "slow_trajectory_length": 4,
                             "batch_size": 10, "welling_teh_step_size": 2.5e-5,
                             "burn_in": 2500, "n_iterations": 1000, "n_replicates": 3,
                             "initial_offset": 10.0, "thin": 5},
    "dsgld-coupling": {"shard_sizes": [100] * 8, "group_size": [1, 2, 4, 8],
                       "trajectory_length": 5, "batch_size": 20,
                       "welling_teh_step_size": 1.25e-5, "burn_in": 1500,
                       "n_iterations": 3000, "n_replicates": 3, "gradient_draws": 3000,
                       "thin": 10},
}


def _run(name, **overrides):
    experiment = experiments.get(name)
    config = experiment.configure({**SMALL[name], **overrides})
    return experiment, run_experiment(experiment, config, seed=11)


@pytest.fixture(scope="module")
def results():
    return {name: _run(name) for name in SMALL}


def _by_name(verdicts):
    return {v.check: v for v in verdicts}


def _assert_hold(verdicts, prefix=""):
    """A correct sampler is never violated; at these small test sizes a check may be unable
    to show equivalence within its margin (inconclusive), and then says how many replicates
    would decide it."""
    chosen = [v for v in verdicts if v.check.startswith(prefix)]
    failed = [(v.check, v.observed, v.expected, v.mc_error) for v in chosen
              if v.verdict == VIOLATED]
    assert not failed, failed
    assert all(v.detectable > v.margin for v in chosen if v.verdict == INCONCLUSIVE)


def test_every_distributed_experiment_is_listed_and_its_oracle_checks_hold(results):
    for name, (experiment, dataset) in results.items():
        assert name in experiments.EXPERIMENTS
        verdicts = experiment.checks(dataset)
        assert any(v.check.startswith("oracle/") for v in verdicts)
        _assert_hold(verdicts, "oracle/")


def test_fsgld_stationary_variance_holds_and_dsgld_against_the_fsgld_oracle_is_violated(
        results):
    experiment, dataset = results["fsgld-gaussian"]
    verdicts = experiment.checks(dataset)
    _assert_hold(verdicts)
    fsgld_value = float(dataset["stationary_second_moment"].sel(
        estimator="fsgld", local_updates=10).sum())
    control = stationary_check(dataset, "stationary/dsgld/T=10",
                               {"local_updates": 10, "estimator": "dsgld"}, 1e-3, 4,
                               expected=fsgld_value)
    assert control.verdict == VIOLATED, control
    names = _by_name(verdicts)
    assert names["growth/dsgld/stationary/T=1->T=10"].expected > 0
    assert dataset["gamma_squared"].sizes["shard"] == 5
    assert np.all(dataset["epsilon_squared"] < dataset["gamma_squared"])


def test_corrected_dsgld_targets_the_posterior_and_the_uncorrected_is_caught(results):
    experiment, dataset = results["dsgld-imbalance"]
    verdicts = experiment.checks(dataset)
    # the uncorrected arm's posterior and limit checks are the visible negative control, and
    # the corrected arm's finite-ε covariance is an explained finding: both stay in the list
    control = [v for v in verdicts if v.check.startswith(("posterior/uncorrected",
                                                          "limit/uncorrected"))]
    assert control and any(v.verdict == VIOLATED for v in control)
    assert all("negative control" in v.detail for v in control)
    finite = [v for v in verdicts if v.check.startswith("posterior/corrected/covariance")]
    assert finite and all("from minibatch noise" in v.detail for v in finite)
    _assert_hold([v for v in verdicts if v not in control and v not in finite])
    assert all(v.kind == "limit (exact oracle)" and "exact oracle alone" in v.detail
               for v in verdicts if v.check.startswith("limit/"))
    names = _by_name(verdicts)
    assert {f"limit/corrected/covariance/({j},{k})" for j, k in ((0, 0), (0, 1), (1, 1))} \
        <= set(names)
    control = posterior_checks(dataset, "uncorrected", {"correction": "uncorrected"}, 1e-3)
    assert any(v.verdict == VIOLATED and "/mean/" in v.check for v in control), control
    control = limit_checks(dataset, "uncorrected", {"correction": "uncorrected"}, 1e-3, 7)
    assert any(v.verdict == VIOLATED and "/mean/" in v.check for v in control), control


def test_the_run_s_own_step_taken_as_the_limit_shows_the_o_eps_excess(results):
    """Negative control of the extrapolation: with every smaller-step value replaced by the
    run's own, the limit is the finite-ε covariance, and its excess over s² is caught."""
    _, dataset = results["dsgld-imbalance"]
    flat = dataset.copy()
    for moment in ("mean", "second"):
        smaller = dataset[f"exact_window_{moment}_smaller_steps"]
        flat[smaller.name] = dataset[f"exact_window_{moment}"].expand_dims(
            step_divisor=dataset["step_divisor"]).transpose(*smaller.dims)
    control = limit_checks(flat, "corrected", {"correction": "corrected"}, 1e-3, 7)
    excess = [v for v in control if v.check.endswith(("(0,0)", "(1,1)"))]
    assert excess and all(v.verdict == VIOLATED and v.observed > v.expected for v in excess)


def test_a_burn_in_too_short_for_the_posterior_comparison_is_named(results):
    _, dataset = results["dsgld-imbalance"]
    assert "too short" not in relaxation_note(dataset)  # 5 relaxation times of 200 updates
    _, short = _run("dsgld-imbalance", burn_in=200, n_iterations=800)
    assert "lengthen burn_in" in relaxation_note(short)


def test_richardson_weights_extrapolate_polynomials_exactly():
    weights = richardson_weights([1, 1 / 2, 1 / 4])
    np.testing.assert_allclose(weights, [1 / 3, -2, 8 / 3])
    steps = np.array([1, 1 / 2, 1 / 4])
    assert weights @ (3 - 2 * steps + 5 * steps**2) == pytest.approx(3)
    with pytest.raises(ValueError, match="distinct positive"):
        richardson_weights([1, 1])


def test_long_trajectories_sit_at_the_mixture_of_local_posteriors(results):
    experiment, dataset = results["dsgld-trajectory"]
    names = _by_name(experiment.checks(dataset))
    assert names["distance/T=500"].verdict == HOLDS
    assert names["distance/T=500"].expected > 0  # the exact oracle agrees on the ordering
    # negative control: the reversed claim (long trajectories nearer the SGLD posterior)
    from workbench.studies.sharded_judgements import distance_check

    reversed_claim = distance_check(dataset, "distance/reversed", {"trajectory_length": 500},
                                    "sgld_posterior", "local_mixture", 0.001, 2)
    assert reversed_claim.verdict == VIOLATED


def test_balancing_reaches_the_target_sooner_with_the_same_accuracy(results):
    experiment, dataset = results["dsgld-load-balancing"]
    names = _by_name(experiment.checks(dataset))
    assert names["speed-up/D=1"].observed == 1.0  # same plan: the same run
    assert names["sooner/D=5"].verdict == HOLDS
    assert names["speed-up/D=5"].verdict == HOLDS
    assert names["accuracy/D=5"].verdict == HOLDS
    waiting = dataset["waiting_fraction"].sel(slowdown=5.0).mean("chain")
    assert float(waiting.sel(balancing="fixed")) > float(waiting.sel(balancing="adaptive"))


def test_coupling_divides_the_gradient_variance_and_keeps_the_posterior(results):
    experiment, dataset = results["dsgld-coupling"]
    verdicts = experiment.checks(dataset)
    _assert_hold(verdicts)
    slope = _by_name(verdicts)["slope/gradient-minibatch-vs-R"]
    assert abs(slope.observed + 1) < 0.05


def test_coupling_without_the_noise_correction_is_caught(results):
    """Seed 004's LDA practice (no extra noise) judged against the corrected sampler's oracle
    and against the posterior covariance: both must come out violated."""
    experiment, corrected = results["dsgld-coupling"]
    _, uncorrected = _run("dsgld-coupling", noise_correction=False, group_size=[4, 8])
    swapped = uncorrected.copy()
    for name in ("exact_window_mean", "exact_window_second"):
        swapped[name] = corrected[name].sel(group_size=[4, 8])
    groups = dict(selections(swapped, ("group_size",), {"group_size": "R"}))
    oracle = window_oracle_checks(swapped, list(groups.items()), 1e-3)
    assert any(v.verdict == VIOLATED for v in oracle)
    _assert_hold(window_oracle_checks(uncorrected, [("R=8", groups["R=8"])],
                                      1e-3))  # its own oracle knows the missing noise
    covariance = posterior_checks(uncorrected, "R=4", groups["R=4"], 1e-3, per_run=True)
    assert any(v.verdict == VIOLATED and "covariance" in v.check for v in covariance)


def test_results_are_identical_in_one_and_two_processes_and_survive_netcdf(results, tmp_path):
    experiment, dataset = results["dsgld-coupling"]
    config = experiment.configure(SMALL["dsgld-coupling"])
    parallel = run_experiment(experiment, config, seed=11, processes=2)
    xr.testing.assert_identical(parallel, dataset)
    path = write_netcdf(dataset, tmp_path / "coupling.nc")
    xr.testing.assert_identical(read_netcdf(path), dataset)


POINT_DIMS = {"fsgld-gaussian": ("local_updates", "estimator"),
              "dsgld-imbalance": ("correction",), "dsgld-trajectory": ("trajectory_length",),
              "dsgld-load-balancing": ("slowdown", "balancing"),
              "dsgld-coupling": ("group_size",)}


def test_every_distributed_run_stores_its_diagnostics_and_the_ksd_is_that_of_its_draws(
        results):
    """Every point and arm gets ESS, R-hat, MCSE per φ ∈ {θ, θ²} and component, and the KSD per
    replicate; replicate 0's KSD is recomputed from the stored post-burn-in samples with the
    posterior's exact score (every chain a server of diagnose's layout)."""
    for name, dims in POINT_DIMS.items():
        _, dataset = results[name]
        assert dataset["rhat"].dims == (*dims, "test_function", "component"), name
        assert dataset["ksd"].dims == (*dims, "replicate"), name
        assert dataset["test_function"].values.tolist() == ["theta", "theta_squared"]
        chains = dataset.sizes["replicate"] * dataset.sizes["chain"]
        assert (dataset["diagnostic_chains"] == chains).all(), name
        assert np.isfinite(dataset["ksd"]).all() and (dataset["ess_bulk"] > 0).all(), name
        if "samples" not in dataset:  # dsgld-load-balancing keeps error curves, not draws
            continue
        first = dataset.isel({dim: 0 for dim in dims})
        samples = first["samples"].values  # (chain, draw, d): replicate 0 after the burn-in
        kept = spaced(samples.shape[1], KSD_DRAWS // samples.shape[0])
        pooled = samples[:, kept].reshape(-1, samples.shape[-1])
        score = -(pooled - first["posterior_mean"].values) / float(first["posterior_variance"])
        assert float(first["ksd"][0]) == pytest.approx(
            kernel_stein_discrepancy(pooled, score), rel=1e-12), name
        # negative control: the draws' KSD against a shifted posterior is another number
        assert float(first["ksd"][0]) != pytest.approx(
            kernel_stein_discrepancy(pooled, score + 1.0), rel=1e-3), name


def test_the_ksd_separates_biased_arms_from_those_that_target_the_posterior(results):
    """Uncorrected D-SGLD (shard imbalance) and DSGLD with local updates (client drift) sample
    a biased law; their corrected counterparts target the posterior. Every replicate of a
    biased arm has a KSD above twice that of every replicate of its correct arm (seeded; the
    observed gap is 4x and 10x)."""
    _, imbalance = results["dsgld-imbalance"]
    ksd = imbalance["ksd"]
    assert ksd.sel(correction="uncorrected").min() > 2 * ksd.sel(correction="corrected").max()
    _, federated = results["fsgld-gaussian"]
    ksd = federated["ksd"]
    assert (ksd.sel(estimator="dsgld").min("replicate")
            > 2 * ksd.sel(estimator="fsgld").max("replicate")).all()


def test_figures_are_written(results, tmp_path):
    for name, (experiment, dataset) in results.items():
        paths = experiment.figures(dataset, tmp_path)
        assert paths and all(p.stat().st_size > 10_000 for p in paths), name


def test_a_one_dimensional_federated_run_draws_every_figure_but_the_planar_clouds(tmp_path):
    """``--set dim=1`` on fsgld-gaussian: seed 002's Figure 2 plots planar sample clouds, so it
    is left out; the error, constants and theorems figures are drawn (the run used to fail
    when drawing, after its results were stored)."""
    experiment, dataset = _run("fsgld-gaussian", dim=1)
    names = [p.name for p in experiment.figures(dataset, tmp_path)]
    assert names == ["fsgld-gaussian-error.png", "fsgld-gaussian-constants.png",
                     "fsgld-gaussian-theorems.png"]


@pytest.mark.parametrize("name, overrides, field", [
    ("fsgld-gaussian", {"shard_sizes": [10, 0]}, "shard_sizes[1]"),
    ("fsgld-gaussian", {"local_updates": [1, 30]}, "burn_in"),
    ("fsgld-gaussian", {"surrogate": "exact"}, "surrogate"),
    ("fsgld-gaussian", {"welling_teh_step_size": 0.0}, "welling_teh_step_size"),
    ("fsgld-gaussian", {"local_updates": [10, 1]}, "local_updates"),
    ("fsgld-gaussian", {"estimator": ["fsgld"]}, "estimator"),
    ("fsgld-gaussian", {"estimator": ["dsgld", "sgld"]}, "estimator[1]"),
    ("dsgld-trajectory", {"estimator": ["fsgld"]}, "estimator"),
    ("dsgld-trajectory", {"system": "federated-rounds"}, "system"),
    ("dsgld-trajectory", {"model": "gaussian-mean"}, "model"),
    ("dsgld-imbalance", {"trajectory_lengths": [10, 0] + [10] * 18}, "trajectory_lengths[1]"),
    ("dsgld-imbalance", {"trajectory_lengths": [10, 10]}, "trajectory_lengths"),
    ("dsgld-imbalance", {"correction": ["corrected", "half"]}, "correction[1]"),
    ("dsgld-imbalance", {"step_divisor": [1, 2]}, "step_divisor"),
    ("dsgld-imbalance", {"step_divisor": []}, "step_divisor"),
    ("dsgld-trajectory", {"trajectory_length": [0]}, "trajectory_length[0]"),
    ("dsgld-load-balancing", {"slowdown": [0.5]}, "slowdown[0]"),
    ("dsgld-load-balancing", {"n_slow_workers": 30}, "n_slow_workers"),
    ("dsgld-coupling", {"group_size": [0, 2]}, "group_size[0]"),
    ("dsgld-coupling", {"assignment": "random"}, "assignment"),
])
def test_bad_configurations_name_the_field(name, overrides, field):
    with pytest.raises(InvalidParameter) as error:
        experiments.get(name).configure(overrides)
    assert error.value.field == field


def test_seed002_theorem_envelopes_are_judged_and_a_borrowed_envelope_is_caught(results):
    """Theorems 1-2 with the data's γ_s², ε_s²: both envelope checks are reported with their
    fitted constants; Theorem 2's envelope fitted on FSGLD and applied to DSGLD (whose MSE the
    between-shard drift inflates) is the negative control and must be `violated`."""
    from bounds import registry
    from bounds.checks import envelope_check, fit_envelope
    from bounds.verdict import one_sided_z_for_family
    from workbench.store.netcdf import config_of
    from workbench.studies.step_envelope_judgements import grid_values

    experiment, dataset = results["fsgld-gaussian"]
    config = config_of(dataset)
    assert dataset["step_factor"].values.tolist() == [0.5, 1.0, 2.0]
    verdicts = _by_name(experiment.checks(dataset))
    for name, bound in (("envelope/theorem-1-dsgld", "seed002-theorem-1-dsgld"),
                        ("envelope/theorem-2-fsgld", "seed002-theorem-2-fsgld")):
        verdict = verdicts[name]
        assert verdict.kind == "envelope" and verdict.evidence["bound"] == bound
        assert len(verdict.evidence["envelope"]["coefficients"]) == 3
        assert verdict.evidence["n_held_out"] > 0
    theorem = registry.get("seed002-theorem-2-fsgld")
    values = grid_values(dataset, config, "fsgld")
    fsgld = dataset["bound_mse"].sel(estimator="fsgld")
    dsgld = dataset["bound_mse"].sel(estimator="dsgld")
    envelope = fit_envelope(theorem, values, fsgld, label="FSGLD, every grid point")
    z = one_sided_z_for_family(1e-3, int(np.isfinite(dsgld).sum()))
    borrowed = envelope_check("borrowed", envelope, values, dsgld,
                              dataset["bound_mse_se"].sel(estimator="dsgld"), z)
    assert borrowed.verdict == VIOLATED, borrowed
    own = envelope_check("own", envelope, values, fsgld,
                         dataset["bound_mse_se"].sel(estimator="fsgld"), z)
    assert own.verdict != VIOLATED, own  # this small run cannot show it within 10 %
