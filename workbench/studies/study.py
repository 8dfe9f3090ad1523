"""A study: one TOML file declaring a model, a system, a sampler, a run, a sweep, checks and bounds.

:func:`from_document` reads and validates a study of one model completely before anything runs
(:mod:`workbench.studies.files` reads a file, of one model or of parts); every refusal
is a :class:`~workbench.studies.document.StudyError` naming the key and its line: an unknown
section or key, a value of the wrong type or range, a sweep over something that is not a
parameter, an expression or bound naming an unknown symbol or using anything outside the
whitelist of :mod:`bounds.parse` (strings are parsed, never executed), a check of an unknown
kind or over a dim that is not swept.

:func:`workbench.studies.files.built_in` reads a shipped file the same way but its ``[[bound]]``
tables only when a check first judges against them (:class:`DeferredBounds`; the tests load every
shipped file whole): the bounds need sympy, which loading, showing and configuring a built-in
experiment does not import (issue 15).

The validated study is a flat configuration (:mod:`workbench.core.parameters` parameters, one per
field, constant and sweep list) plus its checks and bounds; :class:`workbench.studies.experiment.
StudyExperiment` runs it like any built-in experiment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from bounds.expressions import BoundSyntaxError, free_names
from simulators.validation import InvalidParameter, duration
from workbench.core.headline import Headline, HeadlineError
from workbench.core.paper import PaperEntry, PaperError, entries
from workbench.core.parameters import Parameter
from workbench.core.phi import BUILTIN
from workbench.core.validators import EXPERIMENT_NAME
from workbench.reference.parameters import REFERENCE_KEYS
from workbench.run.plan import check_point_count
from workbench.studies import check_kinds, designs, library
from workbench.studies.document import Document, KeyPath, StudyError
from workbench.studies.point_kinds import HELD_OUT_KIND, point_kind, study_kinds
from workbench.studies.schema import (
    COUPLED_SGLD,
    COUPLING_FIELDS,
    FIELD_SECTIONS,
    GAUSSIAN,
    LDA,
    OPTIMAL_STEP,
    OTHER_SECTIONS,
    PHASE_SPACE_FUNCTIONS,
    PROTOCOL_SYSTEMS,
    PYTHON,
    REAL_PROCESSES,
    SECTIONS,
    SGHMC,
    STARTS,
    TRAVELING,
    Field,
    fields,
    kind_fields,
    validate_kinds,
)
from workbench.studies.user_code import CONFIG_KEYS

# the bounds (sympy) are imported by the functions that read a [[bound]]: a study without
# them (every shipped one) loads, shows and configures without sympy (issue 15)
if TYPE_CHECKING:
    from bounds.record import Bound


#: the point kinds whose points ``[study] paired`` makes share the engine's random numbers
ENGINE_PAIRED = (GAUSSIAN, HELD_OUT_KIND.name)

#: fields that set the shape of a point's results: the points of a sweep must share it
SHAPE_FIELDS = ("dim", "n_replicates", "n_checkpoints", "n_draws", "test_function",
                "phase_space")

#: ``[study] family``: each check judges its verdicts in a family of its own, or the study
#: judges all of them as one (Bonferroni over every verdict at ``false_failure_rate``)
FAMILIES = ("check", "study")

#: ``[[bound]] step``: a registered bound as registered, or in its fixed-step form (each
#: per-step aggregate a constant step h: seed 003's Σε² = L·h², say)
BOUND_STEPS = ("as-registered", "fixed")

#: names every expression and bound may use besides the study's own: the sample count of a
#: checkpoint (``iterations``), alongside ``n_iterations``
BOUND_QUANTITIES = ("mse", "variance", "bias_squared")


@dataclass(frozen=True)
class CheckSpec:
    """One ``[[check]]``: its kind and options, and where it is written."""

    kind: str
    options: dict[str, Any]
    index: int


@dataclass(frozen=True)
class BoundSpec:
    """One ``[[bound]]``: a typed expression or a registered bound by name (``step = "fixed"``:
    its fixed-step form), the values of its symbols that are not values of the study
    (``fixed``, e.g. ``integrator_order = 1``), and the sweep dims its other symbols are
    (``symbols``, e.g. ``{ communication_period = "period" }``)."""

    name: str
    bound: Bound
    test_function: str | None
    fixed: dict = field(default_factory=dict)
    symbols: dict = field(default_factory=dict)


@dataclass
class Study:
    name: str
    summary: str
    source: str
    values: dict[str, Any]            # field name → value (number, string expression or list)
    constants: dict[str, float | int]
    product: tuple[str, ...]          # product sweep dims, in file order
    zipped: tuple[tuple[str, ...], ...]  # zipped groups: the first name is the dim
    quick: dict[str, Any]
    checks: tuple[CheckSpec, ...]
    bounds: Mapping[str, BoundSpec]
    origin: str = "<study>"
    parameters: tuple[Parameter, ...] = field(default=())
    text: str = ""  # the file as written (a study is sent to worker processes as its text)
    symbols: dict[str, str] = field(default_factory=dict)  # sweep dim → name in check names
    headline: Headline | None = None  # the chart the Experiment browser opens on
    paper: tuple[PaperEntry, ...] = ()  # [[paper]]: what the paper states, cited
    paired: tuple[str, ...] = ()  # sweep dims whose points share every random number
    #: [study] pair_common_starts: judge points whose replicates share their starts as paired
    pair_common_starts: bool = True
    family: str = FAMILIES[0]  # [study] family (FAMILIES)
    point_kinds: tuple[str, ...] = ()  # its model, system and point kinds (point_kinds.study_kinds)
    designs: tuple[designs.Design, ...] = ()  # [[design]]: grids of their own, with checks
    until_decided: float | None = None  # [study] until_decided, seconds (looks_budget)
    #: fields of its kinds that mean nothing in it (not parameters), with why (:func:`_unused`)
    unused: Mapping[str, str] = field(default_factory=dict)

    @property
    def sweep_dims(self) -> tuple[str, ...]:
        return self.product + tuple(group[0] for group in self.zipped)

    @property
    def swept(self) -> tuple[str, ...]:
        return self.product + tuple(name for group in self.zipped for name in group)


class _ExpressionParameter(Parameter):
    """A field that accepts a number or an expression string (checked, never executed)."""

    def coerce(self, value):
        if isinstance(value, str):
            try:
                free_names(value)
            except BoundSyntaxError as error:
                raise InvalidParameter(self.name, value, str(error)) from None
            return value
        return super().coerce(value)


class _SweepParameter(Parameter):
    """A swept field or constant: a non-empty list of distinct values, each validated."""

    def __init__(self, element: Parameter, values: list):
        super().__init__(element.name, values, f"sweep of {element.name}: {element.help}")
        object.__setattr__(self, "element", element)

    def coerce(self, value):
        if not isinstance(value, list) or not value:
            raise InvalidParameter(self.name, value, "a sweep is a non-empty list")
        check_point_count(len(value), f"sweep of {self.name}")  # before checking each value
        grid = []
        for i, v in enumerate(value):
            try:
                grid.append(self.element.coerce(v))
            except InvalidParameter as error:
                raise InvalidParameter(f"{self.name}[{i}]", v, error.allowed) from None
        if len(set(map(repr, grid))) != len(grid):
            raise InvalidParameter(self.name, value, "must not repeat a value")
        return grid


def _finite_number(key: str, number):
    if isinstance(number, bool) or not isinstance(number, int | float) or \
            number != number or abs(number) == float("inf"):
        raise InvalidParameter(key, number, "must be a finite number")
    return number


def _constant_parameter(name: str, value) -> Parameter:
    return Parameter(name, value, "constant of the study's expressions", _finite_number)


def table_at(doc: Document, path: KeyPath, value) -> dict:
    if not isinstance(value, dict):
        raise doc.error(path, "must be a table")
    return value


def _coerce(doc: Document, path: KeyPath, parameter: Parameter, value):
    try:
        return parameter.coerce(value)
    except InvalidParameter as error:
        raise doc.error(path, str(error)) from None


class DeferredBounds(Mapping):
    """A study's bounds by name, the names read at once and the bounds themselves (sympy)
    built by ``build`` when one is first looked up, refused then as :func:`load` refuses
    them."""

    deferred = True

    def __init__(self, names: list, build: Callable[[], dict]):
        self._names, self._build, self._bounds = names, build, None

    def __getitem__(self, name: str) -> BoundSpec:
        if self._bounds is None:
            self._bounds = self._build()
        return self._bounds[name]

    def __contains__(self, name) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def from_document(doc: Document, defer_bounds: bool = False) -> Study:
    """The study of one model ``doc`` declares (module docstring; a study of parts is read by
    :mod:`workbench.studies.files`); ``defer_bounds``: a shipped file's ``[[bound]]`` tables
    read when a check first judges (:class:`DeferredBounds`)."""
    data = doc.data
    name, head = heading(doc, FIELD_SECTIONS + OTHER_SECTIONS)

    catalogue = fields()
    values: dict[str, Any] = {}
    for section, group in SECTIONS.items():
        table = table_at(doc, (section,), data.get(section, {}))
        by_key = {f.key: f for f in group}
        for key, value in table.items():
            if key not in by_key:
                raise doc.error((section, key),
                                f"unknown key; known: {', '.join(by_key)}")
            spec = by_key[key]
            values[spec.name] = _coerce(doc, (section, key), _base(spec), value)
    kinds = _kinds(doc, values)
    for section, group in SECTIONS.items():
        for spec in group:
            if spec.key in data.get(section, {}) and spec.only and not kinds & set(spec.only):
                raise doc.error((section, spec.key),
                                f"means nothing in a study of {' / '.join(sorted(kinds))}; it "
                                f"is a key of {' / '.join(spec.only)} studies")
    unused = _unused(data, values)
    for plan in ("trajectory_lengths", "slow_trajectory_length"):
        if values.get(plan) and ("trajectory_length" in values
                                 or "trajectory_length" in data.get("sweep", {})):
            raise doc.error(("system", plan), "plans the trajectory lengths itself: leave out "
                                              "trajectory_length")

    constants = {}
    for key, value in table_at(doc, ("constants",), data.get("constants", {})).items():
        if key in catalogue:
            raise doc.error(("constants", key), "is a study field; set it in its section")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise doc.error(("constants", key), f"must be a finite number, got "
                                                f"{type(value).__name__} {value!r:.60}")
        constants[key] = _coerce(doc, ("constants", key), _constant_parameter(key, value), value)

    sweep = table_at(doc, ("sweep",), data.get("sweep", {}))
    zipped_table = table_at(doc, ("sweep", "zip"), sweep.get("zip", {}))
    product = tuple(k for k in sweep if k != "zip")
    known = {name: _base(spec) for name, spec in catalogue.items()}
    known.update({k: _constant_parameter(k, v) for k, v in constants.items()})
    sweep_values: dict[str, list] = {}
    for path, key, value in ([(("sweep", k), k, sweep[k]) for k in product]
                             + [(("sweep", "zip", k), k, v) for k, v in zipped_table.items()]):
        if key not in known:
            raise doc.error(path, "is not a parameter of the study (a field of [model], "
                                  "[system], [sampler], [run] or a [constants] name)")
        if key in sweep_values:
            raise doc.error(path, "is swept twice")
        if key in unused:
            raise doc.error(path, unused[key])
        spec = catalogue.get(key)
        if spec is not None and spec.only and not kinds & set(spec.only):
            raise doc.error(path, f"is not a parameter of a study of "
                                  f"{' / '.join(sorted(kinds))}")
        if spec is not None and kinds & set(spec.fixed_in):
            raise doc.error(path, "cannot be swept in a study of "
                                  f"{' / '.join(sorted(kinds & set(spec.fixed_in)))}: every "
                                  "point shares the posterior, references and shards it "
                                  "determines; run one study per value")
        if key in SHAPE_FIELDS:
            raise doc.error(path, "cannot be swept: it sets the shape every point's results "
                                  "share (replicates, checkpoints, draws, components, test "
                                  "functions); run one study per value")
        sweep_values[key] = _coerce(doc, path, _SweepParameter(known[key], value), value)
    zipped = (tuple(zipped_table),) if zipped_table else ()
    if REAL_PROCESSES in kinds and (zipped or len(product) != 1):
        raise doc.error(("sweep", *(zipped and ("zip",)), *product[1:2]), "a real-processes "
                        "study sweeps one dim, the worker counts its one point runs one "
                        "after the other")
    if zipped and len({len(sweep_values[k]) for k in zipped[0]}) != 1:
        raise doc.error(("sweep", "zip"), "zipped lists must have the same length")

    parameters = _parameters(values, constants, sweep_values, kinds, unused)
    names = {p.name for p in parameters} | {"iterations"}
    dims = product + tuple(g[0] for g in zipped)
    for parameter in parameters:
        _check_names(doc, parameter, names)
    # a Gaussian study's bounds may use the integrator order K of its sampler
    bound_names = names | ({"integrator_order"} if GAUSSIAN in kinds else set())
    tables = data.get("bound", [])
    if defer_bounds and isinstance(tables, list):
        bounds = DeferredBounds([t.get("name") for t in tables if isinstance(t, dict)],
                                lambda: _bounds(doc, tables, bound_names, dims))
    else:
        bounds = _bounds(doc, tables, bound_names, dims)
    extra, design_parameters = _designs(doc, data, kinds, values, names, dims, bounds,
                                        parameters)
    parameters += design_parameters
    quick = coerce_quick(doc, parameters)
    estimator = values.get("estimator", catalogue["estimator"].parameter.default)
    if LDA in kinds:  # its checks name the samplers it compares
        estimator = values.get("topic_samplers", catalogue["topic_samplers"].parameter.default)
    if "points" in head:
        raise doc.error(("study", "points"), "says how the parts of a study of parts share the "
                                             "sweep's points; this study has no parts")
    family = head.get("family", FAMILIES[0])
    if family not in FAMILIES:
        raise doc.error(("study", "family"), f"must be one of {', '.join(FAMILIES)}, got "
                                             f"{family!r}")
    checks = _checks(doc, data.get("check", []), dims, bounds, tuple(sorted(kinds)), estimator,
                     {d: sweep_values[d] for d in dims}, family == "study")
    if GAUSSIAN in kinds:
        _refuse_other_point_checks(doc, checks, values.get("phase_space", False))
    for section, group in SECTIONS.items():  # after the checks' own refusals
        for spec in group:
            if spec.name in unused and spec.key in data.get(section, {}):
                raise doc.error((section, spec.key), unused[spec.name])
    symbols = table_at(doc, ("study", "symbols"), head.get("symbols", {}))
    for key, value in symbols.items():
        if key not in product + tuple(g[0] for g in zipped):
            raise doc.error(("study", "symbols", key), "is not a sweep dim of the study")
        if not isinstance(value, str) or (value and not value.strip()):
            raise doc.error(("study", "symbols", key), "must be a name (a string; empty: "
                                                       "the value alone names a point)")
    kind = point_kind(values, set(values) | set(dims))
    paired = _paired(doc, head, dims, kinds, kind.name in ENGINE_PAIRED)
    headline, paper = presentation(doc, head)
    return Study(name, str(head.get("summary", "")), str(head.get("source", "")),
                 values, constants, product, zipped, quick, checks, bounds, doc.source,
                 parameters, doc.text, dict(symbols), headline, paper, paired,
                 pair_common_starts(doc, head, kind is HELD_OUT_KIND), family,
                 tuple(sorted(kinds)), extra, looks_budget(doc, head), unused)


def held_out(study: Study) -> bool:
    """Whether the study's points are a model without an oracle's (the held-out kind)."""
    return point_kind(study.values, set(study.values) | set(study.sweep_dims)) is HELD_OUT_KIND


def pair_common_starts(doc: Document, head: dict, shares_starts: bool) -> bool:
    """``[study] pair_common_starts`` (default true): whether the checks of a model without an
    oracle judge the points along a dim whose replicates share their starts as paired
    replicates (:func:`.held_out_point.common_start_dims`); false judges them as independent,
    for comparison. Refused where no points share their starts (``shares_starts`` false: the
    other kinds, or a study of parts without such a part)."""
    value = head.get("pair_common_starts", True)
    if not isinstance(value, bool):
        raise doc.error(("study", "pair_common_starts"), "must be true or false")
    if "pair_common_starts" in head and not shares_starts:
        raise doc.error(("study", "pair_common_starts"),
                        "means nothing here: only the points of a model without an oracle "
                        "(logistic regression, the networks, the language models, your own) "
                        "on the asynchronous, downpour or elastic systems draw their "
                        "replicates' starts from one stream")
    return value


def looks_budget(doc: Document, head: dict) -> float | None:
    """``[study] until_decided``: the wall-clock budget, in seconds, of the looks that
    ``workbench check STUDY`` runs by default (as ``--until-decided --budget``; docs/verdicts.md,
    *Sequential checks*), or None where the study does not ask for them (one look)."""
    if "until_decided" not in head:
        return None
    value, seconds = head["until_decided"], None
    if not isinstance(value, bool):  # true would leave the budget unsaid
        try:
            seconds = duration("until_decided", value)
        except InvalidParameter:
            pass
    if seconds is None:
        raise doc.error(("study", "until_decided"), "must be the budget of the looks, a "
                        "duration such as \"10m\", 600 or \"1.5h\"; leave it out for one "
                        "look")
    return seconds


def heading(doc: Document, sections: tuple[str, ...]) -> tuple[str, dict]:
    """The study's name and its ``[study]`` table, refused naming the key: a section not
    among ``sections``, an unknown ``[study]`` key, the workbench's own code named outside its
    shipped files, a name that is not an identifier."""
    for section, value in doc.data.items():
        if section not in sections:
            path = (section, 0) if isinstance(value, list) else (section,)  # [[section]]
            raise doc.error(path, "unknown section; known: " + ", ".join(sections))
    head = table_at(doc, ("study",), doc.data.get("study", {}))
    for key in head:
        if key not in library.STUDY_KEYS:
            raise doc.error(("study", key),
                            f"unknown key; known: {', '.join(library.STUDY_KEYS)}")
    _refuse_workbench_code(doc, head)
    name = head.get("name")
    if not isinstance(name, str) or not name.strip():
        raise doc.error(("study", "name"), "every study needs a name (a string)")
    if not EXPERIMENT_NAME.fullmatch(name.strip()):
        raise doc.error(("study", "name"), "must be an identifier of at most 64 letters, digits, "
                        "'_', '.' or '-', starting with a letter or a digit (it names the "
                        "study's files under --out)")
    return name.strip(), head


def presentation(doc: Document, head: dict) -> tuple[Headline | None, tuple[PaperEntry, ...]]:
    """The study's headline view and its ``[[paper]]`` entries, refused naming the key."""
    headline = None
    if "headline" in head:
        try:
            headline = Headline.from_table(head["headline"])
        except HeadlineError as error:
            path = ("study", "headline") + ((error.key,) if error.key != "headline" else ())
            raise doc.error(path, error.reason) from None
    try:
        return headline, entries(doc.data.get("paper", []))
    except PaperError as error:
        raise doc.error(("paper", *error.path), error.reason) from None


