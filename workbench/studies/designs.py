"""A study's extra designs: ``[[design]]`` tables, each a grid of runs of its own over the
study's model, beside the seed design of its ``[sweep]``.

A bound is often put to the test on a grid the seed design does not cover. Seed 001 (Chen et
al. 2016) §4 is the example: Theorem 3's rate needs L on a grid at a fixed τ and the optimal
step, its envelope and Theorem 4's independence of τ a grid over (τ, h, L). A design is such a
grid: the study's model, system, sampler and run settings at the points of its own ``sweep``,
judged by its own ``[[design.check]]`` entries (:mod:`.design_judgements`); its points run and
combine in :mod:`.design_point`. Keys of a design named ``rate``:

- ``name``: prefixes its parameters, dims and variables (``rate_staleness``, ``rate_estimate``);
- ``sweep``: lists whose product are its runs, each a study value (a field, a constant) or a
  name of the design's own that its ``step_size`` uses; parameter ``<name>_<key>``, dim
  ``<name>_<key>``. Every dim of the study's ``[sweep]`` is among them;
- ``iterations``: the sample counts L read from each run (dim ``<name>_iterations``); written in
  ``sweep`` instead, each L is a run of its own, L iterations long and read at L;
- ``step_size``: an expression over the study's values, the design's and
  ``posterior_variance`` (steps relative to s² stay stable when the model changes); default,
  the study's ``[sampler] step_size`` at the design's point;
- ``paired``: sweep keys along which the runs share their random numbers (common random
  numbers: a check comparing them sees their differences far more precisely);
- ``split``: how its envelope checks divide the grid (parameter ``<name>_split``);
- ``[[design.check]]``: ``rate``, ``envelope`` or ``invariance`` against a ``[[bound]]``.

The parameter ``designs`` runs them (``--set designs=false`` runs the seed design alone), and
``bootstrap_resamples`` sets the resamples of their rate and invariance checks.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from bounds.expressions import BoundSyntaxError, free_names
from simulators import validation
from simulators.exceptions import PicklesWithArguments
from workbench.core.parameters import Parameter
from workbench.run.parameters import BOOTSTRAP_RESAMPLES
from workbench.studies.check_kinds import SPLITS

#: the sample counts read from a design's runs (a design's run is ``n_iterations`` long)
ITERATIONS = "iterations"
#: the model's posterior variance s², which a design's step size may use
POSTERIOR_VARIANCE = "posterior_variance"
#: the key of a design's point that names its design
DESIGN = "design"
DESIGNS = Parameter("designs", True, "run the study's [[design]] tables beside its [sweep]")
#: the keys a design check of each kind takes besides ``kind``
CHECK_KEYS = {"rate": ("bound",), "envelope": ("bound",), "invariance": ("bound", "over")}
KEYS = ("name", "sweep", ITERATIONS, "step_size", "paired", "split", "check")
NAME = re.compile(r"[a-z][a-z0-9]*")


class DesignError(PicklesWithArguments, ValueError):
    """A refusal of a ``[[design]]`` entry, at ``path`` in the study file."""

    def __init__(self, path: tuple, reason: str):
        super().__init__(reason)
        self.path, self.reason = path, reason


@dataclass(frozen=True)
class DesignCheck:
    """One ``[[design.check]]``: its kind, the ``[[bound]]`` it judges, and for an invariance
    check the sweep key across which the bound says nothing changes."""

    kind: str
    bound: str
    over: str | None = None


@dataclass(frozen=True)
class Design:
    """One ``[[design]]`` as written (module docstring); its lists are parameters, so a run's
    configuration holds their values (``config[design.parameter("staleness")]``)."""

    name: str
    sweep: tuple[str, ...]          # its sweep keys, in file order
    step_size: str | None           # None: the study's [sampler] step_size
    paired: tuple[str, ...]
    checks: tuple[DesignCheck, ...]
    values: dict[str, list]         # key → the study file's list (sweep keys, read-out L)
    split: str = SPLITS[0]

    def parameter(self, key: str) -> str:
        """The parameter, and dim, of one of the design's keys."""
        return f"{self.name}_{key}"

    @property
    def read_out(self) -> bool:
        """Whether each run is read at every L of ``iterations`` (else L is swept)."""
        return ITERATIONS not in self.sweep

    @property
    def grid(self) -> tuple[str, ...]:
        """The dims of the design's measurements, unprefixed: its sweep keys, and the
        read-out L."""
        return self.sweep + ((ITERATIONS,) if self.read_out else ())

    def points(self, config: dict) -> list[dict[str, Any]]:
        """The design's runs, in grid order; a swept L is the run's ``n_iterations``."""
        keys = [("n_iterations" if k == ITERATIONS else k) for k in self.sweep]
        return [{DESIGN: self.name, **dict(zip(keys, values, strict=True))}
                for values in itertools.product(*(config[self.parameter(k)]
                                                  for k in self.sweep))]

    def streams(self, point: dict) -> dict | None:
        """What keys a point's random numbers: the point without its ``paired`` keys, so that
        the runs along them share theirs (None: the point itself)."""
        return {k: v for k, v in point.items() if k not in self.paired} if self.paired else None

    def has(self, kind: str) -> bool:
        return any(check.kind == kind for check in self.checks)


