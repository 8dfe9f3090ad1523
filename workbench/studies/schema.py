"""What a study file may say: its sections, their keys, defaults, meaning and validation.

Every key of ``[model]``, ``[system]``, ``[sampler]`` and ``[run]`` is a :class:`Field`: a
:class:`~workbench.core.parameters.Parameter` (the flat configuration name, default, help,
validator) plus the key it is written under in the file. Names are the same everywhere: the
``staleness`` of ``[system]`` is the ``--set staleness=...`` key, the sweep dim and the dashboard
label; the ``kind`` of ``[model]``, ``[system]`` and ``[sampler]`` is the configuration key named
after its section (``sampler = "sgld"``).

A field marked ``expression`` may also be given as a string, evaluated per sweep point over
the other values and the ``[constants]`` (:mod:`workbench.studies.grid`), e.g.
``step_size = "C * staleness**(-2/3) * n_iterations**(-1/3)"`` (seed 001 §5.1).

Three point kinds, chosen by ``[model] kind``: the Gaussian mean (:mod:`.gaussian_point`, systems
constant / uniform / asynchronous, the linear samplers; or seed 003's protocols, downpour / elastic,
with SGLD and their exact protocol oracle, :mod:`.protocol_point`), sharded Gaussian data
(:mod:`.sharded_point`, systems traveling-chains (seed 004) / federated-rounds (seed 002), SGLD with
the D-SGLD or FSGLD gradient, or on traveling chains SGLD coupled in groups), and a model without an
exact oracle scored by test functions against a reference posterior or against each other
(:mod:`.held_out_point`, the asynchronous system, any sampler): Bayesian logistic regression (seed
001 §5.1), a network on the bundled digits (seed 001 §5.2; no reference posterior), or the
researcher's own model, a Python object named by ``python`` or an installed entry point named by
``entry_point``
(:mod:`.user_code`; running it needs ``--allow-code``). A field marked ``only`` means
something for those model or system kinds alone, and is refused in a study of another kind;
one marked ``fixed_in`` cannot be swept in a study of those kinds (the sharded point stores the
posterior, references and shards once, and a held-out point its model and reference posterior,
so what they depend on is the same at every point).

The system kind ``protocol`` is downpour or elastic as the ``protocol`` field says: sweeping
that field compares seed 003's two protocols on common random numbers, along the dim
``protocol``. Its ``budget`` field says what ``n_iterations`` counts for elastic: every chain's
local steps, or downpour's pushes at the same period (:func:`.protocol_point.local_steps`).

Logistic regression on downpour with ``[run] start = "laplace"`` is a point of its
own (:mod:`.paired_protocol_point`): its replicates start from the Laplace approximation and
share their random numbers across the sweep, so a check reads P's excess over P = 1 replicate by
replicate (seed 003).

The system kind ``real-processes`` runs seed 001's asynchronous server (Appendix A) for real on
the Gaussian mean: worker processes on this machine with injected compute times (``latency``,
``latency_mean``, ``latency_shape``, stragglers) and an injected ``server_update_time``, each
run against the simulator calibrated on it (:mod:`.realtime_point`).

A Gaussian-mean study may also record SGHMC's whole state (θ, p) (``[run] phase_space``, the
point of :mod:`.phase_space_point`): φ̂_L of θ² and of p² at the last sample count, judged against
the exact phase-space oracle (docs/math.md §15); its ``[sampler] kind = "sghmc"`` takes the
``integrator`` as a field of its own (sweepable), and ``step_size = "optimal"`` runs every point
at h*(L), the step minimising the oracle's exact asymptotic MSE of φ̂_L(p²). A field's ``words``
are the strings it takes besides numbers and expressions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simulators import validation
from simulators.traveling_chains import BALANCING
from workbench.core.parameters import Parameter, ValidatedParameter
from workbench.core.phi import BUILTIN
from workbench.core.validators import (
    at_least_one,
    at_least_two,
    distinct_positive_ints,
    finite,
    non_negative_int,
    positive,
)
from workbench.reference.parameters import REFERENCE_PARAMETERS
from workbench.run.parameters import (
    BACKEND,
    BATCH_SIZE,
    BURN_IN,
    CONFIDENCE,
    DIM,
    DIVERGENCE_THRESHOLD,
    FALSE_FAILURE_RATE,
    FRICTION,
    INITIAL_POSITION,
    N_CHECKPOINTS,
    N_DATA,
    N_ITERATIONS,
    N_REPLICATES,
    NOISE_SCALE,
    PRIOR_MEAN,
    PRIOR_SCALE,
    REPLACEMENT,
    REPLICATE_BLOCK,
    SAMPLER,
    STEP_SIZE,
    THIN,
    TRUE_MEAN,
)
from workbench.samplers import LINEAR_SAMPLER_NAMES, SAMPLER_NAMES
from workbench.samplers.coupled import CoupledSGLD
from workbench.samplers.sghmc import INTEGRATORS
from workbench.studies.user_code import (
    CONFIG_KEYS,
    ENTRY_POINT_GROUPS,
    entry_point_name,
    entry_point_names,
    object_path,
    object_paths,
)
from workbench.systems.asynchronous.models import (
    LANGUAGE_MODEL_PARAMETERS,
    LOGISTIC_PARAMETERS,
    NETWORK_PARAMETERS,
    NETWORKS,
)
from workbench.systems.asynchronous.run import RUN_PARAMETERS
from workbench.systems.asynchronous.system import (
    ASYNCHRONOUS,
    DOWNPOUR,
    ELASTIC,
    LATENCY,
    LATENCY_MEAN,
    LATENCY_SHAPE,
    NETWORK_DELAY,
    SERVER_UPDATE_TIME,
)
from workbench.systems.distributed import WELLING_TEH_STEP_SIZE
from workbench.systems.distributed.coupling import (
    COUPLING_TIME,
    GRADIENT_DRAWS,
    GROUP_SIZE,
    NOISE_CORRECTION,
)
from workbench.systems.distributed.data import CENTRE_HALF_WIDTH, DATA_REGIME, SHARD_SIZES
from workbench.systems.distributed.federation import METHODS, SURROGATES
from workbench.systems.distributed.traveling import (
    ASSIGNMENT,
    CORRECTIONS,
    HOP_TIME,
    TRAJECTORY_LENGTH,
    WORKER_DELAY,
    trajectory_lengths,
)
from workbench.systems.protocols.run import COUPLING_STRENGTH, PERIOD
from workbench.systems.topics import parameters as topics

#: where a metric-learning study's pairs come from by default (:func:`_data_file`): scikit-learn's
#: digits, of DIGITS_CLASSES classes and DIGITS_FEATURES pixels (:mod:`workbench.data.digits`)
DIGITS = "digits"
DIGITS_CLASSES, DIGITS_FEATURES = 10, 64
#: where a susy-mlp study's rows come from by default: generated (:mod:`workbench.data.susy_like`)
GENERATED = "generated"


def _data_file(name, value):
    """A word naming the workbench's own data (``digits``, ``generated``) or the path of a file
    (read when the study runs)."""
    if not isinstance(value, str) or not value.strip():
        raise validation.InvalidParameter(name, value, f"must be {DIGITS} (metric-learning), "
                                                       f"{GENERATED} (susy-mlp) or a file's path")
    return value


def _probability(name, value):
    return validation.probability(name, value)


def _slowdown(name, value):
    if value < 1:
        raise validation.InvalidParameter(name, value, "must be >= 1 (a slowdown)")
    return value


def _worker_slowdown(name, value):
    """A slow worker's factor D >= 1, as a float (it names sweep points: ``D=5``)."""
    return float(_slowdown(name, value))