def _designs(doc: Document, data: dict, kinds: set[str], values: dict, names: set[str],
             dims: tuple[str, ...], bounds, parameters: tuple[Parameter, ...]
             ) -> tuple[tuple[designs.Design, ...], tuple[Parameter, ...]]:
    """The study's ``[[design]]`` tables (:mod:`.designs`) and their parameters, each list
    validated as the parameter it becomes; a Gaussian study's own points only."""
    entries = data.get("design", [])
    if not entries:
        return (), ()
    if GAUSSIAN not in kinds or kinds & set(PROTOCOL_SYSTEMS) or values.get("phase_space"):
        raise doc.error(("design",), "a design runs the points of a Gaussian-mean study (not "
                                     "a phase_space or protocol one)")
    try:
        parsed = designs.parse(entries, names, dims, bounds, SHAPE_FIELDS)
    except designs.DesignError as error:
        raise doc.error(error.path, error.reason) from None
    known = {p.name: getattr(p, "element", p) for p in parameters}

    def grid(key: str, name: str, values: list) -> Parameter:
        return _SweepParameter(replace(designs.element(key, known), name=name), values)

    for i, design in enumerate(parsed):
        for key, values in design.values.items():
            name = design.parameter(key)
            if name in known:
                raise doc.error(("design", i, "name"), f"makes the parameter {name}, which the "
                                                       "study has already")
            path = ("design", i, "sweep", key) if key in design.sweep else ("design", i, key)
            _coerce(doc, path, grid(key, name, values), values)
    return parsed, designs.parameters(parsed, grid)


