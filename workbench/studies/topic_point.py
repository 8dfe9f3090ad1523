"""One sweep point of a topic-model study: seed 004 §4.2's samplers for LDA on simulated workers.

The corpus is generated with known topics (:func:`workbench.data.corpus.generate_corpus`), the
``lda`` package's Reuters stories (:func:`workbench.data.corpus.reuters`) or read from UCI
bag-of-words files (:func:`workbench.data.corpus.read_uci`); a read corpus's last
``n_held_out`` documents are held out; each held-out document is split 90/10 for
document-completion perplexity (:func:`workbench.models.lda.perplexity`), and the training
documents into ``n_workers`` shards, one a worker. The last ``n_slow_workers`` workers are
``slowdown`` times slower (seed 004 Figure 7's (1:D)).

Every sampler of ``topic_samplers`` then runs for ``time_horizon`` of simulated time, timed by
the study's one cost model (:class:`workbench.systems.topics.cost.CostModel`), fixed before any
run: D-SGLD on traveling chains with complete coupling (``d-cc``), independent chains
(``d-ci``) or groups of ``group_size`` (``d-hybrid``), averaging at the end of every trajectory
(:func:`workbench.systems.topics.dsgld.run_dsgld`); SGRLD on the first worker (``sgrld``);
AD-LDA and Async-LDA on all workers and collapsed Gibbs on the first
(:mod:`workbench.systems.topics.counts`, :mod:`workbench.systems.topics.gibbs`). Kept per
sampler, ``perplexity_times`` evaluation time and replicate: the held-out perplexity of the
topics holding at that time; per sampler and replicate, on a generated corpus, the mean total
variation distance of its final topics from the true ones after Hungarian matching
(``topic_distance``); and, the same estimator on the same split, the true topics' perplexity and
that of random topics (``true_perplexity``, ``random_perplexity``: the yardstick and its
negative control).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from simulators import validation
from simulators.seeding import derive
from workbench.run.experiment import point_key
from workbench.systems.topics.parameters import (
    GENERATED_CORPUS,
    MODEL_PARAMETERS,
    REUTERS_CORPUS,
)

if TYPE_CHECKING:
    import xarray as xr

#: the fields that determine the corpus, its split and the shards: the same at every point
#: that shares them
DATA_KEYS = (*(p.name for p in MODEL_PARAMETERS), "n_workers")
#: the observed fraction of each held-out document (seed 004 §4.2: a 90/10 split)
OBSERVED_FRACTION = 0.9


@dataclass(frozen=True)
class TopicData:
    """The training documents, their shards, the held-out split and, for a generated corpus,
    the true topics (else ``None``)."""

    training: object
    shards: list
    split: object
    true_topics: np.ndarray | None


def make_data(experiment: str, config: dict, seed) -> TopicData:
    """The study's corpus, split and shards (module docstring)."""
    from workbench.data import corpus

    if config["corpus"] == GENERATED_CORPUS:
        generated = corpus.generate_corpus(
            n_topics=config["n_topics"], vocabulary_size=config["vocabulary_size"],
            n_documents=config["n_documents"], n_held_out=config["n_held_out"],
            document_length=config["document_length"], alpha=config["document_prior"],
            topic_concentration=config["topic_concentration"],
            seed=derive(seed, experiment, "corpus"))
        training, held_out, truth = generated.training, generated.held_out, generated.topics
    else:
        documents = (corpus.reuters() if config["corpus"] == REUTERS_CORPUS else
                     corpus.read_uci(config["corpus"], config["vocabulary_file"] or None))
        n_held_out = config["n_held_out"]
        if n_held_out >= documents.n_documents:
            raise validation.InvalidParameter(
                "n_held_out", n_held_out, f"must leave training documents: the corpus has "
                                          f"{documents.n_documents}")
        cut = documents.n_documents - n_held_out
        training = documents.subset(np.arange(cut))
        held_out = documents.subset(np.arange(cut, documents.n_documents))
        truth = None
    corpus.check_vocabulary(training, held_out)
    split = corpus.split_held_out(held_out, observed_fraction=OBSERVED_FRACTION,
                                  seed=derive(seed, experiment, "split"))
    shards = corpus.shard_documents(training.n_documents, config["n_workers"],
                                    derive(seed, experiment, "shards"))
    return TopicData(training, shards, split, truth)


@lru_cache(maxsize=2)
def _setup(experiment: str, seed: int, key: str) -> TopicData:
    return make_data(experiment, json.loads(key), seed)


def setup(experiment: str, config: dict, seed) -> TopicData:
    """:func:`make_data`, once per process and data."""
    key = json.dumps({k: config[k] for k in DATA_KEYS}, sort_keys=True)
    return _setup(experiment, int(seed), key)