def _staleness_bound(name, value):
    """A staleness beyond which gradients are dropped, or -1: none is."""
    return validation.integer(name, value, minimum=-1)


def _per_shard_lengths(name, value):
    """Trajectory lengths, one per shard (checked against the shards when configured); empty:
    one ``trajectory_length`` on every worker."""
    if not isinstance(value, list):
        raise validation.InvalidParameter(name, value, "must be a list of lengths, one per shard")
    return trajectory_lengths(name, value)


def _step_divisors(name, value):
    """The divisors k >= 2 of the step ladder ε, ε/k, ... (at least one)."""
    if not isinstance(value, list):
        raise validation.InvalidParameter(name, value, "must be a list of divisors >= 2")
    divisors = distinct_positive_ints(name, value)
    if not divisors or divisors[0] < 2:
        raise validation.InvalidParameter(name, value, "needs at least one divisor, each >= 2")
    return divisors


#: a federated study's step grid (:mod:`.step_grid_point`): its key, and its points' design
#: (as the removed fsgld-gaussian plug-in named it: the points' seeds derive from it)
STEP_FACTORS = "bound_step_factors"
STEP_DESIGN = "theorem-bounds"
#: a traveling study's schedules its limit check runs the exact oracle on (the run's first),
#: and the one assignment that draws them at random (seed 004's permutation of the chains over
#: the workers; cyclic rotation with constant delays gives every seed the run's schedule)
LIMIT_SCHEDULES = "limit_schedules"
RANDOM_ASSIGNMENT = "permutation"


def _step_factors(name, value):
    factors = [validation.positive(f"{name}[{i}]", v) for i, v in enumerate(value)]
    if len(set(factors)) != len(factors) or 1.0 in factors:
        raise validation.InvalidParameter(
            name, value, "must be distinct and exclude 1 (the study's own step)")
    return sorted(factors)


def _estimators(name, value):
    """Distinct gradient estimators, compared on the same schedule."""
    for i, entry in enumerate(value):
        if entry not in METHODS:
            raise validation.InvalidParameter(f"{name}[{i}]", entry,
                                              f"must be one of {', '.join(METHODS)}")
    if len(set(value)) != len(value):
        raise validation.InvalidParameter(name, value, "must not repeat an estimator")
    return value


@dataclass(frozen=True)
class Field:
    """A key of a study section: written as ``key``, configured as ``parameter.name``;
    ``only``, ``fixed_in`` and ``words`` as in the module docstring."""

    key: str
    parameter: Parameter
    expression: bool = False
    only: tuple[str, ...] = ()
    fixed_in: tuple[str, ...] = ()
    words: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.parameter.name


GAUSSIAN = "gaussian-mean"
SHARDED = "sharded-gaussian"
LOGISTIC = "logistic-regression"
NETWORK = "network"
#: seed 003's character-level GRU or LSTM language model (Appendix C, Table 1)
LANGUAGE_MODEL = "language-model"
PYTHON = "python"
#: seed 002 §5.2's Bayesian metric learning on similar and dissimilar pairs (Yang et al. 2007),
#: logistic regression on the pairs' squared projections (:mod:`workbench.data.metric_pairs`)
METRIC_LEARNING = "metric-learning"
#: seed 002 §5.3's Bayesian MLP on SUSY-shaped data (:mod:`workbench.data.susy_like`), its
#: shards' positive proportions drawn from Beta(a, a)
SUSY_MLP = "susy-mlp"
TRAVELING = "traveling-chains"
FEDERATED = "federated-rounds"
#: latent Dirichlet allocation, and the workers its samplers run on (seed 004 §4.2): points of
#: their own (:mod:`.topic_point`)
LDA = "lda"
TOPIC_WORKERS = "topic-workers"
#: SGLD chains coupled in groups on traveling chains (seed 004 §3.2.3, Eq. 6)
COUPLED_SGLD = CoupledSGLD.name
#: the fields that mean something only when the sampler couples chains
COUPLING_FIELDS = (GROUP_SIZE.name, NOISE_CORRECTION.name, COUPLING_TIME.name)
#: not a model or system kind but a point kind: federated rounds (seed 002 Algorithm 1) on a
#: model without an exact oracle, its data split into shards (:mod:`.federated_model_point`)
FEDERATED_MODELS = "federated-models"
#: downpour or elastic, as the ``protocol`` field says (module docstring)
PROTOCOL = "protocol"
#: what ``n_iterations`` counts for elastic averaging: each chain's local steps, or downpour's
#: pushes at the same period (:func:`.protocol_point.local_steps`)
BUDGETS = ("per-chain", "downpour")
#: the asynchronous server's worker counts P, the dim a speed-up check compares along
WORKERS_DIM = "n_workers"
#: SGHMC with its integrator given by the field ``integrator`` (:func:`sampler_name`)
SGHMC = "sghmc"
#: the word a ``step_size`` may be: h*(L) of the exact phase-space oracle, found per point
#: (:func:`workbench.oracles.phase_space.optimal_step`)
OPTIMAL_STEP = "optimal"
#: not a model or system kind but a point kind: the Gaussian mean on the asynchronous system
#: with ``n_servers`` named (written, swept or an expression), S servers pooled at test time
#: (:mod:`.pooled_point`, seed 001 §3.3)
POOLED = "pooled-servers"
#: the Gaussian fields a pooled point does not read: its servers run the asynchronous system,
#: it judges θ alone in d = 1 and keeps no draws
POOLED_UNUSED = ("staleness", "dim", "test_function", "n_draws")
#: not a model or system kind but a point kind: seed 003's protocols on the Gaussian mean,
#: judged against their exact protocol oracle (:mod:`.protocol_point`)
PROTOCOL_ORACLE = "protocol-oracle"
#: not a model or system kind but a point kind: seed 003's downpour on logistic regression
#: from Laplace starts shared by every point, its replicates paired across the sweep
#: (``[run] start = "laplace"``, :mod:`.paired_protocol_point`)
PAIRED_PROTOCOL = "paired-protocol"
#: where a logistic regression's replicates start: θ₀ ~ N(0, initial_scale² I), or draws of
#: the Laplace approximation shared by every point (:data:`PAIRED_PROTOCOL`)
STARTS = ("scaled", "laplace")
#: the fields a paired protocol point does not read: it keeps φ̂_L of the held-out log-loss at
#: L alone, from its own starts, with SGLD
PAIRED_UNUSED = ("burn_in", "n_checkpoints", "n_evaluations", "initial_position",
                 "initial_scale", "divergence_threshold", "friction",
                 "test_functions", "python_test_functions", "test_function_entry_points")