def of(point: dict) -> str | None:
    """The name of the design a point belongs to (None: the seed design)."""
    return point.get(DESIGN)


def parameters(designs: tuple[Design, ...], grid) -> tuple[Parameter, ...]:
    """The designs' parameters: ``designs``, ``bootstrap_resamples`` where a check resamples,
    and per design its lists and split; ``grid(key, name, values)`` is the parameter ``name``
    of a list of ``key``'s values (:func:`element`)."""
    if not designs:
        return ()
    out = [DESIGNS]
    if any(d.has("rate") or d.has("invariance") for d in designs):
        out.append(BOOTSTRAP_RESAMPLES)
    for design in designs:
        for key, values in design.values.items():
            out.append(grid(key, design.parameter(key), values))
        if design.has("envelope"):
            out.append(Parameter(design.parameter("split"), design.split,
                                 f"design {design.name}: how its envelope checks divide the "
                                 "grid into calibration and held-out runs", choices=SPLITS))
    return tuple(out)


def element(key: str, known: dict[str, Parameter]) -> Parameter:
    """What one value of a design's list is: a study value's own parameter, a sample count
    (``iterations``), or a positive number of the design's own."""
    if key in known:
        return known[key]
    if key == ITERATIONS:
        return Parameter(key, 1, "sample counts L read from the design's runs (swept: one run "
                                 "per L)", lambda name, v: validation.integer(name, v, minimum=1))
    return Parameter(key, 1.0, "the design's own values, used by its step_size",
                     validation.positive)


def parse(entries, names: set[str], sweep_dims: tuple[str, ...], bounds,
          fixed: tuple[str, ...]) -> tuple[Design, ...]:
    """The study's ``[[design]]`` tables, refused with :class:`DesignError` where they cannot
    run: ``names``, the study's values; ``sweep_dims``, its ``[sweep]``'s; ``bounds``, its
    ``[[bound]]`` names; ``fixed``, fields a design may not sweep (the shape of results)."""
    if not isinstance(entries, list):
        raise DesignError(("design",), "write designs as [[design]] tables")
    designs: list[Design] = []
    for i, entry in enumerate(entries):
        designs.append(_design(i, entry, names, sweep_dims, bounds, fixed, designs))
    return tuple(designs)


def _table(path: tuple, value) -> dict:
    if not isinstance(value, dict):
        raise DesignError(path, "must be a table")
    return value