def cost_model(config: dict):
    """The study's declared cost model."""
    from workbench.systems.topics.cost import CostModel

    return CostModel(config["cost_gibbs_token"], config["cost_sgrld_token"],
                     config["cost_topic_entry"], config["cost_message_entry"])


def speed_factors(config: dict) -> np.ndarray:
    """1 for every worker but the last ``n_slow_workers``, which are ``slowdown`` times
    slower."""
    speeds = np.ones(config["n_workers"])
    if config["n_slow_workers"]:
        speeds[-config["n_slow_workers"]:] = 1.0 / config["slowdown"]
    return speeds


def groups(name: str, config: dict) -> tuple[int, ...]:
    """The coupling groups of a D-SGLD sampler: all chains (d-cc), none (d-ci), or groups of
    ``group_size`` (d-hybrid)."""
    n_workers = config["n_workers"]
    if name == "d-cc":
        return (n_workers,)
    if name == "d-ci":
        return (1,) * n_workers
    return (config["group_size"],) * (n_workers // config["group_size"])


def trajectory_length(config: dict) -> float:
    """D-SGLD's trajectory length: ``trajectory_length``, or with ``slow_trajectory_length``
    seed 004 §4.2's load-balancing plan (10 on a slow worker, D·10 on a fast one: the balanced
    plan's mean τ̄, and round(τ̄) on every worker of the fixed plan;
    :func:`workbench.systems.distributed.balancing.plan_lengths`)."""
    if not config["slow_trajectory_length"]:
        return config["trajectory_length"]
    from workbench.systems.distributed.balancing import plan_lengths

    mean, fixed = plan_lengths(config)
    return mean if config["balancing"] == "adaptive" else fixed


def chain_steps(config: dict) -> int:
    """SGRLD steps one chain makes within the time horizon on a full-speed worker, for a
    minibatch of ``batch_size`` documents of ``document_length`` tokens: the plan's count of a
    replicate's updates."""
    step = cost_model(config).sgrld_step(config["batch_size"] * config["document_length"],
                                         config["gibbs_sweeps"], config["n_topics"],
                                         config["vocabulary_size"])
    return max(1, int(config["time_horizon"] // step))


def validate_point(config: dict) -> None:
    """What a resolved topic-model point needs beyond each field's range: whole groups of
    D-Hybrid, no more slow workers than workers, and a minibatch no larger than a shard."""
    n_workers = config["n_workers"]
    if "d-hybrid" in config["topic_samplers"] and n_workers % config["group_size"]:
        raise validation.InvalidParameter(
            "group_size", config["group_size"], f"must divide n_workers = {n_workers} "
                                                "(d-hybrid's groups of equal size)")
    if config["n_slow_workers"] > n_workers:
        raise validation.InvalidParameter("n_slow_workers", config["n_slow_workers"],
                                          f"must not exceed n_workers = {n_workers}")
    if config["corpus"] == GENERATED_CORPUS and \
            config["batch_size"] > config["n_documents"] // n_workers:
        raise validation.InvalidParameter(
            "batch_size", config["batch_size"], f"must not exceed a shard's documents "
                                                f"({config['n_documents'] // n_workers})")


def tuned_step(experiment: str, data: TopicData, config: dict, seed) -> tuple[float, dict]:
    """a of SGRLD's step ε_t = a(1 + t/b)^(−c), chosen as seed 004 §4.2 does "by running
    parallel chains with different a's and then choosing the best": one SGRLD run of
    ``n_replicates`` chains per candidate of ``step_candidates`` for ``tuning_time`` of
    simulated time, each scored by the mean perplexity of its chains on a validation split of
    ``n_held_out`` training documents (never the held-out ones the checks read); the lowest
    wins. Returns (a, the dataset variables recording the choice); with no candidates,
    (``step_size``, none)."""
    from workbench.data.corpus import split_held_out
    from workbench.models.lda import perplexity

    candidates = config["step_candidates"]
    if not candidates:
        return config["step_size"], {}
    rng = np.random.default_rng(derive(seed, experiment, "validation"))
    chosen = np.sort(rng.choice(data.training.n_documents,
                                min(config["n_held_out"], data.training.n_documents),
                                replace=False))
    validation_split = split_held_out(data.training.subset(chosen),
                                      observed_fraction=OBSERVED_FRACTION,
                                      seed=derive(seed, experiment, "validation-split"))
    scores = []
    for a in candidates:
        tuning = dict(config, step_size=a)
        trace = _run("sgrld", data, tuning, np.array([config["tuning_time"]]),
                     derive(seed, experiment, "tuning", repr(a)))
        with np.errstate(all="ignore"):
            scores.append(float(np.mean(perplexity(
                trace.topics[-1], validation_split,
                **perplexity_options(experiment, config, seed)))))
    scores = np.asarray(scores)
    if not np.isfinite(scores).any():
        raise validation.InvalidParameter("step_candidates", candidates,
                                          "every candidate's short run diverged")
    best = float(candidates[int(np.nanargmin(np.where(np.isfinite(scores), scores, np.nan)))])
    return best, {"tuning_perplexity": (("step_candidate",), scores),
                  "tuned_step_size": ((), best)}


def _run(name: str, data: TopicData, config: dict, times: np.ndarray, seed):
    """One sampler's :class:`~workbench.systems.topics.trace.TopicTrace`."""
    from workbench.systems.topics import counts, dsgld, gibbs

    common = dict(n_topics=config["n_topics"], alpha=config["document_prior"],
                  beta=config["topic_prior"], cost=cost_model(config),
                  speed_factors=speed_factors(config), evaluation_times=times,
                  n_replicates=config["n_replicates"], seed=seed)
    sgrld = dict(batch_documents=config["batch_size"], n_sweeps=config["gibbs_sweeps"],
                 step_a=config["step_size"], step_b=config["step_offset"],
                 step_c=config["step_decay"])
    if name == "sgrld":
        return dsgld.run_sgrld(data.training, data.shards, **common, **sgrld)
    if name.startswith("d-"):
        return dsgld.run_dsgld(data.training, data.shards, **common, **sgrld,
                               trajectory_length=trajectory_length(config),
                               groups=groups(name, config), balancing=config["balancing"])
    runner = {"ad-lda": counts.run_ad_lda, "async-lda": counts.run_async_lda,
              "collapsed-gibbs": gibbs.run_collapsed_gibbs}[name]
    return runner(data.training, data.shards, **common)


def topic_distance(topics: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """The mean total variation distance between each replicate's topics ``(R, K, W)`` and
    the true ``(K, W)``, after matching them one to one (Hungarian, on the same distance)."""
    from scipy.optimize import linear_sum_assignment

    out = np.empty(topics.shape[0])
    for r, estimate in enumerate(topics):
        distance = 0.5 * np.abs(estimate[:, None, :] - truth[None, :, :]).sum(-1)
        rows, columns = linear_sum_assignment(distance)
        out[r] = distance[rows, columns].mean()
    return out


#: the raw results' variables recording how SGRLD's step was tuned (:func:`tuned_step`)
TUNING = ("tuning_perplexity", "tuned_step_size", "step_candidate")


def needs_step(name: str) -> bool:
    """Whether the sampler ``name`` runs with SGRLD's tuned step (SGRLD and D-SGLD's)."""
    return name == "sgrld" or name.startswith("d-")


@lru_cache(maxsize=4)
def _tuned(experiment: str, key: str, seed: int, point: str) -> tuple[float, dict]:
    config = json.loads(key)
    return tuned_step(experiment, setup(experiment, config, seed), config,
                      derive(seed, experiment, point))


def tuned_for(experiment: str, config: dict, point: dict, seed) -> tuple[float, dict]:
    """:func:`tuned_step` of the point (its candidates' runs keyed by the point), once per
    process and point."""
    return _tuned(experiment, json.dumps(config, sort_keys=True), int(seed), point_key(point))


def run_point(experiment: str, config: dict, point: dict, seed,
              dims: tuple[str, ...]) -> xr.Dataset:
    """Every sampler on the point's workers (module docstring): all of them
    (:func:`run_samplers`), finished (:func:`finish_point`)."""
    samplers = range(len(config["topic_samplers"]))
    return finish_point(experiment, config, point, seed, dims,
                        run_samplers(experiment, config, point, seed, samplers))


def run_samplers(experiment: str, config: dict, point: dict, seed,
                 samplers: Sequence[int]) -> xr.Dataset:
    """Raw results of some of the point's samplers (``samplers``: their places in
    ``topic_samplers``): each runs from its own seed, with SGRLD's step tuned once per point
    (:func:`tuned_for`, whose record the raw results keep where a sampler needed it), so
    that separate tasks may run them and :func:`join_samplers` joins them into what one task
    gives."""
    import xarray as xr

    from workbench.models.lda import perplexity

    data = setup(experiment, config, seed)
    seed_point = derive(seed, experiment, point_key(point))
    times = evaluation_times(config)
    score = perplexity_options(experiment, config, seed)
    names = [config["topic_samplers"][i] for i in samplers]
    run_config, tuning = config, {}
    if any(needs_step(name) for name in names):
        step, tuning = tuned_for(experiment, config, point, seed)
        run_config = dict(config, step_size=step)
    values, updates, finished, distance = [], [], [], []
    for name in names:
        trace = _run(name, data, run_config, times, derive(seed_point, name))
        # every (time, replicate) row in one call: a row's value does not depend on the others
        values.append(perplexity(trace.topics.reshape(-1, *trace.topics.shape[2:]),
                                 data.split, **score).reshape(trace.topics.shape[:2]))
        updates.append(trace.updates)
        finished.append(trace.finished)
        distance.append(topic_distance(trace.topics[-1], data.true_topics)
                        if data.true_topics is not None
                        else np.full(config["n_replicates"], np.nan))
    return xr.Dataset({
        "perplexity": (("topic_sampler", "time", "replicate"), np.stack(values)),
        "updates": (("topic_sampler", "time"), np.stack(updates)),
        "finished": (("topic_sampler",), np.asarray(finished, dtype=float)),
        "topic_distance": (("topic_sampler", "replicate"), np.stack(distance)),
        **tuning,
    }, coords={"topic_sampler": names, "time": times,
               "replicate": np.arange(config["n_replicates"]),
               **({"step_candidate": config["step_candidates"]} if tuning else {})})


def join_samplers(raws: Sequence[xr.Dataset]) -> xr.Dataset:
    """The raw results of consecutive groups of samplers (:func:`run_samplers`), joined along
    ``topic_sampler`` in order, with the tuning's record of the first group that kept one."""
    import xarray as xr

    tuned = next((raw[list(TUNING)] for raw in raws if TUNING[1] in raw), None)
    joined = xr.concat([raw.drop_vars(TUNING, errors="ignore") for raw in raws],
                       dim="topic_sampler", data_vars="minimal", coords="minimal",
                       compat="equals", join="exact")
    return joined if tuned is None else joined.merge(tuned)


def finish_point(experiment: str, config: dict, point: dict, seed, dims: tuple[str, ...],
                 raw: xr.Dataset) -> xr.Dataset:
    """The point from the raw results of all its samplers (:func:`join_samplers`): beside
    them, the true topics' and random topics' perplexities and the cost model."""
    import xarray as xr

    from workbench.models.lda import perplexity

    data = setup(experiment, config, seed)
    score = perplexity_options(experiment, config, seed)
    if TUNING[1] in raw:
        tuning = {name: raw[name].variable for name in TUNING[:2]}
    else:  # no sampler ran with the step: its tuning is still recorded, as asked for
        _, tuning = tuned_for(experiment, config, point, seed)
    truth = np.nan
    control = np.nan
    if data.true_topics is not None:
        truth = float(perplexity(data.true_topics[None], data.split, **score)[0])
        rng = np.random.default_rng(derive(seed, experiment, "random-topics"))
        random_topics = rng.dirichlet(np.ones(data.training.vocabulary_size),
                                      config["n_topics"])
        control = float(perplexity(random_topics[None], data.split, **score)[0])
    dataset = xr.Dataset({
        **{name: raw[name].variable for name in ("perplexity", "updates", "finished",
                                                 "topic_distance")},
        "true_perplexity": ((), truth),
        "random_perplexity": ((), control),
        **tuning,
    }, coords={"topic_sampler": raw["topic_sampler"].values, "time": raw["time"].values,
               "replicate": raw["replicate"].values,
               **({"step_candidate": config["step_candidates"]} if tuning else {})},
        attrs={**cost_model(config).describe(), "time_unit": "one token's Gibbs update"
               if config["cost_gibbs_token"] == 1.0 else "cost-model units",
               "training_documents": data.training.n_documents,
               "training_tokens": data.training.n_tokens,
               "held_out_documents": data.split.observed.n_documents})
    return dataset.expand_dims({dim: [point[dim]] for dim in dims})


def perplexity_options(experiment: str, config: dict, seed) -> dict:
    """How every perplexity of the study is estimated (:func:`workbench.models.lda.
    perplexity`): its prior, its sweeps and the seed's perplexity stream (``seed`` the point's
    while tuning the step), the same for every sampler and topics."""
    return dict(alpha=config["document_prior"], n_sweeps=config["perplexity_sweeps"],
                seed=derive(seed, experiment, "perplexity"))


def evaluation_times(config: dict) -> np.ndarray:
    """The simulated times at which every sampler's perplexity is scored."""
    return np.linspace(0.0, config["time_horizon"], config["perplexity_times"] + 1)[1:]
