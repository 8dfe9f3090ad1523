"""One sweep point of a study on a model without an exact oracle: test functions against a
reference posterior.

The model is Bayesian logistic regression (seed 001 §5.1,
:func:`workbench.systems.asynchronous.models.logistic_model`) or the researcher's own
(:mod:`.user_code`), the same at every point: its data are keyed by the study and the seed. The
point runs the simulated asynchronous server with ``n_workers`` workers (seed 001 Appendix A)
for ``burn_in + n_iterations`` applied updates, replays the schedule with the study's sampler
over ``n_replicates`` chains (:func:`workbench.systems.asynchronous.run.held_out_blocks`) and keeps
φ̂_L, the average of φ over the draws of the last L updates, at log-spaced checkpoints, for
every test function: the model's held-out ones (predictive log-loss, accuracy) and the study's
``test_functions`` written in θ's components (:mod:`workbench.core.phi_expressions`).

The truth for these φ has no closed form: it is a reference posterior (:mod:`workbench.
reference`: HMC chains on the full-data potential, with their own Monte Carlo error and R-hat),
computed once per process and model, whose mean, error and R-hat per test function are kept with
every point (``reference_mean``, ``reference_mean_mc_error``, ``reference_rhat``), so that a
stored result is judged again without recomputing it (:mod:`.held_out_judgements`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import xarray as xr

from bounds.expressions import BoundSyntaxError
from simulators.seeding import generator
from workbench.core.phi_expressions import expression_test_function
from workbench.reference import array_digest, reference_posterior
from workbench.reference.parameters import REFERENCE_KEYS, reference_settings
from workbench.studies.schema import LANGUAGE_MODEL, LOGISTIC, NETWORK, PYTHON, SECTIONS
from workbench.studies.user_code import (
    UserCodeError,
    check_model,
    label_of,
    load_factory,
    user_sampler,
    user_test_functions,
)
from workbench.systems.asynchronous.models import (
    language_model,
    logistic_model,
    network_model,
    network_test_rows,
)
from workbench.systems.asynchronous.run import at_point, held_out_blocks, held_out_finish
from workbench.systems.asynchronous.summaries import held_out_summary
from workbench.systems.asynchronous.system import ELASTIC

#: what determines the model, its test functions and the reference: the same at every point
MODEL_KEYS = (tuple(f.name for f in SECTIONS["model"])
              + ("test_functions", "python_test_functions", "test_function_entry_points")
              + REFERENCE_KEYS)

#: what a point's starts depend on besides the study's one stream of starts and the chains it
#: pools (:func:`pooled_chains`): the model and the replicates
#: (:func:`workbench.systems.asynchronous.models.initial_positions`)
START_KEYS = MODEL_KEYS + ("n_replicates",)


def pooled_chains(config: dict) -> int:
    """The independent chains a replicate pools at test time: elastic's one per worker, else
    the servers'."""
    return config["n_workers"] if config["system"] == ELASTIC else config["n_servers"]


def common_start_dims(experiment, config: dict) -> tuple[str, ...]:
    """The sweep dims along which replicate r of every point starts from the same draw, so
    that the points' replicates are paired even where their engine streams are not.

    A point draws its starts from one stream for every point of the study
    (:func:`~workbench.systems.asynchronous.run.held_out_blocks`), by the model for the
    chains' shape; two points that agree on :data:`START_KEYS` therefore give replicate r the
    same start. A dim qualifies where every pair of the sweep's points that differ in it
    alone (and in the names zipped with it) agree on them and on the chains pooled (the
    servers, elastic's workers, a model setting or the replicate count swept change the
    draws; downpour's or an asynchronous server's workers, a step size or a latency do not).
    Random starts make the replicates' values correlated across such points
    (stale-blr-speedup's final log-loss 0.98 across its worker counts, benchmarks/README.md,
    *Common starts*)."""
    resolved = [(point, experiment.resolve(config, point))
                for point in experiment.points(config)]
    moving = {group[0]: set(group) for group in experiment.study.zipped}  # zipped: together
    common = []
    for dim in experiment.sweep_dims:
        starts: dict[str, set[str]] = {}
        for point, values in resolved:
            if dim not in point:
                continue
            others = json.dumps({k: v for k, v in point.items()
                                 if k not in moving.get(dim, {dim})}, sort_keys=True,
                                default=str)
            starts.setdefault(others, set()).add(json.dumps(
                [values.get(key) for key in START_KEYS] + [pooled_chains(values)],
                default=str))
        if starts and all(len(drawn) == 1 for drawn in starts.values()):
            common.append(dim)
    return tuple(common)


def make_model(experiment: str, config: dict, seed, search: Path | None):
    """The study's model: logistic regression, a digits network, a language model, or the
    researcher's factory called as ``factory(rng, **arguments)`` and probed for the protocol
    (:func:`.user_code.check_model`)."""
    if config["model"] == LOGISTIC:
        return logistic_model(experiment, config, seed)
    if config["model"] == NETWORK:
        return network_model(experiment, config, seed, config["network"])
    if config["model"] == LANGUAGE_MODEL:
        return language_model(experiment, config, seed)
    factory, label = load_factory(config, search)
    try:
        model = factory(generator(seed, experiment, "data"), **config["arguments"])
    except Exception as error:  # the user's constructor: its failure is theirs to read
        raise UserCodeError(f"{label}(rng, **{config['arguments']}) failed: "
                            f"{type(error).__name__}: {error}") from None
    check_model(model, label)
    return model


