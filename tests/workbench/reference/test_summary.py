"""The reference Dataset: its layout, and its Monte Carlo errors on draws with a known error."""

import numpy as np
import pytest

from simulators.seeding import generator
from workbench.core.phi import THETA, TestFunction
from workbench.models.gaussian import GaussianMeanModel
from workbench.reference import ReferenceSettings
from workbench.reference.chain import ChainRun, run_chains
from workbench.reference.summary import batch_means_error, summarise

NORM = TestFunction("norm", lambda position: np.linalg.norm(position, axis=-1, keepdims=True))


def test_layout_pads_narrower_test_functions_and_records_the_settings():
    model = GaussianMeanModel.generate(generator(51, "test-data"), 30, dim=3, true_mean=0.2)
    settings = ReferenceSettings(chains=3, draws=150, thin=2, warmup=40)
    run = run_chains(model, [THETA, NORM], settings, 9)
    assert run.values["theta"].shape == (3, 150, 3) and run.values["norm"].shape == (3, 150, 1)
    data = summarise(run, settings)
    assert data["mean"].dims == ("test_function", "component")
    assert list(data["test_function"].values) == ["theta", "norm"]
    assert data["mean"].sel(test_function="norm").isnull().values.tolist() == [False, True, True]
    assert data["acceptance_rate"].dims == ("chain",)
    assert '"thin": 2' in data.attrs["settings"] and data.attrs["step_size"] > 0
    both = np.maximum(data["mean_mc_error_ess"], data["mean_mc_error_batch_means"])
    np.testing.assert_array_equal(data["mean_mc_error"], both)


def test_errors_of_independent_draws_are_sd_over_root_n():
    """For i.i.d. N(0, 1) draws both error estimates should be 1/√n. The batch-means estimate
    rests on 4·44 batch means, so its relative spread is about 1/√350 ≈ 5 %; ±25 % is 5σ."""
    chains, draws = 4, 2_000
    values = generator(52, "test-iid").standard_normal((chains, draws, 2))
    expected = 1 / np.sqrt(chains * draws)
    np.testing.assert_allclose(batch_means_error(values), expected, rtol=0.25)
    run = ChainRun({"theta": values}, 0.1, np.ones(2), np.ones(chains),
                   np.zeros(chains, dtype=int), np.nan)
    data = summarise(run, ReferenceSettings(chains=chains, draws=draws))
    np.testing.assert_allclose(data["mean_mc_error_ess"].values[0], expected, rtol=0.25)
    assert float(data["rhat"].max()) == pytest.approx(1.0, abs=0.01)


class _Anisotropic:
    """U = Σ θ_j² / (2σ_j²) with σ = (0.01, 1): scales 100 apart, as in a posterior where some
    coordinates are pinned by the data and others only by the prior."""

    dim = 2
    scales = np.array([0.01, 1.0])

    def potential(self, theta):
        return 0.5 * np.sum((theta / self.scales) ** 2, axis=-1)

    def potential_gradient(self, theta):
        return theta / self.scales**2


def test_the_diagonal_metric_makes_scales_100_apart_mix_alike():
    """With the adapted metric both coordinates' variances are reproduced within 4σ of their
    own error and R-hat is below 1.01. Without it (M = I) the step is held to the small scale,
    the wide coordinate moves by about √(2h) ≈ 0.01 per step, and 8 chains started a unit apart
    still disagree after 2000 draws (R-hat far above 1.01)."""
    model = _Anisotropic()
    settings = ReferenceSettings(chains=8, draws=2_000, warmup=1_000)
    data = summarise(run_chains(model, [THETA], settings, 11), settings)
    variance = data["variance"].sel(test_function="theta").values
    error = data["variance_mc_error"].sel(test_function="theta").values
    assert np.all(np.abs(variance - model.scales**2) < 4 * error), (variance, error)
    assert float(data["rhat"].max()) < 1.01
    np.testing.assert_allclose(data["inverse_metric"], model.scales**2, rtol=0.3)
    plain = ReferenceSettings(chains=8, draws=2_000, warmup=1_000, metric="identity")
    assert float(summarise(run_chains(model, [THETA], plain, 11), plain)["rhat"].max()) > 1.1


def test_progress_counts_every_chain_step():
    model = _Anisotropic()
    settings = ReferenceSettings(chains=3, draws=700, thin=2, warmup=500)
    reported = []
    run_chains(model, [THETA], settings, 12, progress=reported.append)
    assert sum(reported) == 3 * (500 + 700 * 2)
    assert len(reported) == 2  # after 1000 steps, then the remaining 900 at the end
