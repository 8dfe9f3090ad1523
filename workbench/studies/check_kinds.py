"""What a study's ``[[check]]`` entries may say: the check kinds, the keys each takes for each
model or system kind, and the validation of their options (:class:`Kind`, :data:`KINDS`).

Reading a study validates its checks; judging a dataset is done by the judgements module of
the study's kind of point (:meth:`.point_kinds.PointKind.judge`; the kinds are described
there), imported when a check runs: they need xarray, scipy.stats and sympy, which loading,
showing and configuring a study does not (issue 15).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simulators.exceptions import PicklesWithArguments
from simulators.validation import InvalidParameter
from workbench.core.parameters import Parameter
from workbench.core.phi import BUILTIN
from workbench.core.validators import non_negative, positive
from workbench.run.parameters import (
    INVARIANCE_MARGIN,
    ORDERING_MARGIN,
    RATE_MARGIN,
    SLOPE_MARGIN,
    SPEEDUP_MARGIN,
)
from workbench.studies.point_kinds import HELD_OUT_KIND, TOPIC_MODEL, marking, point_kind
from workbench.studies.schema import (
    ASYNCHRONOUS,
    FEDERATED,
    FEDERATED_MODELS,
    GAUSSIAN,
    HELD_OUT,
    LIMIT_SCHEDULES,
    PAIRED_PROTOCOL,
    PHASE_SPACE_FUNCTIONS,
    POOLED,
    PROTOCOL_ORACLE,
    PROTOCOL_SYSTEMS,
    REAL_PROCESSES,
    SHARDED,
    SYSTEMS_OF,
    TRAVELING,
    WITH_REFERENCE,
    WORKERS_DIM,
)
from workbench.systems.asynchronous.speedup import TIME_BEND_MARGIN
from workbench.systems.distributed.coupling import GRADIENT_DRAWS
from workbench.systems.distributed.references import REFERENCES

if TYPE_CHECKING:
    import xarray as xr

    from bounds.verdict import Verdict
    from workbench.studies.gaussian_judgements import Context

SPLITS = ("checkerboard", "extrapolate")
#: the margins of a ``speed-up`` check, each an option with the declared default
SPEEDUP_MARGINS = (SPEEDUP_MARGIN, SLOPE_MARGIN, TIME_BEND_MARGIN, INVARIANCE_MARGIN)
#: the margins of a ``real-vs-simulated`` check: mean staleness in updates, time speed-up relative
STALENESS_MARGIN = Parameter("staleness_margin", 0.5, "real-vs-simulated check: the real and "
                             "simulated mean staleness within this many updates", positive)
REAL_MARGINS = (STALENESS_MARGIN, SPEEDUP_MARGIN)
#: the kinds a phase-space study (:mod:`.phase_space_judgements`) judges
PHASE_SPACE_KINDS = ("oracle", "rate")
#: the models the held-out point runs (:mod:`.held_out_judgements`: on the simulated server,
#: downpour or elastic averaging), and those of them with a reference posterior
SERVED = tuple(m for m in HELD_OUT if ASYNCHRONOUS in SYSTEMS_OF[m])
SERVED_WITH_REFERENCE = tuple(m for m in WITH_REFERENCE if m in SERVED)
#: the test functions a point of federated rounds on a model without an oracle keeps
#: (:mod:`.federated_model_point`)
FEDERATED_FUNCTIONS = ("log_loss", "accuracy", "train_log_loss")
#: the margin of a ``spread`` check: the log ratio of the standard deviations shown above
#: minus this
SPREAD_MARGIN = Parameter("spread_margin", 0.0, "spread check: log(sd of than / sd of better) "
                          "shown above minus this", non_negative)
#: the margins of a topic-model study's checks (:mod:`.topic_judgements`)
PERPLEXITY_MARGIN = Parameter("perplexity_margin", 0.05, "perplexity check: the final held-out "
                              "perplexity at most this fraction above the true topics'",
                              positive)
TIME_MARGIN = Parameter("time_margin", 0.0, "time-to-perplexity check: log(t_later/t_sooner) "
                        "shown above minus this", non_negative)
#: the predicted order of an ``ordering`` check along its dim
DIRECTIONS = ("falls", "rises")
#: the checks of a sharded study judged on chains averaged over schedules, which take the
#: exact oracle given each chain's schedule as a control variate unless ``control_variate =
#: false`` (:func:`workbench.systems.distributed.windows.chain_estimate`)
CONTROL_VARIATE_KINDS = ("posterior", "stationary", "invariance", "growth")

#: the independent units of a ``posterior`` check: each chain (its replicates averaged), or
#: each (replicate, chain) run, for designs with few chains (coupled groups)
UNITS = ("chain", "run")
#: the check kinds that can judge their verdicts in the study's one family (``[study] family =
#: "study"``), by the model or point kind that runs them: those whose critical z comes from
#: :meth:`.gaussian_judgements.Context.z` (or its one-sided twin)
STUDY_FAMILY = {**{kind.name: kind.family for kind in marking()},
                **dict.fromkeys(SERVED, HELD_OUT_KIND.family)}
#: the point kinds judged by their own check kinds alone, as the refusal of another names them
OWN_KINDS = {kind.name: kind.describes for kind in marking()}
#: what a paired protocol study's ``rate`` check measures against its ``baseline``
EXCESSES = ("excess", "deviation")
#: the margin of an envelope check of seed 003's protocols: the held-out MSE at most this
#: fraction above the envelope
ENVELOPE_MARGIN = Parameter("envelope_margin", 0.1, "envelope check: the held-out MSE at most "
                            "this fraction above the fitted envelope", positive)


class CheckOptionError(PicklesWithArguments, ValueError):
    def __init__(self, key: str, reason: str):
        super().__init__(f"{key}: {reason}")
        self.key, self.reason = key, reason


def _function(entry: dict, key: str = "test_function", default=None):
    """A built-in test function, or one of the phase space (which the study then records:
    ``study.py`` refuses the other kind of name where it does not)."""
    value = entry.get(key, default)
    known = (*BUILTIN, *(f for f in PHASE_SPACE_FUNCTIONS if f not in BUILTIN))
    if value is not None and value not in known:
        raise CheckOptionError(key, f"must be one of {', '.join(known)}, got {value!r}")
    return value


def _over(entry: dict, dims: Sequence[str]) -> str:
    over = entry.get("over", dims[0] if len(dims) == 1 else None)
    if over not in dims:
        raise CheckOptionError("over", f"must be a sweep dim ({', '.join(dims) or 'none'}), "
                                       f"got {over!r}")
    return over


def _bound(entry: dict, bounds: Mapping) -> str:
    name = entry.get("bound")
    if name not in bounds:
        raise CheckOptionError("bound", f"names no [[bound]] of the study "
                                        f"({', '.join(bounds) or 'none'}), got {name!r}")
    return name


def _registered(entry: dict) -> str:
    """A registered bound's name (``workbench bounds list``): looked up when judged, since the
    registry imports sympy and reading a study stays light."""
    name = entry.get("bound")
    if not isinstance(name, str) or not name.partition("-")[2]:
        raise CheckOptionError("bound", f"must name a registered bound, <source>-<name> "
                                        f"(workbench bounds list), got {name!r}")
    return name


def _known_keys(entry: dict, allowed: Sequence[str]) -> None:
    for key in entry:
        if key not in allowed:
            raise CheckOptionError(key, f"unknown key; known: {', '.join(('kind', *allowed))}")


def _estimator(entry: dict, estimators: Sequence[str]) -> str:
    name = entry.get("estimator")
    if name not in estimators:
        raise CheckOptionError("estimator", f"must be an estimator of the study "
                                            f"({', '.join(estimators)}), got {name!r}")
    return name


def _reference(entry: dict, key: str) -> str:
    name = entry.get(key)
    if name not in REFERENCES:
        raise CheckOptionError(key, f"must be one of {', '.join(REFERENCES)}, got {name!r}")
    return name


def _difference(entry: dict, dims: Sequence[str], kinds: Sequence[str],
                swept: Mapping[str, list]) -> dict:
    """An oracle check's ``difference``: a sweep dim of two values (``protocol`` swept over
    downpour and elastic, say) along which the MSE of φ̂_L(θ) of a protocol study is compared
    at every value of the other dims, against its exact difference."""
    if "difference" not in entry:
        return {}
    if not set(kinds) & set(PROTOCOL_SYSTEMS):
        raise CheckOptionError("difference", "compares the MSE of two sweep points of "
                                             "downpour or elastic on the Gaussian mean; this "
                                             f"study runs {' / '.join(sorted(kinds))}")
    dim = entry["difference"]
    if dim not in dims:
        raise CheckOptionError("difference", f"must be a sweep dim ({', '.join(dims)}), "
                                             f"got {dim!r}")
    if len(swept[dim]) != 2:
        raise CheckOptionError("difference", f"{dim} must be swept over two values (the "
                                             f"second minus the first), not {swept[dim]}")
    return {"difference": dim}


def _expected(entry: dict) -> float:
    """A slope check's predicted exponent (default 0)."""
    expected = entry.get("expected", 0.0)
    if isinstance(expected, bool) or not isinstance(expected, int | float):
        raise CheckOptionError("expected", "must be a number")
    return float(expected)