#: seed 001's asynchronous server run for real, worker processes on this machine, against the
#: simulator calibrated on each run (:mod:`.realtime_point`)
REAL_PROCESSES = "real-processes"


@dataclass(frozen=True)
class ModelKind:
    """An entry of the registry of ``[model] kind``: what it is (``describes``, the help), the
    ``systems`` it runs on, the ``samplers`` it runs (empty: those its system runs), whether
    it has an exact ``oracle`` (else its checks score test functions against a reference
    posterior or compare its runs with each other) and whether HMC can give its
    ``reference`` posterior; ``own_points``: its points are a kind of their own, whose checks
    neither an oracle nor a reference posterior judge (the topic model's)."""

    name: str
    describes: str
    systems: tuple[str, ...]
    samplers: tuple[str, ...] = ()
    oracle: bool = True
    reference: bool = False
    own_points: bool = False


@dataclass(frozen=True)
class SystemKind:
    """An entry of the registry of ``[system] kind``: what it is (``describes``, the help), and
    the ``samplers`` and gradient ``estimators`` it runs (empty: any its model runs)."""

    name: str
    describes: str
    samplers: tuple[str, ...] = ()
    estimators: tuple[str, ...] = ()


_WITHOUT_ORACLE = (ASYNCHRONOUS, DOWNPOUR, ELASTIC)
#: the model kinds: the Gaussian mean on a fixed or i.i.d. staleness sequence, a simulated
#: server, seed 003's protocols (one, or both swept) or real processes, with the samplers its
#: exact oracle covers (those linear on it); the Gaussian mean on sharded data, on seed 004's
#: traveling chains or seed 002's federated rounds; models without an oracle on the simulated
#: server, downpour or elastic averaging (seed 003), with any sampler; seed 002's metric learning
#: and MLP on federated rounds, with SGLD
MODEL_KINDS = {kind.name: kind for kind in (
    ModelKind(GAUSSIAN, "the Gaussian mean (exact oracle, docs/math.md §8)",
              ("constant", "uniform", ASYNCHRONOUS, DOWNPOUR, ELASTIC, PROTOCOL,
               REAL_PROCESSES), LINEAR_SAMPLER_NAMES + (SGHMC,)),
    ModelKind(SHARDED, "the Gaussian mean on sharded data (exact sharded oracle; seeds 002, "
                       "004)", (TRAVELING, FEDERATED)),
    ModelKind(LOGISTIC, "Bayesian logistic regression (seed 001 §5.1)", _WITHOUT_ORACLE,
              SAMPLER_NAMES + (PYTHON,), oracle=False, reference=True),
    # a network's posterior is multimodal: its checks compare the study's runs with each other
    ModelKind(NETWORK, "a Bayesian network on the bundled digits (seed 001 §5.2)",
              _WITHOUT_ORACLE, SAMPLER_NAMES + (PYTHON,), oracle=False),
    ModelKind(LANGUAGE_MODEL, "a Bayesian character-level GRU or LSTM language model on the "
                              "text of a Markov source or a file (seed 003 Appendix C)",
              _WITHOUT_ORACLE, SAMPLER_NAMES + (PYTHON,), oracle=False),
    ModelKind(PYTHON, "the researcher's own model (python or entry_point)", _WITHOUT_ORACLE,
              SAMPLER_NAMES + (PYTHON,), oracle=False, reference=True),
    # a network's posterior is multimodal: no reference posterior
    ModelKind(SUSY_MLP, "a Bayesian MLP classifier (ReLU hidden layers, softmax) of SUSY-shaped "
                        "data in label-skewed shards (seed 002 §5.3)",
              (FEDERATED,), ("sgld",), oracle=False),
    ModelKind(METRIC_LEARNING, "Bayesian metric learning on similar and dissimilar pairs in "
                               "class-disjoint shards (seed 002 §5.2, Yang et al. 2007)",
              (FEDERATED,), ("sgld",), oracle=False, reference=True),
    ModelKind(LDA, "latent Dirichlet allocation on a bag-of-words corpus, generated with known "
                   "topics or read from UCI docword files (seed 004 §4.2)", (TOPIC_WORKERS,),
              oracle=False, own_points=True),
)}
SYSTEM_KINDS = {kind.name: kind for kind in (
    SystemKind("constant", "every update has staleness τ"),
    SystemKind("uniform", "i.i.d. uniform on {0..τ}"),
    SystemKind(ASYNCHRONOUS, "a simulated parameter server with n_workers workers (seed 001 "
                             "Appendix A)"),
    SystemKind(DOWNPOUR, "workers push every period local steps to one master (seed 003 "
                         "Algorithm 1)"),
    SystemKind(ELASTIC, "n_workers chains coupled to a centre every period steps (seed 003 "
                        "Appendix B)"),
    SystemKind(PROTOCOL, "downpour or elastic as the protocol field says (sweep it to compare "
                         "them)"),
    SystemKind(REAL_PROCESSES, "seed 001's server run for real, worker processes with "
                               "injected compute and server times, against the simulator "
                               "calibrated on each run"),
    SystemKind(TRAVELING, "one chain per shard rotating over the workers (seed 004 §3.2)",
               ("sgld", COUPLED_SGLD), ("dsgld",)),
    SystemKind(FEDERATED, "a random client per round of local updates (seed 002 Algorithm 1)",
               ("sgld",), METHODS),
    SystemKind(TOPIC_WORKERS, "n_workers workers each holding a shard of the documents: "
                              "D-SGLD's chains travel over them, AD-LDA and Async-LDA sweep "
                              "and merge, SGRLD and collapsed Gibbs run on the first; timed by "
                              "one cost model (seed 004 §4.2)"),
)}
#: the model kinds scored on test functions against a reference posterior (no exact oracle)
HELD_OUT = tuple(name for name, kind in MODEL_KINDS.items()
                 if not kind.oracle and not kind.own_points)
#: those whose reference posterior HMC can give
WITH_REFERENCE = tuple(name for name, kind in MODEL_KINDS.items() if kind.reference)
#: the systems of each model kind
SYSTEMS_OF = {name: kind.systems for name, kind in MODEL_KINDS.items()}
SYSTEMS = tuple(SYSTEM_KINDS)
MODELS = tuple(MODEL_KINDS)
#: the samplers and estimators each model or system runs, where it restricts them
SAMPLERS_OF = {kind.name: kind.samplers for kind in (*MODEL_KINDS.values(),
                                                     *SYSTEM_KINDS.values()) if kind.samplers}
