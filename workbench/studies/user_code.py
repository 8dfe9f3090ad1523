"""The researcher's own Python in a study: naming it, the consent to run it, loading it, and
checking that it keeps the protocol before any work.

A study of ``[model] kind = "python"`` names a factory in one of two ways:

- ``python = "module:attribute"``: a module beside the study file (its folder is searched
  first) or an installed one, and an attribute of it (dotted for a class attribute);
- ``entry_point = "name"``: an entry point of the group ``sgmcmc_workbench.models`` that an
  installed package declares (``[project.entry-points."sgmcmc_workbench.models"]`` in its
  ``pyproject.toml``).

The workbench calls ``factory(rng, **arguments)`` with a :class:`numpy.random.Generator` keyed by
the study and the seed (so the data are the same at every sweep point and every run) and the
study's ``[model.arguments]``, and expects a model of the protocol of
:mod:`workbench.models.protocol`: ``n_data``, ``dim``, ``potential``, ``potential_gradient``,
``minibatch_gradient()`` (``n_data``, ``dim``, ``prepare(indices)``, ``__call__(position,
minibatch)``), and optionally ``test_functions()`` (held-out scores, each position ``(..., d)`` to
``(..., 1)``) and ``initial_position(rng, shape)``. :func:`check_model` probes all of it on one
replicate before a sweep starts and names the object and what is wrong.

A study of a model without an exact oracle may also name its own sampler, ``[sampler] kind =
"python"`` with ``python`` or ``entry_point`` (group ``sgmcmc_workbench.samplers``) and
``[sampler.arguments]``: the workbench calls ``factory(step_size, **arguments)`` with each
point's step size and expects the protocol of :class:`workbench.samplers.base.Sampler`
(``init``, ``gradient_point``, ``step``, ``position``, ``describe``, ``name``,
``step_size``), which :func:`check_sampler` probes before any work. The engine replays it as
it replays the built-in samplers: the same schedule, stale reads, minibatches and noise.

Running a study that names Python code is running that code, with the user's rights: the
command line refuses it without ``--allow-code`` and the dashboard without its explicit switch
(:class:`CodeNotAllowed`, :func:`code_of`). Bound strings and expressions stay whitelist-only
whatever is allowed.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from simulators import validation
from simulators.exceptions import PicklesWithArguments

#: the entry-point group per kind of object a study can name
ENTRY_POINT_GROUPS = {"model": "sgmcmc_workbench.models",
                      "sampler": "sgmcmc_workbench.samplers",
                      "test_function": "sgmcmc_workbench.test_functions"}
#: per kind: the configuration keys of its kind, its factory's object path, its entry point
#: and its factory's keyword arguments (the study's [model] or [sampler] python, entry_point,
#: arguments)
CONFIG_KEYS = {"model": ("model", "python", "entry_point", "arguments"),
               "sampler": ("sampler", "sampler_python", "sampler_entry_point",
                           "sampler_arguments")}
#: how each kind's factory is called (what its arguments are)
CALLED_AS = {"model": "factory(rng, **arguments)", "sampler": "factory(step_size, **arguments)"}
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
OBJECT_PATH = re.compile(rf"({_DOTTED}):({_DOTTED})")
ENTRY_POINT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


class CodeNotAllowed(Exception):
    """A study names Python code and running it was not allowed (``--allow-code``)."""


class UserCodeError(PicklesWithArguments, ValueError):
    """The named object cannot be loaded, or breaks the protocol; names the object. ``key``:
    the study's ``(section, key)`` at fault when it is not the one naming the object."""

    def __init__(self, message: str, key: tuple[str, str] | None = None):
        super().__init__(message)
        self.key = key


def object_path(name: str, value):
    """``module:attribute`` (module docstring), checked as text (nothing is imported)."""
    if not isinstance(value, str) or not OBJECT_PATH.fullmatch(value):
        raise validation.InvalidParameter(name, value, "must be 'module:attribute' (dotted "
                                                       "Python names, e.g. "
                                                       "'my_model.probit:ProbitRegression')")
    return value


def entry_point_name(name: str, value):
    if not isinstance(value, str) or not ENTRY_POINT.fullmatch(value):
        raise validation.InvalidParameter(name, value, "must be the name of an entry point")
    return value


def _distinct(check: Callable[[str, Any], str]) -> Callable[[str, Any], list[str]]:
    """A validator of a list of distinct values, each checked by ``check``."""
    def validate(name: str, value) -> list[str]:
        if not isinstance(value, list):
            raise validation.InvalidParameter(name, value, "must be a list")
        checked = [check(f"{name}[{i}]", entry) for i, entry in enumerate(value)]
        if len(set(checked)) != len(checked):
            raise validation.InvalidParameter(name, value, "must not repeat an entry")
        return checked
    return validate


object_paths = _distinct(object_path)
entry_point_names = _distinct(entry_point_name)


