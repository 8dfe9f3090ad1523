"""The reference chain on a skewed target with exact moments: θ = log x, x ~ Gamma(a, 1).

U(θ) = e^θ - aθ, so E θ = ψ(a) and Var θ = ψ'(a) (digamma, trigamma). Two z-tests at z = 4
(false-failure rate below 1.3e-4 together) with the reference's own stated error.
"""

import numpy as np
from scipy import special

from bounds.checks import oracle_check
from bounds.verdict import VIOLATED
from workbench.core.phi import THETA
from workbench.reference import ReferenceSettings
from workbench.reference.stored import compute_reference


class _LogGamma:
    dim = 1

    def __init__(self, shape):
        self.shape = shape

    def potential(self, theta):
        return np.exp(theta[..., 0]) - self.shape * theta[..., 0]

    def potential_gradient(self, theta):
        return np.exp(theta) - self.shape


def test_reference_reproduces_log_gamma_moments():
    shape = 2.0
    settings = ReferenceSettings(chains=8, draws=3_000, warmup=500)
    reference = compute_reference(_LogGamma(shape), [THETA], settings, seed=21)
    for statistic, exact in (("mean", special.digamma(shape)),
                             ("variance", special.polygamma(1, shape))):
        verdict = oracle_check(statistic, float(reference[statistic][0, 0]),
                               float(reference[f"{statistic}_mc_error"][0, 0]), exact, 4.0,
                               margin=0.0)
        assert verdict.verdict != VIOLATED, verdict
    assert float(reference["rhat"].max()) < 1.01
    assert int(reference["divergent_proposals"].sum()) == 0