def _name_template(template, dims: Sequence[str], key: str = "name") -> str:
    """A check's ``name`` (and a speed-up's ``invariance_name``): its verdicts' names, with
    ``{dim}`` for the value of another sweep dim and ``{test_function}`` (an ordering's
    ``"{network}/loss-falls"`` gives ``mlp/loss-falls/P=1->2`` where ``[study] symbols``
    writes the worker dim ``P``; a speed-up's ``"speed-up"`` gives ``speed-up/slope``; an
    oracle's ``label`` writes the point in its verdicts' names, ``"{integrator},L={iterations}"``
    giving ``oracle/mse/momentum_squared/euler,L=64``)."""
    import string

    if not isinstance(template, str) or not template:
        raise CheckOptionError(key, "must be a non-empty string")
    allowed = {*dims, "test_function"}
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as error:
        raise CheckOptionError(key, f"is not a name template: {error}") from None
    for field in fields:
        if field not in allowed:
            raise CheckOptionError(key, f"{{{field}}} is not another sweep dim or "
                                           f"test_function (known: {', '.join(sorted(allowed))})")
    return template


def _where(entry: dict, dims: Sequence[str], swept: Mapping[str, list]) -> dict:
    """A rate check's ``where``: the sweep dims (not ``over``) it is restricted to one value of
    each, ``{ integrator = "euler" }``, a value the study sweeps (--set may drop it: then the
    check judges nothing there)."""
    where = entry.get("where", {})
    if not isinstance(where, dict):
        raise CheckOptionError("where", "must be a table of sweep dim = value")
    return _swept_values("where", where, dims, swept, "a sweep dim other than over")