def _paired(doc: Document, head: dict, dims: tuple[str, ...], kinds: set[str],
            engine_paired: bool) -> tuple[str, ...]:
    """``[study] paired``: sweep dims whose points share random numbers (common random
    numbers), so that points along them differ by their design alone. Traveling chains share
    every one (the schedule, the minibatches, the noise), as seed 004 §3.2.2 compares its
    balancing plans; the points of :data:`ENGINE_PAIRED` kinds (``engine_paired``) the
    engine's noise and minibatches, their schedules staying the point's, and their checks
    along a paired dim judge the points' values jointly (:mod:`.gaussian_judgements`,
    :mod:`.held_out_judgements`)."""
    paired = head.get("paired", [])
    if not isinstance(paired, list) or not all(isinstance(d, str) for d in paired):
        raise doc.error(("study", "paired"), "must be a list of sweep dims")
    for dim in paired:
        if dim not in dims:
            raise doc.error(("study", "paired"), f"{dim!r} is not a sweep dim of the study")
    if paired and TRAVELING not in kinds and not engine_paired:
        raise doc.error(("study", "paired"), "pairs the points of traveling-chains studies, "
                                             "of the Gaussian mean and of models without an "
                                             "oracle on the engine only, not of "
                                             f"{' / '.join(sorted(kinds))}")
    return tuple(paired)