#: the test functions of a phase-space study, by the coordinate of (θ, p) each squares
PHASE_SPACE_FUNCTIONS = {"theta_squared": "theta", "momentum_squared": "momentum"}
#: the samplers with a momentum the phase-space point records
MOMENTUM_SAMPLERS = (SGHMC, "sghmc-euler", "sghmc-splitting")
ESTIMATORS_OF = {name: kind.estimators for name, kind in SYSTEM_KINDS.items()
                 if kind.estimators}
_G, _S, _T, _F, _H = (GAUSSIAN,), (SHARDED,), (TRAVELING,), (FEDERATED,), HELD_OUT
_L, _W = (LDA,), (TOPIC_WORKERS,)
#: the systems of seed 003's protocols; on the Gaussian mean, a point of :mod:`.protocol_point`
PROTOCOL_SYSTEMS = (DOWNPOUR, ELASTIC, PROTOCOL)
#: the Gaussian fields a protocol point does not read: its model is fixed by seed 003's
#: exact protocol oracle (d = 1, x ~ N(0, 1), prior N(0, 1), SGLD, minibatches drawn with
#: replacement; :mod:`workbench.systems.protocols.run`)
PROTOCOL_UNUSED = ("staleness", "dim", "true_mean", "noise_scale", "prior_scale", "prior_mean",
                   "friction", "replacement", "divergence_threshold", "n_draws")
#: the Gaussian fields a real-processes point does not read: it is one real run per worker
#: count (no replicates, checkpoints or test functions) on seed 001's server, whose network
#: the calibration measures rather than injects
REAL_UNUSED = ("staleness", "n_replicates", "replicate_block", "n_checkpoints", "test_function",
               "divergence_threshold", "n_draws", "phase_space", "network_delay")
_P = PROTOCOL_SYSTEMS
_R = (REAL_PROCESSES,)
_GH = _G + _H
_GS = _G + _S


def _described(registry: dict) -> str:
    """The help of a ``kind`` field: each entry of its registry, named and described."""
    return "; ".join(f"{name}: {kind.describes}" for name, kind in registry.items())


def _arguments(name, value):
    """A flat table of numbers, strings, booleans or lists of them (the keyword arguments of
    the researcher's model)."""
    if not isinstance(value, dict):
        raise validation.InvalidParameter(name, value, "must be a table of keyword arguments")
    for key, entry in value.items():
        items = entry if isinstance(entry, list) else [entry]
        if not key.isidentifier() or not all(isinstance(v, bool | int | float | str)
                                             for v in items):
            raise validation.InvalidParameter(f"{name}.{key}", entry,
                                              "must be a number, string, boolean or a list "
                                              "of them, under an identifier")
    return dict(value)


class ExpressionListParameter(Parameter):
    """A possibly empty list of test-function expressions in θ's components, each checked
    through the whitelist of :mod:`workbench.core.phi_expressions` (never executed)."""

    def coerce(self, value):
        from bounds.expressions import BoundSyntaxError
        from workbench.core.phi_expressions import components

        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise validation.InvalidParameter(self.name, value, "must be a list of strings")
        for i, text in enumerate(value):
            try:
                components(text)
            except BoundSyntaxError as error:
                raise validation.InvalidParameter(f"{self.name}[{i}]", text,
                                                  str(error)) from None
        if len(set(value)) != len(value):
            raise validation.InvalidParameter(self.name, value, "must not repeat a function")
        return list(value)


#: fields declared once elsewhere (the logistic model's data, the held-out run, the reference
#: chains), taken as they are; the other shared ones (:mod:`workbench.run.parameters`, the
#: systems' own) are imported by name below, replaced where a study's default or help differs
_SHARED = {p.name: p for p in (*LOGISTIC_PARAMETERS, *RUN_PARAMETERS, *REFERENCE_PARAMETERS)}
_NETWORK = {p.name: p for p in NETWORK_PARAMETERS}

