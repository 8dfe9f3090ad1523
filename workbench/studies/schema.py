"""What a study file may say: its sections, their keys, defaults, meaning and validation.

Every key of ``[model]``, ``[system]``, ``[sampler]`` and ``[run]`` is a :class:`Field`: a
:class:`~workbench.config.Parameter` (the flat configuration name, default, help, validator)
plus the key it is written under in the file. Names are the same everywhere: the ``staleness``
of ``[system]`` is the ``--set staleness=...`` key, the sweep dim and the dashboard label; the
``kind`` of ``[model]``, ``[system]`` and ``[sampler]`` is the configuration key named after
its section (``sampler = "sgld"``).

A field marked ``expression`` may also be given as a string, evaluated per sweep point over
the other values and the ``[constants]`` (:mod:`workbench.studies.grid`), e.g.
``step_size = "C * staleness**(-2/3) * n_iterations**(-1/3)"`` (seed 001 §5.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulators import validation
from simulators.latency import LATENCY_KINDS
from workbench.config import Parameter
from workbench.experiments.validators import (
    at_least_one,
    at_least_two,
    finite,
    non_negative,
    non_negative_int,
    positive,
    rate,
)
from workbench.samplers import LINEAR_SAMPLER_NAMES
from workbench.test_functions import BUILTIN


def _probability(name, value):
    return validation.probability(name, value)


def _slowdown(name, value):
    if value < 1:
        raise validation.InvalidParameter(name, value, "must be >= 1 (a slowdown)")
    return value


@dataclass(frozen=True)
class Field:
    """A key of a study section: written as ``key``, configured as ``parameter.name``."""

    key: str
    parameter: Parameter
    expression: bool = False

    @property
    def name(self) -> str:
        return self.parameter.name


#: systems whose schedule is a fixed or i.i.d. staleness sequence, or a simulated server
SYSTEMS = ("constant", "uniform", "asynchronous")
MODELS = ("gaussian-mean",)

SECTIONS: dict[str, tuple[Field, ...]] = {
    "model": (
        Field("kind", Parameter("model", "gaussian-mean",
                                "model: the Gaussian mean (exact oracle, math.md §7)",
                                choices=MODELS)),
        Field("n_data", Parameter("n_data", 1000, "number of data points N", at_least_one)),
        Field("dim", Parameter("dim", 1, "dimension d of θ", at_least_one)),
        Field("true_mean", Parameter("true_mean", 0.0,
                                     "data are drawn from N(true_mean, noise_scale²)", finite)),
        Field("noise_scale", Parameter("noise_scale", 1.0, "likelihood standard deviation σ_x",
                                       positive)),
        Field("prior_scale", Parameter("prior_scale", 1.0, "prior standard deviation σ₀",
                                       positive)),
        Field("prior_mean", Parameter("prior_mean", 0.0, "prior mean m₀", finite)),
    ),
    "system": (
        Field("kind", Parameter("system", "constant",
                                "constant: every update has staleness τ; uniform: i.i.d. "
                                "uniform on {0..τ}; asynchronous: a simulated parameter server "
                                "with n_workers workers (seed 001 Appendix A)",
                                choices=SYSTEMS)),
        Field("staleness", Parameter("staleness", 1,
                                     "staleness τ (constant and uniform systems)",
                                     non_negative_int), expression=True),
        Field("n_workers", Parameter("n_workers", 1, "workers P of the asynchronous server",
                                     at_least_one), expression=True),
        Field("latency", Parameter("latency", "exponential",
                                   "distribution of one gradient computation time",
                                   choices=LATENCY_KINDS)),
        Field("latency_mean", Parameter("latency_mean", 1.0,
                                        "mean gradient computation time μ", positive)),
        Field("latency_shape", Parameter("latency_shape", 1.0,
                                         "lognormal σ or gamma shape of the latency", positive)),
        Field("server_update_time", Parameter("server_update_time", 0.3,
                                              "server time u per applied update", non_negative)),
        Field("network_delay", Parameter("network_delay", 0.1, "one-way message delay δ",
                                         non_negative)),
        Field("straggler_probability", Parameter(
            "straggler_probability", 0.0, "probability that a computation straggles",
            _probability)),
        Field("straggler_slowdown", Parameter(
            "straggler_slowdown", 1.0, "how many times longer a straggling computation takes",
            _slowdown)),
    ),
    "sampler": (
        Field("kind", Parameter("sampler", "sgld", "integrator", choices=LINEAR_SAMPLER_NAMES)),
        Field("step_size", Parameter("step_size", 0.001, "step size h (Chen convention)",
                                     positive), expression=True),
        Field("friction", Parameter("friction", 1.0, "SGHMC friction D (unused by SGLD)",
                                    positive)),
    ),
    "run": (
        Field("n_iterations", Parameter("n_iterations", 1000, "iterations L of every replicate",
                                        at_least_one), expression=True),
        Field("n_replicates", Parameter("n_replicates", 200, "independent runs R per point",
                                        at_least_two)),
        Field("replicate_block", Parameter("replicate_block", 50,
                                           "replicates per seeding block", at_least_one)),
        Field("n_checkpoints", Parameter("n_checkpoints", 30,
                                         "log-spaced sample counts at which φ̂_L is kept",
                                         at_least_one)),
        Field("initial_position", Parameter("initial_position", 1.0,
                                            "starting value θ₀ of every coordinate", finite)),
        Field("batch_size", Parameter("batch_size", 10, "minibatch size n", at_least_one)),
        Field("replacement", Parameter("replacement", True, "draw minibatches with replacement")),
        Field("test_function", Parameter("test_function", "theta_squared",
                                         "φ whose MSE the invariance and figures use",
                                         choices=tuple(BUILTIN))),
        Field("confidence", Parameter("confidence", 0.95,
                                      "level of the stored confidence intervals", rate)),
        Field("false_failure_rate", Parameter(
            "false_failure_rate", 0.001,
            "family-wise probability that a correct sampler fails a family of checks", rate)),
        Field("divergence_threshold", Parameter(
            "divergence_threshold", 1e6,
            "a replicate whose |θ| exceeds this is marked diverged and left out", positive)),
        Field("n_draws", Parameter("n_draws", 0, "equally spaced draws kept per replicate "
                                                 "(0: none)", non_negative_int)),
    ),
}

#: sections holding fields; the others are free-form (constants, sweep, quick, check, bound)
FIELD_SECTIONS = tuple(SECTIONS)
OTHER_SECTIONS = ("study", "constants", "sweep", "quick", "check", "bound")
STUDY_KEYS = ("name", "summary", "source")


def fields() -> dict[str, Field]:
    """Every field by its flat configuration name."""
    return {f.name: f for section in SECTIONS.values() for f in section}


def section_of(name: str) -> str:
    return next(s for s, group in SECTIONS.items() if any(f.name == name for f in group))
