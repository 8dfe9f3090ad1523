"""One sweep point of federated rounds on a model without an exact oracle (seed 002 §5.2-5.3).

The model's examples are split into ``n_shards`` shards (metric learning: similar and
dissimilar pairs whose classes no two shards share, :mod:`workbench.data.metric_pairs`; the MLP:
SUSY-shaped rows whose shards' positive proportions are drawn from Beta(a, a),
:func:`workbench.data.sharding.label_skew`), each a client chosen with f_s = 1/S. Before
sampling, the surrogates q_s of the shard likelihoods are fitted once (seed 002 §3.1): a
Gaussian from local SGLD samples of p(X_s | θ) (``sgld-full`` or ``sgld-diagonal``, the paper's
three thousand by default) or the Laplace approximation at the shard's maximum-likelihood
point. Every estimator (DSGLD, seed 002 Eq. 4; FSGLD, Eq. 7) then
replays the same federated schedule — ``n_replicates`` independent chains, each its own client
draws, T = ``local_updates`` local SGLD updates a round — with the same minibatches and
injected noise (common random numbers: the estimators differ by their gradient alone), for
``burn_in + n_iterations`` updates.

Kept per estimator and chain: φ̂_L, the average of φ over the thinned draws after the burn-in,
at log-spaced sample counts, for φ the held-out ``log_loss`` and ``accuracy`` and the
``train_log_loss`` on a fixed subset of the learning examples (the paper's "average
log-likelihood" on test and learning data is −log_loss); per shard the constants of seed 002
Theorem 2 on the sampled region (γ_s² and ε_s², :mod:`workbench.oracles.gradient_noise`, at the
chains' last draws); and, where a check needs one, the reference posterior's values of the φ
(HMC on the pooled data, :mod:`workbench.reference`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import xarray as xr

from simulators.federated import FederatedRounds
from simulators.seeding import derive, generator
from workbench.core.phi import TestFunction
from workbench.run.experiment import point_key
from workbench.studies.schema import DIGITS, GENERATED, METRIC_LEARNING, SECTIONS

#: the learning examples the train log-loss is averaged over (a fixed subset, for speed)
TRAIN_EVALUATION_ROWS = 2000
#: the learning data's log-loss, and the data Table 1 of seed 002 splits its numbers by
TRAIN_LOG_LOSS = "train_log_loss"
SPLITS = ("train", "test")
#: chains (of those that did not diverge) whose last draws give the sampled region of γ_s² and
#: ε_s²
REGION_DRAWS = 4
#: the fields that determine the data, the shards and the surrogates: the same at every point
#: that shares them
DATA_KEYS = (tuple(f.name for f in SECTIONS["model"])
             + ("n_shards", "label_skew", "surrogate", "surrogate_welling_teh_step_size",
                "surrogate_batch_size", "surrogate_samples", "surrogate_burn_in",
                "surrogate_thin"))


def source_data(config: dict):
    """The labelled points of a metric-learning study: scikit-learn's digits or the user's
    labelled file (:func:`workbench.data.metric_pairs.labelled_file`), read once per process."""
    return _source_data(config["pair_source"])


@lru_cache(maxsize=2)
def _source_data(source: str):
    from workbench.data.digits import digits
    from workbench.data.metric_pairs import labelled_file

    return digits() if source == DIGITS else labelled_file(source)


@dataclass(frozen=True)
class FederatedData:
    """The model with its rows shard after shard, the shard sizes, and what the data say of
    the shards (kept with every point: ``shard_classes``, ``positive_fraction``)."""

    model: object
    shard_sizes: list[int]
    shards: dict


def make_data(experiment: str, config: dict, seed) -> FederatedData:
    """The study's model on its shards: metric learning on class-disjoint pairs (seed 002
    §5.2), or the MLP on label-skewed SUSY-shaped rows (§5.3)."""
    if config["model"] == METRIC_LEARNING:
        return _metric_learning(config, generator(seed, experiment, "pairs"))
    return _susy_mlp(config, generator(seed, experiment, "rows"))


def _metric_learning(config: dict, rng) -> FederatedData:
    from workbench.data.metric_pairs import metric_pairs
    from workbench.models.logistic import LogisticRegression

    pairs = metric_pairs(rng, source_data(config), config["n_similar"],
                         config["n_dissimilar"], config["n_shards"], config["n_test_pairs"],
                         config["n_components"])
    model = LogisticRegression(pairs.features, pairs.labels, config["prior_scale"],
                               pairs.test_features, pairs.test_labels)
    classes = [",".join(map(str, group)) for group in pairs.shard_classes]
    return FederatedData(model, [len(rows) for rows in pairs.shards.shards],
                         {"shard_classes": (("shard",), np.array(classes))})


def _susy_mlp(config: dict, rng) -> FederatedData:
    """S shards of n_train/S rows whose positive proportions are drawn from Beta(a, a)
    (:func:`workbench.data.sharding.label_skew`) out of a pool twice that size, and a balanced
    held-out shard of n_test rows (seed 002 §5.3)."""
    from workbench.data.sharding import equal_sizes, label_skew
    from workbench.data.susy_like import load_susy_csv, susy_like
    from workbench.models.mlp import MultilayerPerceptron

    n_train, n_test = config["n_train"], config["n_test"]
    if config["susy_source"] == GENERATED:
        features, labels = susy_like(rng, 2 * n_train + 2 * n_test)
    else:
        features, labels = load_susy_csv(config["susy_source"], 2 * n_train + 2 * n_test)
    test = np.concatenate([np.flatnonzero(labels[:2 * n_test] == value)[:n_test // 2]
                           for value in (0, 1)])
    pool = slice(2 * n_test, None)
    sizes = equal_sizes(n_train, config["n_shards"])
    sharding, proportions = label_skew(rng, labels[pool], sizes, config["label_skew"],
                                       config["label_skew"])
    rows = np.concatenate(sharding.shards)
    model = MultilayerPerceptron(features[pool][rows], labels[pool][rows],
                                 prior_scale=config["prior_scale"],
                                 test_features=features[test], test_labels=labels[test],
                                 n_classes=2, hidden_sizes=tuple(config["hidden_sizes"]))
    return FederatedData(model, sizes, {"positive_fraction": (("shard",), proportions)})


def fit_surrogates(experiment: str, config: dict, base, seed):
    """q_s per shard, fitted once before sampling (module docstring)."""
    from workbench.gradients import surrogates
    from workbench.systems.distributed.federation import sampled_surrogates

    if config["surrogate"] == "laplace":
        return surrogates.stack(_laplace(base, s) for s in range(base.n_shards))
    return sampled_surrogates(experiment, config, base, start(base.model, seed, experiment),
                              seed)


def _laplace(base, shard: int):
    """The Laplace approximation of shard ``shard``'s likelihood (seed 002 Appendix F.2)."""
    from workbench.gradients import surrogates

    local = dataclasses.replace(base.model, features=base.model.features[base.rows(shard)],
                                labels=base.model.labels[base.rows(shard)])
    return surrogates.laplace(
        lambda theta: float(local.potential(theta)) - theta @ theta / (2 * local.prior_scale**2),
        lambda theta: local.potential_gradient(theta) - theta / local.prior_scale**2,
        np.zeros(base.dim))