def test_functions(model, config: dict, label: str, search: Path | None) -> tuple:
    """The model's own held-out test functions, the study's expressions in θ, then the
    researcher's own (:func:`.user_code.user_test_functions`)."""
    own = tuple(model.test_functions()) if hasattr(model, "test_functions") else ()
    try:
        written = tuple(expression_test_function(text, model.dim)
                        for text in config["test_functions"])
    except BoundSyntaxError as error:
        raise UserCodeError(f"{error} ({label} has dimension {model.dim})",
                            key=("run", "test_functions")) from None
    functions = own + written + user_test_functions(config, search, model.dim)
    names = [f.name for f in functions]
    if not functions:
        raise UserCodeError(f"{label}: nothing to score: the model has no test_functions() "
                            "and [run] test_functions is empty")
    if len(set(names)) != len(names):
        raise UserCodeError(f"{label}: test functions share a name: {names}")
    return functions


def model_identity(config: dict, model, seed) -> dict:
    """What determines U and the φ (the reference's identity): the model's configuration and a
    digest of the positions' potentials at a fixed probe (so that a changed model, data or
    code never reuses a reference)."""
    probe = np.random.default_rng(0).standard_normal((4, model.dim))
    return {"model": {k: config[k] for k in MODEL_KEYS if k in config}, "seed": int(seed),
            "potential_at_probe": array_digest(np.asarray(model.potential(probe),
                                                          dtype=float))}


@lru_cache(maxsize=4)
def _model(experiment: str, seed: int, key: str, search: str | None):
    config = json.loads(key)
    model = make_model(experiment, config, seed, None if search is None else Path(search))
    label = label_of("model", config) or config["model"]
    return model, test_functions(model, config, label, None if search is None else Path(search))


@lru_cache(maxsize=4)
def _setup(experiment: str, seed: int, key: str, search: str | None):
    model, functions = _model(experiment, seed, key, search)
    reference = reference_posterior(model, model_identity(json.loads(key), model, seed),
                                    reference_settings(json.loads(key)), int(seed), functions)
    return model, functions, reference


def _key(config: dict) -> str:
    return json.dumps({k: config[k] for k in MODEL_KEYS if k in config}, sort_keys=True)


def check_code_of(experiment: str, config: dict, seed, search: Path | None) -> None:
    """Build the model and its test functions once, and the study's own sampler at the
    resolved ``config`` of one point, checking their protocols before any work."""
    model, _ = _model(experiment, int(seed), _key(config),
                      None if search is None else str(search))
    if config["sampler"] == PYTHON:
        user_sampler(config, search, model.dim)


def setup(experiment: str, config: dict, seed, search: Path | None):
    """(model, test functions, reference Dataset): built once per process and model."""
    return _setup(experiment, int(seed), _key(config), None if search is None else str(search))


def run_blocks(experiment: str, config: dict, point: dict, seed, search: Path | None,
               blocks, streams: dict | None = None) -> xr.Dataset:
    """Raw results of some of the point's replicate blocks (``blocks``; None: all), the same
    bits for every replicate whichever blocks run together
    (:func:`~workbench.systems.asynchronous.run.held_out_blocks`); ``streams``: what keys the
    engine's random numbers (None: the point; the study's common streams where it pairs
    dims)."""
    model, functions = _model(experiment, int(seed), _key(config),
                              None if search is None else str(search))
    sampler = user_sampler(config, search, model.dim) if config["sampler"] == PYTHON else None
    return held_out_blocks(experiment, config, point, seed, model,
                           n_workers=config["n_workers"], n_servers=pooled_chains(config),
                           n_updates=config["n_iterations"], burn_in=config["burn_in"],
                           test_functions=functions, sampler=sampler, blocks=blocks,
                           streams=streams)


def finish_point(experiment: str, config: dict, point: dict, seed, dims: tuple[str, ...],
                 search: Path | None, with_reference: bool, raw: xr.Dataset) -> xr.Dataset:
    """The point's φ̂_L per replicate, its summaries over replicates
    (:func:`~workbench.systems.asynchronous.summaries.held_out_summary`), the schedule's
    coordinates and, ``with_reference``, the reference's value of every φ (module docstring;
    a study whose checks compare its runs only with each other needs none), from the raw
    results of all its replicate blocks (:func:`run_blocks`)."""
    run = held_out_finish(raw)
    run = run.merge(held_out_summary(run["estimate"], config["confidence"]))
    if config["model"] == LOGISTIC:
        run.attrs["data_source"] = config["data_source"]
    if config["model"] == NETWORK and "test_point" in run.dims:  # which digits, which labels
        model, _ = _model(experiment, int(seed), _key(config),
                          None if search is None else str(search))
        run["test_row"] = ("test_point", network_test_rows(experiment, config, seed))
        run["test_label"] = ("test_point", model.test_labels)
    if not with_reference:
        return at_point(run, point, dims)
    _, _, reference = setup(experiment, config, seed, search)
    # an averaged prediction has no reference value (NaN): no chain's mean of φ behind it
    at = reference.sel(component=0).drop_vars("component").reindex(
        test_function=run["test_function"].values)
    run["reference_mean"] = ("test_function", at["mean"].values)
    run["reference_mean_mc_error"] = ("test_function", at["mean_mc_error"].values)
    run["reference_rhat"] = ("test_function", at["rhat"].values)
    run.attrs["reference_key"] = str(reference.attrs.get("store_key", ""))
    return at_point(run, point, dims)
