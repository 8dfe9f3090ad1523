import pytest

from simulators.seeding import generator
from workbench.models.gaussian import GaussianMeanModel


@pytest.fixture(scope="session")
def gaussian_model():
    """1000 points in d = 2 around 0, σ_x = σ₀ = 1 (the stale-gaussian setting, two coords)."""
    return GaussianMeanModel.generate(generator(123, "test-data"), 1000, 2, 0.0)


@pytest.fixture(scope="session")
def scalar_model():
    return GaussianMeanModel.generate(generator(321, "test-data"), 1000, 1, 0.5)