def _swept_values(key: str, table: dict, dims: Sequence[str], swept: Mapping[str, list],
                  what: str = "a sweep dim") -> dict:
    """``table`` of sweep dim = value, each dim among ``dims`` and each value one the study
    sweeps (``--set`` may drop it later)."""
    for dim, value in table.items():
        if dim not in dims:
            raise CheckOptionError(key, f"{dim!r} is not {what} ({', '.join(dims) or 'none'})")
        if value not in swept.get(dim, [value]):
            raise CheckOptionError(key, f"{dim} = {value!r} is not among the values the study "
                                        f"sweeps ({swept[dim]})")
    return dict(table)


def _against(entry: dict, dims: Sequence[str]) -> str:
    """A check's ``against``: the x its rate, ordering or envelope calibration reads, an
    expression in the sweep dims (``"period * (workers - 1)"``: seed 003's staleness bound
    π(P − 1)), read through the whitelist of :mod:`bounds.expressions` (never executed)."""
    from bounds.expressions import BoundSyntaxError, free_names

    text = entry.get("against")
    if not isinstance(text, str) or not text.strip():
        raise CheckOptionError("against", "must be an expression in the sweep dims, e.g. "
                                          "\"period * (workers - 1)\"")
    try:
        unknown = free_names(text) - set(dims)
    except BoundSyntaxError as error:
        raise CheckOptionError("against", str(error)) from None
    if unknown:
        raise CheckOptionError("against", f"names {', '.join(sorted(unknown))}, not a sweep dim "
                                          f"({', '.join(dims) or 'none'})")
    return text