def coerce_quick(doc: Document, parameters: tuple[Parameter, ...]) -> dict[str, Any]:
    """``[quick]``: what ``--quick`` changes, each key a parameter of the study."""
    quick = {}
    by_name = {p.name: p for p in parameters}
    for key, value in table_at(doc, ("quick",), doc.data.get("quick", {})).items():
        if key not in by_name:
            raise doc.error(("quick", key), "is not a parameter of the study")
        quick[key] = _coerce(doc, ("quick", key), by_name[key], value)
    return quick


def _refuse_workbench_code(doc: Document, head: dict) -> None:
    """``figure`` names the workbench's own code: only its shipped files may use it
    (:mod:`workbench.studies.library`)."""
    key = library.CODE_KEY
    if key not in head:
        return
    if not library.shipped(doc.source):
        raise doc.error(("study", key), "names the workbench's own code, which only its "
                        "shipped study files do; a study names its own model as [model] "
                        "kind = \"python\" (run with --allow-code)")
    if not isinstance(head[key], str) or ":" not in head[key]:
        raise doc.error(("study", key), "must be \"module:function\" under "
                        "workbench.experiments")


def _kinds(doc: Document, values: dict) -> set[str]:
    """The study's model, system and point kinds (:func:`.point_kinds.study_kinds`), refused
    where they do not go together
    (:func:`~workbench.studies.schema.validate_kinds`)."""
    try:
        validate_kinds(values)
    except InvalidParameter as error:
        path = {"system": ("system", "kind"), "sampler": ("sampler", "kind"),
                "estimator": ("sampler", "estimator"), "python": ("model", "kind"),
                "n_servers": ("system", "n_servers"), "staleness": ("system", "staleness"),
                "dim": ("model", "dim"), "step_size": ("sampler", "step_size")}[error.field]
        raise doc.error(path, str(error)) from None
    return study_kinds(values, _swept_names(doc.data))