def start(model, seed, experiment: str) -> np.ndarray:
    """Where every shard's local SGLD and every chain start: the model's own dispersed start
    where it has one (a network's He-normal weights: at zero its ReLUs are dead and the local
    likelihood flat), one draw shared by all, so that the surrogates of a network, whose
    posterior has a mode for every permutation of its hidden units, describe one basin; else
    zero."""
    if not hasattr(model, "initial_position"):
        return np.zeros(model.dim)
    return model.initial_position(generator(seed, experiment, "start"))


def test_functions(model) -> tuple[TestFunction, ...]:
    """The held-out ``log_loss`` and ``accuracy``, and ``train_log_loss`` on the first
    :data:`TRAIN_EVALUATION_ROWS` learning examples."""
    rows = slice(0, min(TRAIN_EVALUATION_ROWS, model.n_data))
    learning = dataclasses.replace(model, test_features=model.features[rows],
                                   test_labels=model.labels[rows])
    train = learning.test_functions()[0]
    return (*model.test_functions(), TestFunction(TRAIN_LOG_LOSS, train.function))


@lru_cache(maxsize=4)
def _setup(experiment: str, seed: int, key: str):
    from workbench.models.sharded_per_example import ShardedPerExample

    config = json.loads(key)
    data = make_data(experiment, config, seed)
    base = ShardedPerExample(data.model, data.shard_sizes)
    return base, fit_surrogates(experiment, config, base, seed), test_functions(data.model), \
        data.shards