SECTIONS: dict[str, tuple[Field, ...]] = {
    "model": (
        Field("kind", Parameter("model", GAUSSIAN, "model: " + _described(MODEL_KINDS),
                                choices=MODELS), fixed_in=_S + _H),
        Field("python", Parameter("python", "module:attribute",
                                  "python model: the factory called as factory(rng, "
                                  "**arguments), a module beside the study file or installed",
                                  object_path), only=(PYTHON,), fixed_in=_H),
        Field("entry_point", Parameter("entry_point", "name",
                                       "python model: an entry point of group "
                                       f"{ENTRY_POINT_GROUPS['model']} an installed package "
                                       "declares (instead of python)", entry_point_name),
              only=(PYTHON,), fixed_in=_H),
        Field("arguments", ValidatedParameter("arguments", {}, "python model: keyword arguments "
                                          "of the factory", _arguments),
              only=(PYTHON,), fixed_in=_H),
        *(Field(name, _SHARED[name], only=(LOGISTIC,), fixed_in=_H)
          for name in ("data_source", "initial_scale")),
        *(Field(name, _SHARED[name], only=(LOGISTIC, SUSY_MLP), fixed_in=_H)
          for name in ("n_train", "n_test")),
        Field("susy_source", Parameter("susy_source", GENERATED, "susy-mlp: generated "
                                       "(SUSY-shaped rows of a known process, "
                                       "workbench/data/susy_like.py) or PATH of the UCI "
                                       "SUSY.csv (or .csv.gz)", _data_file),
              only=(SUSY_MLP,), fixed_in=_H),
        Field("n_test_points", _SHARED["n_test_points"], only=(LOGISTIC, NETWORK), fixed_in=_H),
        Field("network", Parameter("network", NETWORKS[0], "network: mlp (a feed-forward net) "
                                   "or cnn (a LeNet-style convolutional net), a 10-class "
                                   "classifier of the bundled digits", choices=NETWORKS),
              only=(NETWORK,)),
        Field("hidden_sizes", _NETWORK["hidden_sizes"], only=(NETWORK, SUSY_MLP), fixed_in=_H),
        Field("filters", _NETWORK["filters"], only=(NETWORK,), fixed_in=_H),
        Field("hidden_size", replace(_NETWORK["hidden_size"], help="hidden units: the CNN's "
                                     "dense layer, or each recurrent layer of a language model"),
              only=(NETWORK, LANGUAGE_MODEL), fixed_in=_H),
        # the cell and the layers may be swept, as a network's kind is (Table 1's rows)
        *(Field(parameter.name, parameter, only=(LANGUAGE_MODEL,),
                fixed_in=() if parameter.name in ("cell", "n_layers") else _H)
          for parameter in LANGUAGE_MODEL_PARAMETERS),
        Field("n_data", N_DATA, only=_G),
        Field("shard_sizes", SHARD_SIZES, only=_S, fixed_in=_S),
        Field("data", DATA_REGIME, only=_S, fixed_in=_S),
        Field("centre_half_width", CENTRE_HALF_WIDTH, only=_S, fixed_in=_S),
        Field("dim", DIM, only=_GS, fixed_in=_S),
        Field("true_mean", TRUE_MEAN, only=_GS, fixed_in=_S),
        Field("noise_scale", NOISE_SCALE, only=_GS, fixed_in=_S),
        Field("prior_scale", PRIOR_SCALE, only=_GS + (LOGISTIC, NETWORK, LANGUAGE_MODEL,
                                                      METRIC_LEARNING, SUSY_MLP),
              fixed_in=_S + _H),
        Field("pair_source", Parameter("pair_source", DIGITS, "metric-learning: the labelled "
                                       "points the pairs are drawn from: digits (scikit-learn's "
                                       "10 classes, standing in for isolet's 26) or PATH of a "
                                       "labelled CSV file (label first)", _data_file),
              only=(METRIC_LEARNING,), fixed_in=_H),
        Field("n_similar", Parameter("n_similar", 5000, "metric-learning: similar pairs |S| "
                                     "(seed 002 §5.2: 5,000)", at_least_one),
              only=(METRIC_LEARNING,), fixed_in=_H),
        Field("n_dissimilar", Parameter("n_dissimilar", 5000, "metric-learning: dissimilar "
                                        "pairs |D| (seed 002 §5.2: 5,000)", at_least_one),
              only=(METRIC_LEARNING,), fixed_in=_H),
        Field("n_test_pairs", Parameter("n_test_pairs", 1000, "metric-learning: held-out "
                                        "pairs, half similar (seed 002 §5.2: 1,000)",
                                        at_least_two), only=(METRIC_LEARNING,), fixed_in=_H),
        Field("n_components", Parameter("n_components", 10, "metric-learning: K, the top "
                                        "eigenvectors of the data spanning A = Σ γ_k v_k v_kᵀ",
                                        at_least_one), only=(METRIC_LEARNING,), fixed_in=_H),
        Field("prior_mean", PRIOR_MEAN, only=_GS, fixed_in=_S),
        *(Field(p.name, p, only=_L, fixed_in=_L) for p in topics.MODEL_PARAMETERS),
    ),
    "system": (
        Field("kind", Parameter("system", "constant", _described(SYSTEM_KINDS),
                                choices=SYSTEMS),
              fixed_in=_S + _H + _L),
        Field("staleness", Parameter("staleness", 1,
                                     "staleness τ (constant and uniform systems)",
                                     non_negative_int), expression=True, only=_G),
        Field(WORKERS_DIM, Parameter(WORKERS_DIM, 1, "workers P of the asynchronous server "
                                     "or of downpour; the chains of elastic averaging; the "
                                     "topic workers S, one shard each",
                                     at_least_one), expression=True, only=_GH + _W),
        Field("n_servers", Parameter("n_servers", 1, "servers S of the asynchronous system, "
                                     "each with its own n_workers workers and chain, their "
                                     "samples pooled at test time (seed 001 §3.3)",
                                     at_least_one), expression=True, only=(POOLED, *_H)),
        Field("latency", LATENCY, only=_GH),
        Field("latency_mean", LATENCY_MEAN, only=_GH),
        Field("latency_shape", LATENCY_SHAPE, only=_GH),
        Field("server_update_time", SERVER_UPDATE_TIME, only=_GH),
        Field("network_delay", NETWORK_DELAY, only=_GH),
        Field("straggler_probability", Parameter(
            "straggler_probability", 0.0, "probability that a computation straggles",
            _probability), only=_GH),
        Field("straggler_slowdown", Parameter(
            "straggler_slowdown", 1.0, "how many times longer a straggling computation takes",
            _slowdown), only=_GH),
        Field("period", replace(PERIOD, default=1, validate=at_least_one,
                                help="communication period π: local steps per push (downpour) "
                                     "or per coupling (elastic)"), expression=True, only=_P),
        Field("coupling_strength", COUPLING_STRENGTH, only=(ELASTIC, PROTOCOL)),
        Field("protocol", Parameter("protocol", DOWNPOUR, "protocol system: downpour or "
                                    "elastic; swept, the points compare the two on common "
                                    "random numbers along the dim protocol",
                                    choices=(DOWNPOUR, ELASTIC)), only=(PROTOCOL,)),
        Field("budget", Parameter("budget", BUDGETS[0], "elastic: what n_iterations counts: "
                                  "per-chain, the local steps of every chain; downpour, "
                                  "downpour's pushes L at the same period, so that the "
                                  "n_workers chains share its L·period local steps and 2L "
                                  "messages (L·period/n_workers steps each, rounded down; "
                                  "seed 003 Appendix B)", choices=BUDGETS),
              only=(ELASTIC, PROTOCOL)),
        Field("trajectory_length", TRAJECTORY_LENGTH, expression=True, only=_T + _W),
        Field("assignment", ASSIGNMENT, only=_T),
        Field("trajectory_lengths", ValidatedParameter(
            "trajectory_lengths", [], "τ_s: updates per visit to each shard's worker, one per "
            "shard (instead of one trajectory_length on every worker; seed 004 §4.1)",
            _per_shard_lengths), only=_T),
        Field("n_slow_workers", Parameter("n_slow_workers", 0, "how many workers are slow "
                                          "(the last ones; seed 004 §3.2.2)", non_negative_int),
              only=_T + _W),
        Field("slowdown", Parameter("slowdown", 1.0, "D: a slow worker takes D times longer "
                                    "per update", _worker_slowdown), expression=True,
              only=_T + _W),
        Field("balancing", Parameter("balancing", BALANCING[0],
                                     "fixed: every worker runs its planned trajectory length "
                                     "(block-by-the-slowest); adaptive: the master measures "
                                     "the response delays and sets τ_s = q_s τ̄ S with q_s ∝ "
                                     "1/d_s (seed 004 §3.2.2)", choices=BALANCING),
              only=_T + _W),
        Field("slow_trajectory_length", Parameter(
            "slow_trajectory_length", 0, "τ on a slow worker under adaptive balancing (seed "
            "004: 10): the plan's mean τ̄ = τ·((S − n_slow)·D + n_slow)/S, and the fixed plan "
            "runs round(τ̄) on every worker; 0: the plan is trajectory_length",
            non_negative_int), only=_T + _W),
        Field("group_size", GROUP_SIZE, expression=True, only=_T + _W),
        Field("coupling_time", COUPLING_TIME, only=_T),
        Field("worker_delay", WORKER_DELAY, only=_T),
        Field("hop_time", HOP_TIME, only=_T),
        *(Field(p.name, p, only=_W) for p in topics.COST_PARAMETERS),
        Field("local_updates", Parameter("local_updates", 10,
                                         "local updates T per round (seed 002 Fig. 2)",
                                         at_least_one), expression=True, only=_F),
        Field("n_shards", Parameter("n_shards", 10, "federated rounds on a model without an "
                                    "oracle: the shards S, each a client chosen with f_s = 1/S "
                                    "(metric-learning: class-disjoint, S <= classes/2)",
                                    at_least_two), only=(FEDERATED_MODELS,)),
        Field("label_skew", Parameter("label_skew", 100.0, "susy-mlp: a of Beta(a, a), the "
                                      "shards' positive proportions (seed 002 §5.3: 100, "
                                      "nearly balanced shards; 0.5, shards mostly of one "
                                      "label)", positive), expression=True, only=(SUSY_MLP,)),
        Field("n_chains", Parameter("n_chains", 20, "independent federated chains (each its "
                                                    "own client draws)", at_least_two),
              only=_F),
        Field("staleness_bound", Parameter("staleness_bound", -1, "real processes: the server "
                                           "drops gradients staler than this (-1: never)",
                                           _staleness_bound), only=_R),
        Field("simulated_factor", Parameter("simulated_factor", 10, "real processes: updates "
                                            "of the calibrated simulation per real update",
                                            at_least_one), only=_R),
        Field("run_timeout", Parameter("run_timeout", 300.0, "real processes: seconds a real "
                                       "run may take before it is stopped", positive), only=_R),
    ),
    "sampler": (
        Field("kind", replace(SAMPLER, help="integrator (the Gaussian mean: the linear ones "
                              "its oracle covers; sghmc with its integrator field), "
                              "coupled-sgld: traveling chains coupled in groups of "
                              "group_size (seed 004 §3.2.3), or python: the researcher's own "
                              "(python or entry_point; a model without an oracle)",
                              choices=SAMPLER_NAMES + (SGHMC, COUPLED_SGLD, PYTHON)),
              fixed_in=_S),
        Field("integrator", Parameter("integrator", INTEGRATORS[0],
                                      "SGHMC's integrator where kind = \"sghmc\": euler "
                                      "(K = 1, seed 001 Algorithm 1) or splitting (symmetric "
                                      "splitting, K = 2; Chen, Ding & Carin 2015; docs/math.md "
                                      "§3)", choices=INTEGRATORS), only=_G),
        Field("python", Parameter("sampler_python", "module:attribute",
                                  "python sampler: the factory called as factory(step_size, "
                                  "**arguments), a module beside the study file or installed",
                                  object_path), only=_H, fixed_in=_H),
        Field("entry_point", Parameter("sampler_entry_point", "name",
                                       "python sampler: an entry point of group "
                                       f"{ENTRY_POINT_GROUPS['sampler']} an installed package "
                                       "declares (instead of python)", entry_point_name),
              only=_H, fixed_in=_H),
        Field("arguments", ValidatedParameter("sampler_arguments", {}, "python sampler: keyword "
                                          "arguments of the factory", _arguments),
              only=_H, fixed_in=_H),
        Field("step_size", replace(STEP_SIZE, default=0.001, help="step size h, an expression, "
                                   "or (phase_space) \"optimal\": h*(L) minimising the exact "
                                   "asymptotic MSE of φ̂_L(p²) (docs/math.md §15); lda: a of "
                                   "SGRLD's ε_t = a(1 + t/b)^(−c)"),
              expression=True, only=_GH + _L, words=(OPTIMAL_STEP,)),
        Field("largest_step", Parameter("largest_step", 1.5, "step_size = \"optimal\": the "
                                        "upper end of the search for h*(L)", positive), only=_G),
        Field("friction", FRICTION, only=_GH),
        Field("welling_teh_step_size", WELLING_TEH_STEP_SIZE, only=_S, fixed_in=_S),
        *(Field(p.name, p, only=_L) for p in topics.SAMPLER_PARAMETERS),
        Field("noise_correction", NOISE_CORRECTION, only=_T),
        Field("correction", Parameter("correction", CORRECTIONS[0],
                                      "corrected: D-SGLD's N_s/(N q_s)-scaled shard gradient "
                                      "(seed 004 Eq. 2-3); uncorrected: the shard's own, which "
                                      "targets the wrong law when shards differ in size or "
                                      "visits", choices=CORRECTIONS), only=_T),
        Field("estimator", Parameter("estimator", ["dsgld"],
                                     "gradient estimators: dsgld (the N/(N_s q_s)-scaled shard "
                                     "gradient, seed 004 Eq. 4), fsgld (with conducive "
                                     "gradients, seed 002 Eq. 7); federated rounds run each on "
                                     "the same client draws, along the dim estimator",
                                     _estimators),
              only=_S + (FEDERATED_MODELS,), fixed_in=_S),
        Field("surrogate", Parameter("surrogate", "analytic",
                                     "q_s: analytic N(x̄_s, σ_x²/N_s), laplace, or Gaussian "
                                     "fitted to local SGLD samples with full or diagonal "
                                     "covariance", choices=SURROGATES), only=_F, fixed_in=_S),
        Field("alpha", Parameter("alpha", 1.0, "scale α of the conducive gradient (seed 002 "
                                               "Eq. 7)", positive), only=_F, fixed_in=_S),
        Field("surrogate_welling_teh_step_size", Parameter(
            "surrogate_welling_teh_step_size", 2e-4,
            "local SGLD step (Welling-Teh ε) for the sgld-* surrogates", positive),
              only=_F, fixed_in=_S),
        Field("surrogate_batch_size", Parameter(
            "surrogate_batch_size", 50, "local SGLD minibatch for the sgld-* surrogates",
            at_least_one), only=_F, fixed_in=_S),
        Field("surrogate_samples", Parameter(
            "surrogate_samples", 3000, "local SGLD samples per shard (seed 002: 3,000)",
            at_least_two), only=_F, fixed_in=_S),
        Field("surrogate_burn_in", Parameter(
            "surrogate_burn_in", 500, "local SGLD updates discarded first", non_negative_int),
              only=_F, fixed_in=_S),
        Field("surrogate_thin", Parameter("surrogate_thin", 10, "local SGLD thinning",
                                          at_least_one), only=_F, fixed_in=_S),
    ),
    "run": (
        Field("n_iterations", N_ITERATIONS, expression=True, fixed_in=_F),
        Field("burn_in", BURN_IN, expression=True, only=_S + _H),
        Field("thin", THIN, only=_S, fixed_in=_F),
        Field("n_replicates", replace(N_REPLICATES, help="independent runs R per point "
                                      "(sharded: replicates per chain, same schedule)")),
        Field("replicate_block", REPLICATE_BLOCK, expression=True),
        Field("n_checkpoints", replace(N_CHECKPOINTS, default=30, help="log-spaced sample "
                                       "counts at which φ̂_L is kept (federated: window lengths "
                                       "of the error curve)"),
              only=_G + _F + _H, fixed_in=_F),
        Field("initial_position", replace(INITIAL_POSITION, default=1.0)),
        Field("batch_size", replace(BATCH_SIZE, help=BATCH_SIZE.help + " (lda: documents)"),
              expression=True, fixed_in=_S),
        Field("replacement", REPLACEMENT, fixed_in=_S),
        Field("test_function", Parameter("test_function", "theta_squared",
                                         "φ whose MSE the invariance and figures use",
                                         choices=tuple(BUILTIN)), only=_G),
        Field("test_functions", ExpressionListParameter(
            "test_functions", [], "test functions φ(θ) in θ's components, beside the model's "
            "own held-out ones, e.g. \"theta[0]*theta[1]\""), only=_H),
        Field("python_test_functions", ValidatedParameter(
            "python_test_functions", [], "the researcher's own test functions, each "
            "'module:attribute' of a TestFunction or of a function of θ (..., d) → (..., 1)",
            object_paths), only=_H, fixed_in=_H),
        Field("test_function_entry_points", ValidatedParameter(
            "test_function_entry_points", [], "the researcher's own test functions, each an "
            f"entry point of group {ENTRY_POINT_GROUPS['test_function']}", entry_point_names),
              only=_H, fixed_in=_H),
        Field("n_evaluations", _SHARED["n_evaluations"], only=_H),
        Field("thinning", _SHARED["thinning"], only=_H),
        Field("sample_interval", _SHARED["sample_interval"], expression=True, only=_H),
        Field("averaged_prediction", _SHARED["averaged_prediction"],
              only=(NETWORK, LANGUAGE_MODEL)),
        Field("start", Parameter("start", STARTS[0], "logistic regression: where replicates "
                                 "start: scaled (θ₀ ~ N(0, initial_scale² I)) or laplace "
                                 "(draws of N(θ_MAP, H⁻¹) shared by every point of downpour, "
                                 "with its noise and minibatches)", choices=STARTS),
              only=(LOGISTIC,), fixed_in=_H),
        Field("confidence", CONFIDENCE),
        Field("false_failure_rate", FALSE_FAILURE_RATE),
        Field("divergence_threshold", DIVERGENCE_THRESHOLD, only=_GH),
        Field("backend", BACKEND, only=_G),
        Field("gradient_draws", GRADIENT_DRAWS, only=_T),
        Field("initial_offset", Parameter(
            "initial_offset", 20.0, "a time-to-target check starts the chains this many "
            "posterior standard deviations from μ in every coordinate (instead of at "
            "initial_position)", finite), only=_T),
        Field("target_error", Parameter("target_error", 2.0, "accuracy to reach: E‖θ - μ‖² = "
                                        "target·d·s² (a time-to-target check)", positive),
              only=_T),
        Field("n_time_points", Parameter("n_time_points", 400, "time grid for the pooled error "
                                         "curves (a time-to-target check)", at_least_two),
              only=_T),
        Field("gantt_rounds", Parameter("gantt_rounds", 4, "rounds of every chain's "
                                        "trajectories kept for a Gantt chart (a "
                                        "time-to-target check)", at_least_one), only=_T),
        Field("step_divisor", ValidatedParameter(
            "step_divisor", [2, 4], "k of the smaller steps ε/k at which the exact oracle is "
            "also evaluated, over k times as many updates (a limit check)", _step_divisors),
              only=_T),
        Field(LIMIT_SCHEDULES, Parameter(
            LIMIT_SCHEDULES, 1, "independent schedules of the system the exact oracle's step "
            "ladder runs on, the run's first: each adds its chains to a limit check's units "
            "(a limit check; --until-decided grows it where only more chains decide one)",
            at_least_one), only=_T),
        Field("phase_space", Parameter("phase_space", False, "record SGHMC's state (θ, p): "
                                       "φ̂_L of θ² and p² at the last sample count against "
                                       "the exact phase-space oracle, full gradients "
                                       "(docs/math.md §15)"), only=_G),
        Field("n_draws", Parameter("n_draws", 0, "equally spaced draws kept per replicate "
                                                 "(0: none)", non_negative_int), only=_G),
        Field("grid_half_width", Parameter("grid_half_width", 7.0,
                                           "γ_s², ε_s² are maximised over [-w, w]^d (seed 002: "
                                           "7)", positive), only=_F, fixed_in=_S),
        *(Field(p.name, p, only=_H) for p in REFERENCE_PARAMETERS),
        Field("grid_points", Parameter("grid_points", 101, "grid points per axis for γ_s², "
                                                           "ε_s²", at_least_two),
              only=_F, fixed_in=_S),
        Field(STEP_FACTORS, ValidatedParameter(
            STEP_FACTORS, [], "steps h·factor run beside the sweep on its client "
            "draws, kept as bound_mse over step_factor (an envelope check)", _step_factors),
              only=_F),
        *(Field(p.name, p, only=_L) for p in topics.RUN_PARAMETERS),
    ),
}

