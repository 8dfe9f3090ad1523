"""A user-side model package for the SG-MCMC workbench: Bayesian probit regression.

See :mod:`my_model.probit` for the model and the factory protocol
(``ProbitRegression(rng, **arguments)``).
"""

from .probit import ProbitMinibatchGradient, ProbitRegression

__all__ = ["ProbitMinibatchGradient", "ProbitRegression"]