def code_of(config: dict) -> str:
    """What Python a study's configuration would run, in words; ``""`` when none."""
    named = [_label(kind, config) for kind in CONFIG_KEYS if _named(kind, config)]
    named += [f"the test function {path}" for path in config.get("python_test_functions", [])]
    named += [f"the test function of entry point {name!r} (group "
              f"{ENTRY_POINT_GROUPS['test_function']})"
              for name in config.get("test_function_entry_points", [])]
    return " and ".join(named)


def _named(kind: str, config: dict) -> bool:
    return config.get(CONFIG_KEYS[kind][0]) == "python"


def label_of(kind: str, config: dict) -> str:
    """The words naming the factory of ``kind`` a study names; ``""`` when it names none."""
    return _label(kind, config) if _named(kind, config) else ""


def _label(kind: str, config: dict) -> str:
    _, python, entry_point, _ = CONFIG_KEYS[kind]
    if config.get(entry_point, "name") != "name":
        return (f"the {kind} factory of entry point {config[entry_point]!r} "
                f"(group {ENTRY_POINT_GROUPS[kind]})")
    return f"the {kind} factory {config[python]}"


def require_allowed(study_name: str, origin: str, config: dict, allowed: bool) -> None:
    """Refuse (:class:`CodeNotAllowed`) a study that names Python code unless allowed."""
    code = code_of(config)
    if code and not allowed:
        raise CodeNotAllowed(f"study {study_name!r} ({origin}) would run Python code: {code}; "
                             "running it runs that code with your rights: pass --allow-code")


def load_factory(config: dict, search: Path | None,
                 kind: str = "model") -> tuple[Callable[..., Any], str]:
    """The factory of ``kind`` (model or sampler) a study names, and its label; ``search``:
    the study file's folder, searched first for a ``python`` module."""
    _, python, entry_point, _ = CONFIG_KEYS[kind]
    if config.get(entry_point, "name") != "name":
        target, label = load_entry_point(kind, config[entry_point])
    else:
        target, label = load_object(config[python], search)
    if not callable(target):
        raise UserCodeError(f"{label} is not callable: the factory is called as "
                            f"{CALLED_AS[kind]}")
    return target, label


def load_entry_point(kind: str, name: str) -> tuple[Any, str]:
    """The object an installed package declares as entry point ``name`` of ``kind``'s group,
    and its label."""
    group = ENTRY_POINT_GROUPS[kind]
    found = [e for e in importlib.metadata.entry_points(group=group) if e.name == name]
    if not found:
        raise UserCodeError(f"entry point {name!r}: no installed package declares it in "
                            f"group {group}")
    label = f"entry point {name!r} ({found[0].value})"
    try:
        return found[0].load(), label
    except Exception as error:  # the user's import: any exception is theirs to see
        raise UserCodeError(f"{label} does not import: {type(error).__name__}: "
                            f"{error}") from None


def load_object(path: str, search: Path | None) -> tuple[Any, str]:
    """The object ``module:attribute`` names (``search`` first for the module), and its
    label (the path)."""
    module_name, attribute = OBJECT_PATH.fullmatch(path).groups()
    added = search is not None and str(search) not in sys.path
    if added:
        sys.path.insert(0, str(search))
    try:
        target = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception as error:  # ImportError, AttributeError, or the module's own failure
        raise UserCodeError(f"{path} does not import: {type(error).__name__}: {error}"
                            + (f" (searched {search} first)" if search else "")) from None
    finally:
        if added:
            sys.path.remove(str(search))
    return target, path


def user_test_functions(config: dict, search: Path | None, dim: int) -> tuple:
    """The study's own test functions (``python_test_functions``, then
    ``test_function_entry_points``), each a :class:`~workbench.core.phi.TestFunction` — as
    given, or a plain function named by its attribute or entry point — probed at θ = 0 of
    shape (1, d) for a value of shape (1, 1)."""
    from workbench.core.phi import TestFunction

    named = [(partial(load_object, path, search), path, ("run", "python_test_functions"))
             for path in config["python_test_functions"]]
    named += [(partial(load_entry_point, "test_function", name), name,
               ("run", "test_function_entry_points"))
              for name in config["test_function_entry_points"]]
    functions = []
    for load, name, key in named:
        try:
            target, label = load()
            if not callable(target):
                raise UserCodeError(f"{label} is not callable: a test function maps θ of "
                                    "shape (..., d) to (..., 1)")
            function = target if isinstance(getattr(target, "name", None), str) else \
                TestFunction(name.rpartition(":")[2].rpartition(".")[2], target)
            try:
                _shape(label, f"test function {function.name!r} at θ of shape (1, d)",
                       function(np.zeros((1, dim))), (1, 1))
            except UserCodeError:
                raise
            except Exception as error:  # the user's function failed on the probe
                raise UserCodeError(f"{label}: the probe failed: {type(error).__name__}: "
                                    f"{error}") from None
        except UserCodeError as error:
            raise UserCodeError(str(error), key) from None
        functions.append(function)
    return tuple(functions)