def kind_fields(kinds: set[str]) -> list[Field]:
    """The fields of a study of these model and system kinds (module docstring)."""
    return [spec for spec in fields().values() if not spec.only or kinds & set(spec.only)]


def validate_kinds(values: dict) -> None:
    """Refuse, naming the field, a system the model does not run on, or a sampler or
    estimator the system does not run (``values``: field name → value, defaults where
    absent)."""
    catalogue = fields()

    def value(name):
        return values.get(name, catalogue[name].parameter.default)

    model, system = value("model"), value("system")
    if system not in SYSTEMS_OF[model]:
        raise validation.InvalidParameter("system", system, f"a {model} study runs on "
                                                            f"{' / '.join(SYSTEMS_OF[model])}")
    for runner in (model, system):
        if runner in SAMPLERS_OF and value("sampler") not in SAMPLERS_OF[runner]:
            why = (f" (the samplers its exact oracle covers; the other samplers run on a "
                   f"model without an oracle: {' / '.join(HELD_OUT)})"
                   if runner == GAUSSIAN else "")
            raise validation.InvalidParameter("sampler", value("sampler"),
                                              f"{runner} runs {' / '.join(SAMPLERS_OF[runner])}"
                                              + why)
    _validate_phase_space(value)
    for kind, (_, python, entry_point, _) in CONFIG_KEYS.items():
        named = [k for k in (python, entry_point) if value(k) != catalogue[k].parameter.default]
        if value(kind) == PYTHON and len(named) != 1:
            raise validation.InvalidParameter(python, value(python), f"a python {kind} names "
                                              "its factory by python or by entry_point "
                                              "(exactly one of them)")
    if model == GAUSSIAN and system in PROTOCOL_SYSTEMS and value("sampler") != "sgld":
        raise validation.InvalidParameter("sampler", value("sampler"), f"{system} on the "
                                          f"{model} runs sgld (its exact protocol oracle, "
                                          "seed 003)")
    if value("start") == STARTS[1] and (system != DOWNPOUR or value("sampler") != "sgld"):
        name = "system" if system != DOWNPOUR else "sampler"
        raise validation.InvalidParameter(name, value(name), "start = \"laplace\" pairs the "
                                          "replicates of downpour points running sgld (seed "
                                          "003 Algorithm 1)")
    if system in PROTOCOL_SYSTEMS and value("n_servers") != 1:
        raise validation.InvalidParameter("n_servers", value("n_servers"),
                                          f"{system} has one master or centre: only the "
                                          "asynchronous system runs several servers")
    for name in value("estimator"):
        if system in ESTIMATORS_OF and name not in ESTIMATORS_OF[system]:
            runs = " / ".join(ESTIMATORS_OF[system])
            raise validation.InvalidParameter("estimator", name, f"{system} runs {runs}")