def setup(experiment: str, config: dict, seed):
    """(the shard-aware base, the surrogates, the test functions, what the data say of the
    shards): once per process and data."""
    key = json.dumps({k: config[k] for k in DATA_KEYS if k in config}, sort_keys=True)
    return _setup(experiment, int(seed), key)


def run_point(experiment: str, config: dict, point: dict, seed, dims: tuple[str, ...],
              with_reference: bool = True) -> xr.Dataset:
    """Every estimator on one federated schedule (module docstring): every block
    (:func:`run_blocks`), finished (:func:`finish_point`)."""
    blocks = range(block_count(config, with_reference))
    return finish_point(experiment, config, point, seed, dims, with_reference,
                        run_blocks(experiment, config, point, seed, blocks))


def block_count(config: dict, with_reference: bool) -> int:
    """A point's blocks: one per estimator, each replaying the schedule on its own (the same
    streams, so the estimators differ by their gradient alone), and the reference posterior's
    where a check needs it."""
    return len(config["estimator"]) + int(with_reference)


def run_blocks(experiment: str, config: dict, point: dict, seed, blocks) -> xr.Dataset:
    """Raw results of some of the point's blocks (:func:`block_count`: the estimators in
    order, then the reference): per estimator its chains' running φ̂_L (diverged chains not
    yet masked), where they diverged and the last draws of the first :data:`REGION_DRAWS` that
    did not (the sampled region of γ_s² and ε_s²); the reference's values of the φ. Each the
    same bits whichever blocks share the call, so :func:`join_blocks` of separate tasks'
    results is what one task gives."""
    methods = [config["estimator"][b] for b in blocks if b < len(config["estimator"])]
    raw = (_estimator_runs(experiment, config, point, seed, methods) if methods
           else xr.Dataset())
    if len(config["estimator"]) in blocks:
        base, _, functions, _ = setup(experiment, config, seed)
        reference = _reference(experiment, config, seed, base.model, functions)
        raw = raw.merge(reference.assign(reference_key=reference.attrs["reference_key"]))
    return raw


