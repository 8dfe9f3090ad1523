"""A study's sweep: its points, and each point's values with the derived ones computed.

``[sweep]`` lists values per name; the names form a product grid in the order written. Names
in ``[sweep.zip]`` vary together and form one dim, named after the first of them (the others
are coordinates along it). A point is the dict of its swept values; it keys the point's seeds
(:func:`workbench.run.experiment.point_key`), so a point keeps its random numbers when the
grid grows.

:func:`resolve` turns the configuration and a point into the point's own configuration:
swept values substituted, then every expression field (``n_iterations = "L0 * staleness"``,
``step_size = "C * staleness**(-2/3) * n_iterations**(-1/3)"``) evaluated over the
constants and the other values, in dependency order, through the whitelist of
:mod:`bounds.expressions` (never ``eval``) and in floating point in the order written. A
field's words (``step_size = "optimal"``, :data:`~workbench.studies.schema.OPTIMAL_STEP`) are
not expressions: they stay as written, for the point to compute.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from bounds.expressions import BoundSyntaxError, evaluate, free_names
from simulators.validation import InvalidParameter
from workbench.studies.schema import fields


def count(config: dict, product: tuple[str, ...], zipped: tuple[tuple[str, ...], ...]) -> int:
    """How many points :func:`points` would list, without listing them."""
    return math.prod([len(config[name]) for name in product]
                     + [len(config[group[0]]) for group in zipped])


def points(config: dict, product: tuple[str, ...], zipped: tuple[tuple[str, ...], ...]
           ) -> list[dict[str, Any]]:
    """Every sweep point, in grid order (the last product dim varies fastest, zips last)."""
    axes = [[{name: value} for value in config[name]] for name in product]
    for group in zipped:
        axes.append([dict(zip(group, values, strict=True))
                     for values in zip(*(config[name] for name in group), strict=True)])
    return [dict(item for part in combination for item in part.items())
            for combination in itertools.product(*axes)]


def resolve(config: dict, point: dict[str, Any], swept: tuple[str, ...]) -> dict[str, Any]:
    """The point's configuration: swept values in place of their lists, expressions computed.

    Raises :class:`InvalidParameter` naming the field when an expression refers to itself
    through others (a cycle) or its value fails the field's validation.
    """
    resolved = {key: value for key, value in config.items() if key not in swept}
    resolved.update(point)
    catalogue = fields()
    pending = {key for key, value in resolved.items()
               if isinstance(value, str) and key in catalogue and catalogue[key].expression
               and value not in catalogue[key].words}
    while pending:
        ready = [key for key in sorted(pending) if not (free_names(resolved[key]) & pending)]
        if not ready:
            raise InvalidParameter(sorted(pending)[0], resolved[sorted(pending)[0]],
                                   "the expressions " + ", ".join(sorted(pending))
                                   + " depend on each other in a cycle")
        for key in ready:
            text = resolved[key]
            try:
                value = evaluate(text, {k: v for k, v in resolved.items()
                                        if isinstance(v, int | float) and not isinstance(v, bool)})
            except BoundSyntaxError as error:
                raise InvalidParameter(key, text, str(error)) from None
            if catalogue[key].parameter.default.__class__ is int and isinstance(value, float):
                if not value.is_integer():
                    raise InvalidParameter(key, text, f"must be an integer, got {value!r}")
                value = int(value)
            resolved[key] = catalogue[key].parameter.coerce(value)
            pending.discard(key)
    return resolved