def _baseline(entry: dict, dims: Sequence[str], swept: Mapping[str, list]) -> dict:
    """A check's ``baseline``: one sweep dim and the value every other value of it is compared
    with, replicate by replicate (``{ workers = 1 }``: the synchronous run)."""
    baseline = entry.get("baseline")
    if not isinstance(baseline, dict) or len(baseline) != 1:
        raise CheckOptionError("baseline", "must be a table of one sweep dim = its baseline "
                                           "value, e.g. { workers = 1 }")
    return _swept_values("baseline", baseline, dims, swept)


def _margin(entry: dict) -> float:
    """A ``reference`` check's ``margin``: a positive number in φ's units."""
    margin = entry["margin"]
    if isinstance(margin, bool) or not isinstance(margin, int | float) or \
            not 0 < margin < float("inf"):
        raise CheckOptionError("margin", "must be a positive number (φ's units)")
    return float(margin)


def _margins(entry: dict, parameters: Sequence) -> dict:
    """The margins an entry gives, each checked by its declaration, else their defaults."""
    out = {}
    for parameter in parameters:
        try:
            out[parameter.name] = parameter.coerce(entry.get(parameter.name, parameter.default))
        except InvalidParameter as error:
            raise CheckOptionError(parameter.name, error.allowed) from None
    return out


def _by(entry: dict) -> float:
    """An ordering's ``by``: the least improvement claimed (φ's units; default 0)."""
    by = entry.get("by", 0.0)
    if isinstance(by, bool) or not isinstance(by, int | float) or not 0 <= by < 1e300:
        raise CheckOptionError("by", "must be a number >= 0 (φ's units)")
    return float(by)