def _swept_names(data: dict) -> set[str]:
    """The names a study's ``[sweep]`` lists (validated later)."""
    sweep = data.get("sweep", {})
    if not isinstance(sweep, dict):
        return set()
    zipped = sweep.get("zip", {})
    return set(sweep) | (set(zipped) if isinstance(zipped, dict) else set())


def _base(spec: Field) -> Parameter:
    """The field's parameter, accepting expression strings where the field allows them."""
    if not spec.expression:
        return spec.parameter
    p = spec.parameter
    return _ExpressionParameter(p.name, p.default, p.help, p.validate, p.choices)


def _has_check(data: dict, kind: str) -> bool:
    """Whether the study has a ``[[check]]`` of this kind (validated later)."""
    entries = data.get("check", [])
    return isinstance(entries, list) and any(
        isinstance(entry, dict) and entry.get("kind") == kind for entry in entries)


def _judges_against_a_reference(data: dict) -> bool:
    """Whether a ``[[check]]`` of the study is of a kind judged against the reference
    posterior (:attr:`.check_kinds.Kind.reference`); the entries are validated later."""
    return any(_has_check(data, kind.name) for kind in check_kinds.KINDS.values()
               if kind.reference)


def _unused(data: dict, values: dict) -> dict[str, str]:
    """Fields of the study's kinds that mean nothing in this study, with why: the reference
    posterior's settings where no check needs one, the keys naming a sampler's factory where
    the sampler is not the researcher's own, the coupling's where it couples no chains, a check
    kind's own fields (:attr:`.check_kinds.Kind.fields`) where no check of that kind reads them,
    the fields of its model and system that its kind of point does not read
    (:attr:`.point_kinds.PointKind.unused`), and elastic's ``budget`` on a model
    without an oracle (its chains run ``n_iterations`` steps each). They are not parameters of
    the study, and writing one is refused."""
    unused = {}
    catalogue = fields()
    model, system = (values.get(k, catalogue[k].parameter.default) for k in ("model", "system"))
    kind = point_kind(values, set(values) | _swept_names(data))
    unused.update(dict.fromkeys(kind.unused, kind.unused_because.format(system=system)))
    if model == GAUSSIAN and kind.name != GAUSSIAN:
        unused["backend"] = ("means nothing here: only the Gaussian mean's own points (a "
                             "staleness schedule, no phase space, pooled servers or protocol) "
                             "run on JAX")
    if model != GAUSSIAN:
        unused["budget"] = ("means nothing on a model without an oracle: its elastic chains "
                            "run n_iterations local steps each")
    if not _judges_against_a_reference(data) and values.get("start") != STARTS[1]:
        unused.update(dict.fromkeys(REFERENCE_KEYS, (
            "means nothing without a check judged against the reference posterior "
            "(reference, envelope): only such a check makes the points compute one")))
    sampler = values.get("sampler", catalogue["sampler"].parameter.default)
    if sampler != PYTHON:
        unused.update(dict.fromkeys(CONFIG_KEYS["sampler"][1:], (
            'means nothing unless [sampler] kind = "python": it names the factory of the '
            "researcher's own sampler")))
    if sampler != COUPLED_SGLD and model != LDA:
        unused.update(dict.fromkeys(COUPLING_FIELDS, (
            f'means nothing unless [sampler] kind = "{COUPLED_SGLD}": it couples traveling '
            "chains in groups")))
    if _has_check(data, "time-to-target"):
        unused["initial_position"] = ("means nothing with a time-to-target check: the chains "
                                      "start initial_offset posterior sd from μ")
    for kind in check_kinds.KINDS.values():
        if kind.fields and not _has_check(data, kind.name):
            unused.update(dict.fromkeys(kind.fields, (
                f"means nothing without a {kind.name!r} check: only such a check makes the "
                "points compute what it reads")))
    if sampler != SGHMC:
        unused["integrator"] = ('means nothing unless [sampler] kind = "sghmc" (the kinds '
                                "sghmc-euler and sghmc-splitting name their integrator)")
    if values.get("step_size") != OPTIMAL_STEP:
        unused["largest_step"] = ('means nothing unless [sampler] step_size = "optimal": it '
                                  "bounds the search for the optimal step")
    return unused