def _validate_phase_space(value) -> None:
    """A phase-space study records SGHMC's momentum under the oracle's assumptions (fresh, full
    gradients on a one-dimensional Gaussian mean: docs/math.md §15); ``step_size = "optimal"``
    is that oracle's step, so only such a study may ask for it."""
    steps = value("step_size") if isinstance(value("step_size"), list) else [value("step_size")]
    if not value("phase_space"):
        if OPTIMAL_STEP in steps:
            raise validation.InvalidParameter("step_size", OPTIMAL_STEP, "is the optimal step "
                                              "of the phase-space oracle: set [run] "
                                              "phase_space = true, or give a step size")
        return
    if value("sampler") not in MOMENTUM_SAMPLERS:
        raise validation.InvalidParameter("sampler", value("sampler"), "a phase_space study "
                                          "records SGHMC's momentum: one of "
                                          + " / ".join(MOMENTUM_SAMPLERS))
    if value("system") != "constant" or value("staleness") != 0:
        name = "system" if value("system") != "constant" else "staleness"
        raise validation.InvalidParameter(name, value(name), "a phase_space study runs on "
                                          "fresh gradients (system constant, staleness 0): "
                                          "its exact oracle assumes them")
    if value("dim") != 1:
        raise validation.InvalidParameter("dim", value("dim"), "must be 1 in a phase_space "
                                          "study: its oracle follows one (θ, p) pair")