@dataclass(frozen=True)
class Kind:
    """A check kind: the keys it takes in a study of each model or system kind it applies to
    (the first of them the study has decides); ``reference``: on a model without an oracle,
    judged against the reference posterior (which its points then compute and keep);
    ``fields``: the study's fields that only this kind reads (what its points then compute),
    which are not parameters of a study without such a check."""

    name: str
    keys: Mapping[str, tuple[str, ...]]
    reference: bool = False
    fields: tuple[str, ...] = ()

    def validate(self, entry: dict, dims: Sequence[str], bounds: Mapping,
                 kinds: Sequence[str], estimators: Sequence[str],
                 swept: Mapping[str, list] | None = None, one_family: bool = False) -> dict:
        """The entry's options; ``kinds``: the study's model and system kinds,
        ``estimators``: its gradient estimators (sharded studies), ``swept``: the values the
        study file sweeps each dim over (checked where a kind needs one among them),
        ``one_family``: the study judges all its verdicts as one family
        (:data:`STUDY_FAMILY`)."""
        where = next((k for k in self.keys if k in kinds), None)
        if where is None and self.name == "oracle" and set(kinds) & set(WITH_REFERENCE):
            model = next(k for k in kinds if k in WITH_REFERENCE)
            raise CheckOptionError("kind", f"an 'oracle' check needs a model with an exact "
                                           f"oracle; {model} has none — use 'reference'")
        if where is None and self.name in ("oracle", "reference", "envelope") and \
                set(kinds) & set(HELD_OUT):
            model = next(k for k in kinds if k in HELD_OUT)
            raise CheckOptionError("kind", f"a {self.name!r} check needs a model with an exact "
                                           f"oracle or a reference posterior; {model} has "
                                           "neither (its posterior is multimodal) — use "
                                           "'speed-up' or 'ordering'")
        own = next((k for k in OWN_KINDS if k in kinds), None)
        if own is not None and where != own:
            raise CheckOptionError("kind", f"{self.name!r} is not a check of {OWN_KINDS[own]}; "
                                           f"it takes {' / '.join(STUDY_FAMILY[own])}")
        if where is None:
            raise CheckOptionError("kind", f"{self.name!r} is a check of "
                                           f"{' / '.join(self.keys)} studies, not of "
                                           f"{' / '.join(sorted(kinds))}")
        if where == GAUSSIAN and REAL_PROCESSES in kinds:
            raise CheckOptionError("kind", f"a point of {REAL_PROCESSES} is judged against the "
                                           "simulator calibrated on it: 'real-vs-simulated' "
                                           "checks only")
        if where == REAL_PROCESSES:
            _known_keys(entry, self.keys[where])
            return _margins(entry, REAL_MARGINS)
        _known_keys(entry, self.keys[where])
        if one_family and self.name not in STUDY_FAMILY.get(where, ()):
            raise CheckOptionError("kind", f"{self.name!r} on {where} judges its verdicts in "
                                           "a family of its own; [study] family = \"study\" "
                                           "takes " + (" / ".join(STUDY_FAMILY.get(where, ()))
                                                       or "no check kind") + " there")
        if where == POOLED:
            return self._along(entry, dims)
        if where in (PROTOCOL_ORACLE, PAIRED_PROTOCOL):
            return self._protocol(entry, where, dims, bounds, kinds, swept or {})
        if where == TOPIC_MODEL:
            return self._topic_model(entry, dims, estimators, swept or {})
        if where == FEDERATED_MODELS:
            model = next(k for k in kinds if k in HELD_OUT)
            if self.reference and model not in WITH_REFERENCE:
                raise CheckOptionError("kind", f"a {self.name!r} check needs a reference "
                                               f"posterior; {model} has none (its posterior is "
                                               "multimodal) — compare the estimators with "
                                               "'ordering', 'spread' or 'invariance'")
            return self._federated_models(entry, dims, estimators, swept or {})
        if where in HELD_OUT:
            return self._held_out(entry, dims, bounds, swept or {})
        if where != GAUSSIAN:
            return self._sharded(entry, self.keys[where], dims, estimators, swept or {})
        if self.name == "oracle":
            oracle = _difference(entry, dims, kinds, swept or {})
            if "label" in entry:
                oracle["label"] = _name_template(entry["label"], dims, "label")
            return oracle
        options: dict[str, Any] = {"test_function": _function(entry)}
        if self.name in ("invariance", "slope", "rate"):
            options["over"] = _over(entry, dims)
            options["bootstrap_resamples"] = entry.get("bootstrap_resamples", 1000)
            if (not isinstance(options["bootstrap_resamples"], int)
                    or isinstance(options["bootstrap_resamples"], bool)
                    or options["bootstrap_resamples"] < 100):
                raise CheckOptionError("bootstrap_resamples", "must be a whole number of at "
                                                              "least 100")
        if self.name == "slope":
            options["expected"] = _expected(entry)
        if self.name == "rate":
            options["bound"] = _bound(entry, bounds)
        if self.name == "rate":
            if "expected" in entry:
                options["expected"] = float(entry["expected"])
            elif not getattr(bounds, "deferred", False):  # a shipped file's: when judged
                from workbench.studies.gaussian_judgements import bound_rate

                spec = bounds[options["bound"]]
                try:
                    bound_rate(spec.bound, spec.fixed)
                except ValueError as error:
                    raise CheckOptionError("bound", f"{options['bound']!r} gives no rate in L "
                                                    f"({error}); give expected") from None
            options.update(_margins(entry, (RATE_MARGIN,)))
            options["paired"] = entry.get("paired", False)
            if not isinstance(options["paired"], bool):
                raise CheckOptionError("paired", "must be true or false")
            others = [d for d in dims if d != options["over"]]
            options["where"] = _where(entry, others, swept or {})
            if "name" in entry:
                options["name"] = _name_template(entry["name"], others)
        if self.name == "envelope":
            options.update(self._envelope(entry, bounds))
        return options

    def _federated_models(self, entry: dict, dims: Sequence[str], estimators: Sequence[str],
                          swept: Mapping[str, list]) -> dict:
        """Options of a check of federated rounds on a model without an oracle
        (:mod:`.federated_model_judgements`): its test function (one the point keeps), the
        estimators it compares (among the study's), the points it judges (``where``)."""
        function = entry.get("test_function")
        if function is not None and function not in FEDERATED_FUNCTIONS:
            raise CheckOptionError("test_function", f"must be one of "
                                   f"{', '.join(FEDERATED_FUNCTIONS)}, got {function!r}")
        options: dict[str, Any] = {"test_function": function,
                                   "where": _where(entry, dims, swept)}
        if self.name in ("ordering", "spread"):
            for key, default in (("better", "fsgld"), ("than", "dsgld")):
                options[key] = entry.get(key, default)
                if options[key] not in estimators:
                    raise CheckOptionError(key, f"must be an estimator of the study "
                                                f"({', '.join(estimators)}), got "
                                                f"{options[key]!r}")
            if options["better"] == options["than"]:
                raise CheckOptionError("than", "must differ from better")
            options.update(_margins(entry, (ORDERING_MARGIN,) if self.name == "ordering"
                                    else (SPREAD_MARGIN,)))
        if self.name == "ordering":
            options["by"] = _by(entry)
        if self.name == "invariance":
            options.update(_margins(entry, (INVARIANCE_MARGIN,)))
        if self.name == "reference" and "margin" in entry:
            options["margin"] = _margin(entry)
        if "name" in entry:
            options["name"] = _name_template(entry["name"], list(dims))
        return options

    def _topic_model(self, entry: dict, dims: Sequence[str], samplers: Sequence[str],
                     swept: Mapping[str, list]) -> dict:
        """Options of a topic-model study's check (:mod:`.topic_judgements`): the samplers it
        judges, among the study's ``topic_samplers`` (``samplers``), its margin, its points."""
        options: dict[str, Any] = {"where": _where(entry, dims, swept)}

        def sampler(key: str, value) -> str:
            if value not in samplers:
                raise CheckOptionError(key, f"must be a sampler of the study "
                                            f"({', '.join(samplers)}), got {value!r}")
            return value

        if self.name == "perplexity":
            named = entry.get("samplers", list(samplers))
            if not isinstance(named, list) or not named:
                raise CheckOptionError("samplers", "must be a non-empty list of samplers")
            options["samplers"] = [sampler("samplers", v) for v in named]
            options.update(_margins(entry, (PERPLEXITY_MARGIN,)))
        else:
            order = entry.get("order")
            if not isinstance(order, list) or len(order) < 2 or len(set(order)) != len(order):
                raise CheckOptionError("order", "give at least two distinct samplers, the one "
                                                "claimed to reach the target first first")
            options["order"] = [sampler("order", v) for v in order]
            options["target"] = sampler("target", entry.get("target", "ad-lda"))
            options.update(_margins(entry, (TIME_MARGIN,)))
        if "name" in entry:
            options["name"] = _name_template(entry["name"], list(dims))
        return options

    def _held_out(self, entry: dict, dims: Sequence[str], bounds: Mapping,
                  swept: Mapping[str, list]) -> dict:
        """Options of a check on a model without an oracle: its test functions are the
        model's own and the study's expressions, known once the model is built, so a name is
        checked against them when the check runs."""
        function = entry.get("test_function")
        if function is not None and not isinstance(function, str):
            raise CheckOptionError("test_function", "must be the name of a test function")
        options: dict[str, Any] = {"test_function": function}
        if self.name == "reference" and "margin" in entry:
            options["margin"] = _margin(entry)
        if self.name == "envelope":
            options.update(self._envelope(entry, bounds))
        if self.name == "speed-up":
            over = entry.get("over", WORKERS_DIM)
            if over not in dims:
                key = "over" if "over" in entry else "kind"
                raise CheckOptionError(key, f"a 'speed-up' check compares worker counts: sweep "
                                            f"{over} (with 1 among its values), or name the "
                                            "swept worker counts with over")
            options["over"] = over
            if 1 not in swept.get(over, [1]):  # --set may change it: configure refuses that
                raise CheckOptionError("over" if "over" in entry else "kind",
                                       f"a speed-up is relative to one worker: {over} = "
                                       f"{swept[over]} must include 1")
            options.update(_margins(entry, SPEEDUP_MARGINS))
            for key in ("name", "invariance_name"):
                if key in entry:
                    options[key] = _name_template(entry[key], [d for d in dims if d != over])
        if self.name in ("slope", "invariance"):
            options.update(self._along(entry, dims))
        if self.name == "ordering":
            options["over"] = _over(entry, dims)
            direction = entry.get("direction", DIRECTIONS[0])
            if direction not in DIRECTIONS:
                raise CheckOptionError("direction", f"must be one of {', '.join(DIRECTIONS)}, "
                                                    f"got {direction!r}")
            options["direction"] = direction
            options["by"] = _by(entry)
            options.update(_margins(entry, (ORDERING_MARGIN,)))
            if "name" in entry:
                options["name"] = _name_template(entry["name"], [d for d in dims
                                                                 if d != options["over"]])
        return options

    def _protocol(self, entry: dict, where: str, dims: Sequence[str], bounds: Mapping,
                  kinds: Sequence[str], swept: Mapping[str, list]) -> dict:
        """Options of a check of seed 003's protocols: on the Gaussian mean (oracle, envelope,
        rate; :mod:`.protocol_judgements`) or on logistic regression with paired replicates
        (reference, rate, ordering; :mod:`.paired_protocol_judgements`)."""
        if self.name == "oracle":
            return _difference(entry, dims, kinds, swept)
        options: dict[str, Any] = {}
        if where == PROTOCOL_ORACLE:
            options["test_function"] = _function(entry, default="theta_squared")
        if self.name == "reference":
            options["where"] = _where(entry, dims, swept)
            return options
        options["against"] = _against(entry, dims)
        if self.name == "envelope":
            options["bound"] = _bound(entry, bounds)
            options.update(_margins(entry, (ENVELOPE_MARGIN,)))
            return options
        options["baseline"] = _baseline(entry, dims, swept)
        if self.name == "rate":
            if "expected" not in entry:
                raise CheckOptionError("expected", "give the exponent of x the rate must not "
                                                   "exceed (E₃ ∝ x²: 2)")
            options["expected"] = _expected(entry)
            options.update(_margins(entry, (RATE_MARGIN,)))
        if where == PAIRED_PROTOCOL and self.name == "rate":
            of = entry.get("of", EXCESSES[0])
            if of not in EXCESSES:
                raise CheckOptionError("of", f"must be one of {', '.join(EXCESSES)}, got {of!r}")
            options["of"] = of
        if "name" in entry:
            options["name"] = _name_template(entry["name"], [])
        return options

    def _along(self, entry: dict, dims: Sequence[str]) -> dict:
        """Options of a slope or invariance check along ``over`` (an oracle check of S
        servers pooled takes none), on the pooled Gaussian mean or a model without an oracle:
        its margin and its verdicts' ``name`` template."""
        if self.name == "oracle":
            return {}
        options: dict[str, Any] = {"over": _over(entry, dims)}
        if self.name == "slope":
            options["expected"] = _expected(entry)
        options.update(_margins(entry, (SLOPE_MARGIN if self.name == "slope"
                                        else INVARIANCE_MARGIN,)))
        if "name" in entry:
            options["name"] = _name_template(entry["name"], [d for d in dims
                                                             if d != options["over"]])
        return options

    def _envelope(self, entry: dict, bounds: Mapping) -> dict:
        options: dict[str, Any] = {"bound": _bound(entry, bounds)}
        split = entry.get("split", "checkerboard")
        if split not in SPLITS:
            raise CheckOptionError("split", f"must be one of {', '.join(SPLITS)}")
        options["split"] = split
        fixed = entry.get("fixed", {})
        if not isinstance(fixed, dict):
            raise CheckOptionError("fixed", "must be a table of symbol = value")
        options["fixed"] = dict(fixed)
        return options

    def _sharded(self, entry: dict, keys: Sequence[str], dims: Sequence[str],
                 estimators: Sequence[str], swept: Mapping[str, list]) -> dict:
        options: dict[str, Any] = {}
        if "over" in keys:
            options["over"] = _over(entry, dims)
        if self.name in ("invariance", "growth", "envelope"):
            options["estimator"] = _estimator(entry, estimators)
        if self.name == "envelope":
            options["bound"] = _registered(entry)
        if self.name == "time-to-target" and len(swept.get(options["over"], [])) != 2:
            raise CheckOptionError("over", f"{options['over']} must be swept over two values "
                                           "(the baseline, then the arm expected sooner)")
        if self.name in CONTROL_VARIATE_KINDS:
            options["control_variate"] = entry.get("control_variate", True)
            if not isinstance(options["control_variate"], bool):
                raise CheckOptionError("control_variate", "must be true or false")
        if self.name == "posterior":
            unit = entry.get("unit", UNITS[0])
            if unit not in UNITS:
                raise CheckOptionError("unit", f"must be one of {', '.join(UNITS)}, got {unit!r}")
            options["unit"] = unit
        if self.name == "distance":
            options["longest"] = _reference(entry, "longest")
            options["shortest"] = _reference(entry, "shortest")
            if options["longest"] == options["shortest"]:
                raise CheckOptionError("shortest", "must differ from longest")
        return options

    def run(self, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
        """The verdicts of one ``[[check]]`` of this kind, judged by the study's kind of point
        (:meth:`.point_kinds.PointKind.judge`)."""
        return point_kind(ctx.config).judge(self.name, dataset, ctx, options)


#: the keys every check of federated rounds on a model without an oracle takes
_FEDERATED_KEYS = ("test_function", "where", "name")

KINDS = {kind.name: kind for kind in (
    Kind("oracle", {POOLED: (), PROTOCOL_ORACLE: ("difference",),
                    GAUSSIAN: ("difference", "label"), SHARDED: ()}),
    Kind("invariance", {FEDERATED_MODELS: _FEDERATED_KEYS + (INVARIANCE_MARGIN.name,),
                        POOLED: ("over", INVARIANCE_MARGIN.name, "name"),
                        GAUSSIAN: ("test_function", "over", "bootstrap_resamples"),
                        FEDERATED: ("estimator", "over", "control_variate"),
                        **dict.fromkeys(SERVED, ("test_function", "over",
                                                   INVARIANCE_MARGIN.name, "name"))}),
    Kind("slope", {POOLED: ("over", "expected", SLOPE_MARGIN.name, "name"),
                   GAUSSIAN: ("test_function", "over", "expected", "bootstrap_resamples"),
                   **dict.fromkeys(SERVED, ("test_function", "over", "expected",
                                              SLOPE_MARGIN.name, "name"))}),
    Kind("rate", {PROTOCOL_ORACLE: ("test_function", "against", "baseline", "expected",
                                    RATE_MARGIN.name, "name"),
                  PAIRED_PROTOCOL: ("of", "against", "baseline", "expected", RATE_MARGIN.name,
                                    "name"),
                  GAUSSIAN: ("test_function", "over", "bound", "expected",
                             "bootstrap_resamples", RATE_MARGIN.name, "paired", "where",
                             "name")}),
    Kind("envelope", {PROTOCOL_ORACLE: ("test_function", "bound", "against",
                                        ENVELOPE_MARGIN.name),
                      GAUSSIAN: ("test_function", "bound", "split", "fixed"),
                      FEDERATED: ("estimator", "bound"),
                      **dict.fromkeys(SERVED_WITH_REFERENCE,
                                      ("test_function", "bound", "split", "fixed"))},
         reference=True),
    Kind("reference", {FEDERATED_MODELS: _FEDERATED_KEYS + ("margin",),
                       PAIRED_PROTOCOL: ("where",),
                       **dict.fromkeys(SERVED_WITH_REFERENCE, ("test_function", "margin"))},
         reference=True),
    Kind("speed-up", dict.fromkeys(SERVED, ("test_function", "over",
                                              *(p.name for p in SPEEDUP_MARGINS), "name",
                                              "invariance_name"))),
    Kind("ordering", {FEDERATED_MODELS: _FEDERATED_KEYS + ("better", "than", "by",
                                                           ORDERING_MARGIN.name),
                      PAIRED_PROTOCOL: ("against", "baseline", "name"),
                      **dict.fromkeys(SERVED, ("test_function", "over", "direction", "by",
                                                 ORDERING_MARGIN.name, "name"))}),
    Kind("spread", {FEDERATED_MODELS: _FEDERATED_KEYS + ("better", "than",
                                                         SPREAD_MARGIN.name)}),
    Kind("distance", {TRAVELING: ("over", "longest", "shortest")}),
    Kind("posterior", {SHARDED: ("unit", "control_variate")}),
    Kind("gradient-noise", {TRAVELING: ()}, fields=(GRADIENT_DRAWS.name,)),
    Kind("limit", {TRAVELING: ()}, fields=("step_divisor", LIMIT_SCHEDULES)),
    Kind("time-to-target", {TRAVELING: ("over",)},
         fields=("initial_offset", "target_error", "n_time_points", "gantt_rounds")),
    Kind("stationary", {FEDERATED: ("control_variate",)}),
    Kind("growth", {FEDERATED: ("estimator", "over", "control_variate")}),
    Kind("real-vs-simulated", {REAL_PROCESSES: tuple(p.name for p in REAL_MARGINS)}),
    Kind("perplexity", {TOPIC_MODEL: ("samplers", PERPLEXITY_MARGIN.name, "where", "name")}),
    Kind("time-to-perplexity", {TOPIC_MODEL: ("order", "target", TIME_MARGIN.name, "where",
                                              "name")}),
)}