def _parameters(values: dict, constants: dict, sweep_values: dict, kinds: set[str],
                unused: dict[str, str]) -> tuple[Parameter, ...]:
    """One configuration parameter per field of the study's kinds but the ``unused`` ones
    (:func:`_unused`) and per constant, defaulting to the study's value (a sweep list where
    swept); expression fields accept strings."""
    out = []
    for spec in kind_fields(kinds):
        if spec.name in unused:
            continue
        base = _base(spec)
        if spec.name in sweep_values:
            out.append(_SweepParameter(base, sweep_values[spec.name]))
        else:
            default = values.get(spec.name, spec.parameter.default)
            out.append(type(base)(base.name, default, base.help, base.validate, base.choices))
    for key, value in constants.items():
        element = _constant_parameter(key, value)
        out.append(_SweepParameter(element, sweep_values[key]) if key in sweep_values
                   else element)
    return tuple(out)


def _check_names(doc: Document, parameter: Parameter, names: set[str]) -> None:
    values = parameter.default if isinstance(parameter.default, list) else [parameter.default]
    for value in values:
        if isinstance(value, str) and _is_expression_field(parameter.name) and \
                value not in fields()[parameter.name].words:
            path = _path_of(parameter.name)
            try:
                unknown = free_names(value) - names
            except BoundSyntaxError as error:
                raise doc.error(path, str(error)) from None
            if unknown:
                raise doc.error(path, f"unknown name {', '.join(sorted(map(repr, unknown)))} in "
                                      f"{value!r}; known: {', '.join(sorted(names))}")


