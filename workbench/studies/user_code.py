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
from pathlib import Path
from typing import Any

import numpy as np

from simulators import validation

#: the entry-point group per kind of object a study can name
ENTRY_POINT_GROUPS = {"model": "sgmcmc_workbench.models"}
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
OBJECT_PATH = re.compile(rf"({_DOTTED}):({_DOTTED})")
ENTRY_POINT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


class CodeNotAllowed(Exception):
    """A study names Python code and running it was not allowed (``--allow-code``)."""


class UserCodeError(ValueError):
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


def code_of(config: dict) -> str:
    """What Python a study's configuration would run, in words; ``""`` when none."""
    if config.get("model") != "python":
        return ""
    if config.get("entry_point", "name") != "name":
        return (f"the model factory of entry point {config['entry_point']!r} "
                f"(group {ENTRY_POINT_GROUPS['model']})")
    return f"the model factory {config['python']}"


def require_allowed(study_name: str, origin: str, config: dict, allowed: bool) -> None:
    """Refuse (:class:`CodeNotAllowed`) a study that names Python code unless allowed."""
    code = code_of(config)
    if code and not allowed:
        raise CodeNotAllowed(f"study {study_name!r} ({origin}) would run Python code: {code}; "
                             "running it runs that code with your rights: pass --allow-code")


def load_factory(config: dict, search: Path | None) -> tuple[Callable[..., Any], str]:
    """The factory a study names, and its label; ``search``: the study file's folder, searched
    first for a ``python`` module."""
    if config.get("entry_point", "name") != "name":
        name = config["entry_point"]
        group = ENTRY_POINT_GROUPS["model"]
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
    path = config["python"]
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
    if not callable(target):
        raise UserCodeError(f"{path} is not callable: the factory is called as "
                            "factory(rng, **arguments)")
    return target, path


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