def _estimator_runs(experiment: str, config: dict, point: dict, seed, methods) -> xr.Dataset:
    from workbench.engine.replay import log_checkpoints, replay
    from workbench.gradients.sharded import Conducive, ShardScaled
    from workbench.samplers import SGLD

    base, fitted, functions, _ = setup(experiment, config, seed)
    model, n_chains = base.model, config["n_replicates"]
    burn_in, total = config["burn_in"], config["burn_in"] + config["n_iterations"]
    seed_point = derive(seed, experiment, point_key(point))
    rounds = FederatedRounds(tuple(np.full(base.n_shards, 1.0 / base.n_shards)),
                             config["local_updates"], n_chains)
    schedule = rounds.simulate(total, derive(seed_point, "schedule"))
    first = (np.broadcast_to(start(model, seed, experiment), (1, n_chains, base.dim))
             if hasattr(model, "initial_position")
             else np.full((1, n_chains, base.dim), float(config["initial_position"])))
    thin = max(1, config["n_iterations"] // config["n_evaluations"])
    dsgld = ShardScaled(base)
    estimators = {"dsgld": dsgld, "fsgld": Conducive(dsgld, fitted, config["alpha"])}
    estimates, diverged = [], []
    region = np.full((len(methods), REGION_DRAWS, base.dim), np.nan)
    in_region = np.zeros(len(methods), dtype=np.int64)
    for i, method in enumerate(methods):
        run = replay(schedule, SGLD(config["step_size"]), estimators[method], n_updates=total,
                     n_replicates=1, initial_position=first, seed=derive(seed_point, "engine"),
                     batch_size=config["batch_size"], test_functions=(), thin=thin,
                     replicate_block=1, divergence_threshold=config["divergence_threshold"])
        kept = run.draw_iterations > burn_in
        draws = run.draws[0][:, kept]  # (chain, draw, d)
        checkpoints = log_checkpoints(draws.shape[1], config["n_checkpoints"])
        with np.errstate(all="ignore"):
            values = [np.cumsum(f(draws)[..., 0], axis=-1)[:, checkpoints - 1] / checkpoints
                      for f in functions]
        estimates.append(np.stack(values).transpose(0, 2, 1))  # (function, checkpoint, chain)
        diverged.append(run.diverged_at[0])
        last = draws[run.diverged_at[0] < 0][:REGION_DRAWS, -1]
        region[i, :len(last)], in_region[i] = last, len(last)
        iterations = run.draw_iterations[kept][checkpoints - 1] - burn_in
    return xr.Dataset({
        "estimate": (("estimator", "test_function", "checkpoint", "replicate"),
                     np.stack(estimates)),
        "diverged_at": (("estimator", "replicate"), np.stack(diverged)),
        "region": (("estimator", "region_draw", "component"), region),
        "in_region": (("estimator",), in_region),
        "iterations": (("checkpoint",), iterations),
    }, coords={"estimator": methods, "test_function": [f.name for f in functions]})


def join_blocks(raws) -> xr.Dataset:
    """The raw results of consecutive groups of blocks (:func:`run_blocks`), the estimators
    joined along ``estimator`` in order, with the reference's values."""
    runs = [raw for raw in raws if "estimate" in raw]
    joined = xr.concat(runs, dim="estimator", data_vars="minimal", coords="minimal",
                       compat="equals", join="exact")
    references = [raw[list(REFERENCE_VARIABLES)] for raw in raws if "reference_mean" in raw]
    return joined.merge(references[0]) if references else joined


#: the reference posterior's variables a point keeps (:func:`_reference`)
REFERENCE_VARIABLES = ("reference_mean", "reference_mean_mc_error", "reference_rhat",
                       "reference_key")


def finish_point(experiment: str, config: dict, point: dict, seed, dims: tuple[str, ...],
                 with_reference: bool, raw: xr.Dataset) -> xr.Dataset:
    """The point from the raw results of all its blocks (:func:`join_blocks`): diverged
    chains masked, γ_s² and ε_s² on the estimators' sampled region, what the data say of the
    shards, seed 002 Table 1's average log-likelihood and the reference's values."""
    from workbench.oracles.gradient_noise import epsilon_squared, gamma_squared

    base, fitted, functions, shards = setup(experiment, config, seed)
    n_chains = config["n_replicates"]
    diverged_at = raw["diverged_at"].values  # the update at which a chain diverged, or -1
    estimate = np.where(diverged_at[:, None, None, :] >= 0, np.nan, raw["estimate"].values)
    positions = np.concatenate([region[:count] for region, count
                                in zip(raw["region"].values, raw["in_region"].values,
                                       strict=True)])
    iterations = raw["iterations"].values
    data = {
        "estimate": (("estimator", "test_function", "checkpoint", "replicate"), estimate),
        "diverged": (("estimator", "replicate"), diverged_at >= 0),
        "diverged_at": (("estimator", "replicate"), diverged_at),
        "iterations": (("checkpoint",), iterations),
        "gamma_squared": (("shard",), gamma_squared(base.point_scores, base.n_shards,
                                                     positions) if len(positions) else
                          np.full(base.n_shards, np.nan)),
        "epsilon_squared": (("shard",), epsilon_squared(base.point_scores, base.shard_sizes,
                                                         positions, fitted) if len(positions)
                            else np.full(base.n_shards, np.nan)),
        "shard_size": (("shard",), np.asarray(base.shard_sizes)),
        "surrogate_mean": (("shard", "component"), fitted.means),
        "surrogate_variance": (("shard", "component"),
                               np.diagonal(fitted.covariances, 0, 1, 2)),
        **shards,
    }
    names = [f.name for f in functions]
    data.update(_average_log_likelihood(estimate, names))
    dataset = xr.Dataset(data, coords={
        "split": list(SPLITS), "estimator": list(config["estimator"]), "test_function": names,
        "checkpoint": np.arange(iterations.size), "replicate": np.arange(n_chains),
        "shard": np.arange(base.n_shards), "component": np.arange(base.dim)})
    if with_reference:
        dataset = dataset.merge(xr.Dataset(
            {name: raw[name].variable for name in REFERENCE_VARIABLES[:-1]},
            attrs={"reference_key": str(raw["reference_key"].values)}))
    return dataset.expand_dims({dim: [point[dim]] for dim in dims})


def _average_log_likelihood(estimate: np.ndarray, names: list[str]) -> dict:
    """Seed 002 Table 1's layout: the average log-likelihood, −E φ̂_L of the log-loss at the
    last sample count, on the learning (``train``) and held-out (``test``) data, per estimator:
    its mean over the chains with a 95 % interval of that mean (``_lower``, ``_upper``) and its
    standard deviation over the chains (``_sd``, the paper's ±). Chains that diverged are left
    out; where every chain diverged (FSGLD at the paper's step) the mean is NaN, and the
    standard deviation where fewer than two are left."""
    rows = [names.index(name) for name in (TRAIN_LOG_LOSS, "log_loss")]
    values = -estimate[:, rows, -1, :]  # (estimator, split, chain)
    finite = np.isfinite(values)
    count = finite.sum(axis=-1)
    kept = np.where(finite, values, 0.0)
    mean = np.where(count > 0, kept.sum(axis=-1) / np.maximum(count, 1), np.nan)
    squares = (np.where(finite, values - mean[..., None], 0.0) ** 2).sum(axis=-1)
    sd = np.where(count > 1, np.sqrt(squares / np.maximum(count - 1, 1)), np.nan)
    half = 1.96 * sd / np.sqrt(np.maximum(count, 1))
    dims = ("estimator", "split")
    return {"average_log_likelihood": (dims, mean), "average_log_likelihood_sd": (dims, sd),
            "average_log_likelihood_lower": (dims, mean - half),
            "average_log_likelihood_upper": (dims, mean + half)}


def _reference(experiment: str, config: dict, seed, model, functions) -> xr.Dataset:
    """The reference posterior's mean, Monte Carlo error and R-hat of every φ (HMC on the
    pooled data), as :mod:`.held_out_point` keeps them."""
    from workbench.reference import reference_posterior
    from workbench.reference.parameters import reference_settings
    from workbench.studies.held_out_point import model_identity

    reference = reference_posterior(model, model_identity(config, model, seed),
                                    reference_settings(config), int(seed), functions)
    at = reference.sel(test_function=[f.name for f in functions], component=0)
    return xr.Dataset({
        "reference_mean": ("test_function", at["mean"].values),
        "reference_mean_mc_error": ("test_function", at["mean_mc_error"].values),
        "reference_rhat": ("test_function", at["rhat"].values)},
        attrs={"reference_key": str(reference.attrs.get("store_key", ""))})