def _is_expression_field(name: str) -> bool:
    spec = fields().get(name)
    return spec is not None and spec.expression


def _path_of(name: str) -> KeyPath:
    spec = fields()[name]
    section = next(s for s, group in SECTIONS.items() if spec in group)
    return (section, spec.key)


def _bounds(doc: Document, entries, names: set[str],
            dims: tuple[str, ...]) -> dict[str, BoundSpec]:
    if not isinstance(entries, list):
        raise doc.error(("bound",), "write bounds as [[bound]] tables")
    allowed = ("name", "expression", "registered", "step", "quantity", "assumptions", "fixed",
               "symbols", "test_function")
    bounds = {}
    for i, entry in enumerate(entries):
        from bounds.symbols import SYMBOLS

        entry = table_at(doc, ("bound", i), entry)
        for key in entry:
            if key not in allowed:
                raise doc.error(("bound", i, key), f"unknown key; known: {', '.join(allowed)}")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise doc.error(("bound", i, "name"), "every bound needs a name")
        if name in bounds:
            raise doc.error(("bound", i, "name"), f"bound {name!r} is declared twice")
        if "registered" in entry:
            bound = _registered(doc, i, entry)
        else:
            bound = _typed(doc, i, entry, name)
        fixed = table_at(doc, ("bound", i, "fixed"), entry.get("fixed", {}))
        for key, value in fixed.items():
            _coerce(doc, ("bound", i, "fixed", key), _constant_parameter(key, value), value)
        symbols = table_at(doc, ("bound", i, "symbols"), entry.get("symbols", {}))
        for key, value in symbols.items():
            if not any(s.name == key for s in bound.expression.free_symbols):
                raise doc.error(("bound", i, "symbols", key), "is not a symbol of the bound")
            if value not in dims:
                raise doc.error(("bound", i, "symbols", key),
                                f"must name a sweep dim ({', '.join(dims) or 'none'}), got "
                                f"{value!r}")
        where = "registered" if "registered" in entry else "expression"
        for symbol in bound.expression.free_symbols:
            if SYMBOLS[symbol].hidden_constant or symbol.name in names | set(fixed) | set(symbols):
                continue
            raise doc.error(("bound", i, where),
                            f"symbol {symbol.name!r} is neither a constant to fit (C, C1, ...) "
                            "nor a value of the study (a sweep dim, field or constant) nor "
                            "given in the bound's fixed table")
        function = entry.get("test_function")
        bounds[name] = BoundSpec(name, bound, function, dict(fixed), dict(symbols))
    return bounds