def user_sampler(config: dict, search: Path | None, dim: int):
    """The study's own sampler: its factory called as ``factory(step_size, **arguments)``
    with the point's step size, and probed for the protocol (:func:`check_sampler`) in the
    model's dimension ``dim``."""
    key = ("sampler", "entry_point" if config["sampler_entry_point"] != "name" else "python")
    try:
        factory, label = load_factory(config, search, "sampler")
        arguments = config["sampler_arguments"]
        try:
            sampler = factory(config["step_size"], **arguments)
        except Exception as error:  # the user's constructor: its failure is theirs to read
            raise UserCodeError(f"{label}({config['step_size']!r}, **{arguments}) failed: "
                                f"{type(error).__name__}: {error}") from None
        check_sampler(sampler, label, dim)
    except UserCodeError as error:
        raise UserCodeError(str(error), key) from None
    return sampler


def _shape(label: str, what: str, value, expected: tuple[int, ...]) -> np.ndarray:
    array = np.asarray(value)
    if array.shape != expected:
        raise UserCodeError(f"{label}: {what} has shape {array.shape}, expected {expected}")
    if not np.all(np.isfinite(array)):
        raise UserCodeError(f"{label}: {what} is not finite at the probe")
    return array


def _integer(label: str, what: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise UserCodeError(f"{label}: {what} must be a positive integer, got {value!r}")
    return int(value)


def check_model(model, label: str, probe: float = 0.0) -> None:
    """Refuse, naming ``label`` and what is wrong, a model that breaks the protocol: a missing
    attribute or method, or a wrong shape or non-finite value on a one-replicate probe at
    θ = ``probe`` (module docstring)."""
    for name in ("n_data", "dim", "potential", "potential_gradient", "minibatch_gradient"):
        if not hasattr(model, name):
            raise UserCodeError(f"{label}: the model has no {name} (the Model protocol: "
                                "n_data, dim, potential, potential_gradient, "
                                "minibatch_gradient)")
    n_data, dim = _integer(label, "n_data", model.n_data), _integer(label, "dim", model.dim)
    theta = np.full((1, dim), float(probe))
    try:
        _shape(label, "potential(θ) for θ of shape (1, d)", model.potential(theta), (1,))
        _shape(label, "potential_gradient(θ)", model.potential_gradient(theta), (1, dim))
        estimator = model.minibatch_gradient()
        for name in ("n_data", "dim", "prepare"):
            if not hasattr(estimator, name):
                raise UserCodeError(f"{label}: minibatch_gradient() has no {name}")
        if (estimator.n_data, estimator.dim) != (n_data, dim):
            raise UserCodeError(f"{label}: minibatch_gradient() has n_data, dim = "
                                f"{estimator.n_data}, {estimator.dim}; the model "
                                f"{n_data}, {dim}")
        batch = estimator.prepare(np.zeros((1, min(2, n_data)), dtype=np.int64))
        _shape(label, "minibatch_gradient()(θ, prepare(indices))", estimator(theta, batch),
               (1, dim))
        if hasattr(model, "test_functions"):
            for function in model.test_functions():
                if not isinstance(getattr(function, "name", None), str):
                    raise UserCodeError(f"{label}: a test function has no name (use "
                                        "workbench.core.phi.TestFunction)")
                _shape(label, f"test function {function.name!r}", function(theta), (1, 1))
        if hasattr(model, "initial_position"):
            start = model.initial_position(np.random.default_rng(0), (1, 1))
            _shape(label, "initial_position(rng, (1, 1))", start, (1, 1, dim))
    except UserCodeError:
        raise
    except Exception as error:  # the user's method failed on the probe
        raise UserCodeError(f"{label}: the protocol probe failed: {type(error).__name__}: "
                            f"{error}") from None


def check_sampler(sampler, label: str, dim: int) -> None:
    """Refuse, naming ``label`` and what is wrong, a sampler that breaks the protocol of
    :class:`workbench.samplers.base.Sampler`: a missing attribute or method, or, on a probe of
    one replicate and one server at θ = 0 with a zero gradient and zero noise, a gradient point
    or position not of shape (1, 1, d), not finite, or a ``describe()`` that is not a table."""
    for name in ("name", "step_size", "init", "gradient_point", "step", "position",
                 "describe"):
        if not hasattr(sampler, name):
            raise UserCodeError(f"{label}: the sampler has no {name} (the Sampler protocol: "
                                "name, step_size, init, gradient_point, step, position, "
                                "describe)")
    if not isinstance(sampler.name, str):
        raise UserCodeError(f"{label}: the sampler's name must be a string")
    zeros = np.zeros((1, 1, dim))
    try:
        state = sampler.init(zeros.copy())
        _shape(label, "gradient_point(init(θ)) for θ of shape (1, 1, d)",
               sampler.gradient_point(state), zeros.shape)
        state = sampler.step(state, zeros.copy(), zeros.copy())
        _shape(label, "position(step(state, ∇ = 0, ξ = 0))", sampler.position(state),
               zeros.shape)
        if not isinstance(sampler.describe(), dict):
            raise UserCodeError(f"{label}: describe() must return a dict (the sampler's "
                                "settings, kept with every result)")
    except UserCodeError:
        raise
    except Exception as error:  # the user's method failed on the probe
        raise UserCodeError(f"{label}: the sampler's protocol probe failed: "
                            f"{type(error).__name__}: {error}") from None