def sampler_name(config: dict) -> str:
    """The sampler a resolved point runs (:func:`workbench.samplers.make_sampler`):
    ``sghmc-<integrator>`` for ``kind = "sghmc"``, else the kind."""
    return f"sghmc-{config['integrator']}" if config["sampler"] == SGHMC else config["sampler"]


#: the integrator order K of each sampler a Gaussian study runs (seed 001 §4: Euler K = 1,
#: symmetric splitting K = 2), the value of a bound's ``integrator_order``
INTEGRATOR_ORDER = {"sgld": 1, "sghmc-euler": 1, "sghmc-splitting": 2}


def integrator_order(config: dict) -> int:
    """K of the sampler a resolved point runs (:data:`INTEGRATOR_ORDER`)."""
    name = sampler_name(config)
    if name not in INTEGRATOR_ORDER:
        raise validation.InvalidParameter("sampler", name, "has no integrator order K; one of "
                                          + ", ".join(INTEGRATOR_ORDER))
    return INTEGRATOR_ORDER[name]


def validate_phase_space_point(config: dict) -> None:
    """What a resolved phase-space point needs beyond each field's own range: full gradients
    (the whole data set, drawn without replacement), so that V_ζ = 0 as its oracle assumes."""
    if config["batch_size"] != config["n_data"] or config["replacement"]:
        raise validation.InvalidParameter(
            "batch_size", config["batch_size"], f"a phase_space point takes full gradients: "
            f"batch_size = n_data ({config['n_data']}) with replacement = false")


def validate_sharded_point(config: dict) -> None:
    """What a resolved sharded point needs beyond each field's own range: one trajectory
    length per shard where they are given per shard, and a federated window of whole rounds,
    starting at a round boundary (checked when a study is configured, before
    :mod:`.sharded_point` runs it)."""
    if config["system"] == TRAVELING:
        lengths, n_shards = config.get("trajectory_lengths", []), len(config["shard_sizes"])
        if lengths and len(lengths) != n_shards:
            raise validation.InvalidParameter("trajectory_lengths", lengths,
                                              f"needs one length per shard ({n_shards} shards)")
        if config["n_slow_workers"] > n_shards:
            raise validation.InvalidParameter("n_slow_workers", config["n_slow_workers"],
                                              "must not exceed the number of workers "
                                              f"({n_shards})")
        return
    local = config["local_updates"]
    for name in ("burn_in", "n_iterations"):
        if config[name] % local:
            raise validation.InvalidParameter(
                name, config[name], f"must be a multiple of every local_updates ({local})")


def validate_federated_data(config: dict) -> None:
    """What a resolved point of federated rounds on a model without an oracle needs of its data
    beyond each field's range: whole rounds (:func:`validate_sharded_point`), surrogates fitted
    to the data (not the Gaussian mean's analytic ones; for the MLP, whose shard likelihoods
    have singular Hessians, not the Laplace approximation either); on the digits, at
    most ⌊C/2⌋ class-disjoint shards of pairs (each needs two classes of its own for dissimilar
    pairs) and K at most the pixel count. A user's labelled file is checked the same way when it
    is read (:func:`workbench.data.metric_pairs.metric_pairs`)."""
    validate_sharded_point(config)
    if config["surrogate"] == SURROGATES[0]:
        raise validation.InvalidParameter(
            "surrogate", config["surrogate"], "is the Gaussian mean's exact shard likelihood; "
            f"a model without an oracle takes {', '.join(SURROGATES[1:])}")
    if config["model"] == SUSY_MLP and config["surrogate"] == "laplace":
        raise validation.InvalidParameter(
            "surrogate", config["surrogate"], "has no Gaussian for the MLP: its shard "
            "likelihood is flat along the hidden units' symmetries and the softmax's shared "
            "shift, so the Hessian at a mode is singular (measured on a 4-unit MLP); it takes "
            f"{', '.join(SURROGATES[2:])}")
    if config["model"] != METRIC_LEARNING or config["pair_source"] != DIGITS:
        return
    if config["n_shards"] > DIGITS_CLASSES // 2:
        raise validation.InvalidParameter(
            "n_shards", config["n_shards"], f"must be at most {DIGITS_CLASSES // 2}: each shard "
            f"needs two classes of its own to form dissimilar pairs, and the digits have "
            f"{DIGITS_CLASSES} classes")
    if config["n_components"] > DIGITS_FEATURES:
        raise validation.InvalidParameter("n_components", config["n_components"],
                                          f"must be at most the feature count "
                                          f"({DIGITS_FEATURES})")


#: sections holding fields; the others are free-form (constants, sweep, quick, check, bound,
#: paper)
FIELD_SECTIONS = tuple(SECTIONS)
OTHER_SECTIONS = ("study", "constants", "sweep", "quick", "check", "bound", "paper",
                  "design")


def fields() -> dict[str, Field]:
    """Every field by its flat configuration name."""
    return {f.name: f for section in SECTIONS.values() for f in section}