def _typed(doc: Document, i: int, entry: dict, name: str) -> Bound:
    """A bound typed in the study: parsed through the whitelist of :mod:`bounds.parse`."""
    if "step" in entry:
        raise doc.error(("bound", i, "step"), "takes a registered bound's fixed-step form; a "
                                              "typed expression is written in the form wanted")
    quantity = entry.get("quantity", "mse")
    if quantity not in BOUND_QUANTITIES:
        raise doc.error(("bound", i, "quantity"),
                        f"must be one of {', '.join(BOUND_QUANTITIES)}")
    assumptions = table_at(doc, ("bound", i, "assumptions"), entry.get("assumptions", {}))
    from bounds.parse import user_bound

    try:
        return user_bound(entry.get("expression"), name=name, quantity=quantity,
                          assumptions=assumptions, source=f"study {doc.source}")
    except BoundSyntaxError as error:
        raise doc.error(("bound", i, "expression"), str(error)) from None


def _registered(doc: Document, i: int, entry: dict) -> Bound:
    """A bound of the registry (``workbench bounds list``), referenced by its name."""
    for key in ("expression", "quantity", "assumptions"):
        if key in entry:
            raise doc.error(("bound", i, key), "a registered bound brings its own; "
                                               "write either registered or expression")
    from bounds import registry

    name = entry["registered"]
    if not isinstance(name, str) or name not in registry.BOUNDS:
        raise doc.error(("bound", i, "registered"),
                        f"no registered bound {name!r}; see `workbench bounds list`")
    bound = registry.get(name)
    step = entry.get("step", BOUND_STEPS[0])
    if step not in BOUND_STEPS:
        raise doc.error(("bound", i, "step"), f"must be one of {', '.join(BOUND_STEPS)}, got "
                                              f"{step!r}")
    if step == BOUND_STEPS[1] and not bound.fixed_step:
        raise doc.error(("bound", i, "step"), f"{name!r} has no fixed-step form")
    return bound.with_fixed_step() if step == BOUND_STEPS[1] else bound


def _checks(doc: Document, entries, dims: tuple[str, ...], bounds: dict,
            kinds: tuple[str, ...], estimators: list[str],
            swept: dict[str, list], one_family: bool) -> tuple[CheckSpec, ...]:
    if not isinstance(entries, list):
        raise doc.error(("check",), "write checks as [[check]] tables")
    out = []
    for i, entry in enumerate(entries):
        entry = dict(table_at(doc, ("check", i), entry))
        kind = entry.pop("kind", None)
        if not isinstance(kind, str) or kind not in check_kinds.KINDS:
            raise doc.error(("check", i, "kind"),
                            f"must be one of {', '.join(check_kinds.KINDS)}, got {kind!r}")
        try:
            options = check_kinds.KINDS[kind].validate(entry, dims, bounds, kinds, estimators,
                                                       swept, one_family)
        except check_kinds.CheckOptionError as error:
            raise doc.error(("check", i, error.key), error.reason) from None
        out.append(CheckSpec(kind, options, i))
    return tuple(out)


def _refuse_other_point_checks(doc: Document, checks: tuple[CheckSpec, ...],
                               phase_space: bool) -> None:
    """A Gaussian study of the phase space judges with its own kinds and test functions
    (:mod:`.phase_space_judgements`), another never with those of the phase space."""
    for spec in checks:
        if phase_space and spec.kind not in check_kinds.PHASE_SPACE_KINDS:
            raise doc.error(("check", spec.index, "kind"), "a phase_space study judges "
                            f"{' / '.join(check_kinds.PHASE_SPACE_KINDS)} checks")
        function = spec.options.get("test_function")
        known = PHASE_SPACE_FUNCTIONS if phase_space else BUILTIN
        if function is not None and function not in known:
            raise doc.error(("check", spec.index, "test_function"),
                            f"must be one of {', '.join(known)} in a "
                            f"{'' if phase_space else 'non-'}phase_space study, got {function!r}")


__all__ = ["BoundSpec", "CheckSpec", "Study", "StudyError", "from_document"]