def _design(i: int, entry, names: set[str], sweep_dims: tuple[str, ...], bounds,
            fixed: tuple[str, ...], before: list[Design]) -> Design:
    at = ("design", i)
    entry = _table(at, entry)
    for key in entry:
        if key not in KEYS:
            raise DesignError((*at, key), f"unknown key; known: {', '.join(KEYS)}")
    name = entry.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise DesignError((*at, "name"), "every design needs a name of lower-case letters and "
                                         "digits (it prefixes its parameters and dims)")
    if name in {d.name for d in before}:
        raise DesignError((*at, "name"), f"design {name!r} is declared twice")
    sweep = _table((*at, "sweep"), entry.get("sweep", {}))
    if not sweep:
        raise DesignError((*at, "sweep"), "a design needs a sweep: lists whose product are "
                                          "its runs")
    step_size = entry.get("step_size")
    used = _step_names(at, step_size)
    unknown = used - names - set(sweep) - {POSTERIOR_VARIANCE, "n_iterations"}
    if unknown:
        raise DesignError((*at, "step_size"), f"unknown name {', '.join(sorted(unknown))}; "
                          "known: the study's values, the design's sweep keys, "
                          f"{POSTERIOR_VARIANCE}, n_iterations")
    for key, values in sweep.items():
        if key in (DESIGN, "n_iterations"):
            raise DesignError((*at, "sweep", key), "write the sample counts as iterations"
                              if key == "n_iterations" else "names the design itself")
        if key in fixed:
            raise DesignError((*at, "sweep", key), "cannot be swept: it sets the shape every "
                                                   "point's results share")
        if key not in names and key != ITERATIONS and key not in used:
            raise DesignError((*at, "sweep", key), "is neither a value of the study nor a "
                                                   "name the design's step_size uses")
        if not isinstance(values, list):
            raise DesignError((*at, "sweep", key), "must be a list")
    for dim in sweep_dims:
        if dim not in sweep:
            raise DesignError((*at, "sweep"), f"must give {dim}, which [sweep] sweeps: every "
                                              "point of the study has a value of it")
    values = dict(sweep)
    if ITERATIONS in entry:
        if ITERATIONS in sweep:
            raise DesignError((*at, ITERATIONS), "is swept in the design's sweep already")
        if not isinstance(entry[ITERATIONS], list):
            raise DesignError((*at, ITERATIONS), "must be a list of sample counts")
        values[ITERATIONS] = entry[ITERATIONS]
    elif ITERATIONS not in sweep:
        raise DesignError(at, "needs iterations: the sample counts L read from each run (or "
                              "swept, one run per L)")
    paired = entry.get("paired", [])
    if not isinstance(paired, list) or any(p not in sweep or p == ITERATIONS for p in paired):
        raise DesignError((*at, "paired"), "must be a list of the design's sweep keys (but "
                                           "iterations)")
    checks = _checks(at, entry.get("check", []), sweep, bounds)
    split = entry.get("split", SPLITS[0])
    if split not in SPLITS:
        raise DesignError((*at, "split"), f"must be one of {', '.join(SPLITS)}")
    if "split" in entry and not any(c.kind == "envelope" for c in checks):
        raise DesignError((*at, "split"), "means nothing without an envelope check")
    return Design(name, tuple(sweep), step_size, tuple(paired), checks, values, split)


def _step_names(at: tuple, step_size) -> set[str]:
    """The names a design's ``step_size`` uses."""
    if step_size is None:
        return set()
    if not isinstance(step_size, str):
        raise DesignError((*at, "step_size"), "must be an expression (a string)")
    try:
        return free_names(step_size)
    except BoundSyntaxError as error:
        raise DesignError((*at, "step_size"), str(error)) from None


def _checks(at: tuple, entries, sweep: dict, bounds) -> tuple[DesignCheck, ...]:
    if not isinstance(entries, list):
        raise DesignError((*at, "check"), "write a design's checks as [[design.check]] tables")
    checks = []
    for j, entry in enumerate(entries):
        path = (*at, "check", j)
        entry = _table(path, entry)
        kind = entry.get("kind")
        if not isinstance(kind, str) or kind not in CHECK_KEYS:
            raise DesignError((*path, "kind"), f"must be one of {', '.join(CHECK_KEYS)}, got "
                                               f"{kind!r}")
        for key in entry:
            if key != "kind" and key not in CHECK_KEYS[kind]:
                raise DesignError((*path, key), f"unknown key; known: kind, "
                                                f"{', '.join(CHECK_KEYS[kind])}")
        if not isinstance(entry.get("bound"), str) or entry["bound"] not in bounds:
            raise DesignError((*path, "bound"), f"names no [[bound]] of the study "
                                                f"({', '.join(bounds) or 'none'}), got "
                                                f"{entry.get('bound')!r}")
        over = entry.get("over")
        if kind == "invariance" and (not isinstance(over, str) or over not in sweep
                                     or over == ITERATIONS):
            raise DesignError((*path, "over"), "must be one of the design's sweep keys (but "
                                               f"iterations), got {over!r}")
        if kind == "rate" and ITERATIONS not in sweep:
            raise DesignError((*path, "kind"), "a rate check compares runs of different L: "
                                               "sweep iterations in the design's sweep")
        checks.append(DesignCheck(kind, entry["bound"], over))
    return tuple(checks)
