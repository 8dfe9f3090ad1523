"""Bad input to the reference is refused early, naming the field."""

import numpy as np
import pytest

from simulators.validation import InvalidParameter
from workbench.core.phi import THETA, TestFunction
from workbench.models.gaussian import GaussianMeanModel
from workbench.reference import ReferenceSettings, reference_identity, reference_posterior
from workbench.reference.chain import run_chains


@pytest.mark.parametrize(("changes", "field"), [
    ({"method": "nuts"}, "method"),
    ({"leapfrog_steps": 3}, "leapfrog_steps"),  # MALA takes one
    ({"method": "hmc", "leapfrog_steps": 0}, "leapfrog_steps"),
    ({"chains": 0}, "chains"),
    ({"chains": 1}, "chains"),
    ({"chains": 2.5}, "chains"),
    ({"draws": 99}, "draws"),
    ({"thin": 0}, "thin"),
    ({"warmup": -1}, "warmup"),
    ({"step_size": 0.0}, "step_size"),
    ({"step_size": -0.1}, "step_size"),
    ({"step_size": float("nan")}, "step_size"),
    ({"warmup": 0}, "step_size"),  # no warm-up to adapt in: a fixed step is required
    ({"target_acceptance": 1.0}, "target_acceptance"),
    ({"target_acceptance": 0.0}, "target_acceptance"),
    ({"initial": float("inf")}, "initial"),
    ({"initial_spread": -1.0}, "initial_spread"),
])
def test_bad_settings_are_refused(changes, field):
    with pytest.raises(InvalidParameter, match=field) as error:
        ReferenceSettings(**changes)
    assert error.value.field == field


def test_bad_test_functions_are_refused():
    model = GaussianMeanModel(np.array([0.1, 0.2]))
    settings = ReferenceSettings(chains=2, draws=100, warmup=10)
    with pytest.raises(InvalidParameter, match="test_functions"):
        run_chains(model, [], settings, 0)
    with pytest.raises(InvalidParameter, match="distinct"):
        run_chains(model, [THETA, TestFunction("theta", np.abs)], settings, 0)


def test_a_start_where_the_potential_is_not_finite_is_refused():
    class Nowhere:
        dim = 1

        def potential(self, theta):
            return np.full(theta.shape[:-1], np.nan)

        def potential_gradient(self, theta):
            return np.zeros_like(theta)

    with pytest.raises(InvalidParameter, match="initial"):
        run_chains(Nowhere(), [THETA], ReferenceSettings(chains=2, draws=100), 0)


@pytest.mark.parametrize("identity", [{}, "gaussian", {"data": object()}])
def test_a_model_identity_that_cannot_key_the_store_is_refused(identity):
    with pytest.raises(InvalidParameter, match="model_identity"):
        reference_identity(identity, [THETA], ReferenceSettings(), 0)


def test_a_negative_seed_is_refused():
    model = GaussianMeanModel(np.array([0.1, 0.2]))
    with pytest.raises(InvalidParameter, match="seed"):
        reference_posterior(model, {"model": "m"}, ReferenceSettings(), -1)


def test_defaults_depend_on_the_method():
    assert ReferenceSettings().leapfrog_steps == 1
    assert ReferenceSettings().target_acceptance == 0.574
    hmc = ReferenceSettings(method="hmc")
    assert (hmc.leapfrog_steps, hmc.target_acceptance) == (10, 0.651)
