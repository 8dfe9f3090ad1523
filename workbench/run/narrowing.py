"""The sweep points a sequential look needs: the fewest values of each sweep dim whose points
reproduce the verdicts of the checks the look aims at (:mod:`workbench.run.until_decided`).

A check does not say which points it reads, so that is found by trial on the last look that ran
every point. A value of a sweep dim is left out when the result of the remaining points (that
look's stored points, combined as a sweep of them combines them:
:func:`workbench.run.runner.stored_result`), judged at the same look with the families' sizes
of the whole judgement (:mod:`bounds.family_sizes`), gives every aimed check the same
difference and Monte Carlo error, to 1e-9 relative (a check that reads the point left out moves
by far more than that), at a critical value at least as large (a larger one, where a check's
families of one rate differ in size, only makes the narrower look stricter; the aimed checks
are inconclusive, which a stricter critical value keeps them). The values are tried one at a
time, each dim in turn, and every value left out stays out, so the trials are as many as the
values. A sweep dim keeps at least one value. A list that only adds points of its own beside
the sweep (:meth:`~workbench.run.experiment.Experiment.optional_lists`: a federated study's
step factors, whose step grid the chain checks do not read) is tried once, left empty: a check
that reads some of its points (an envelope over every held-out step) reads them all, so none is
left out alone. A trial is refused, and the value kept, where the narrower configuration is
refused, a point of it is not the same point (its identity, the store's key, differs from the
whole run's: a design whose grid follows the sweep's lists, a whole-grid point), a point is not
in the store, or a check raises on the narrower result (a slope left with one point).

A look at the narrowed sweep computes only its points, with the look's replicates: they are
the points a look of every point would compute for them (seeds by identity), and the checks it
aims at read nothing else, so their verdicts are those of that look, at its rates. The other
undecided checks that the narrower points alone judge as every point did (the trial that kept
the narrower sweep shows which) are judged at it too; the rest are not judged at it (as at a
skipped look, :mod:`bounds.sequential`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Collection

from bounds.family_sizes import Sizes, family_sizes
from bounds.sequential import Look, at_look
from bounds.verdict import Verdict
from simulators.validation import InvalidParameter
from workbench.run.experiment import Experiment, point_key
from workbench.run.runner import stored_result
from workbench.store.result_store import ResultStore, point_identity

#: how closely a narrower result must reproduce a verdict's numbers (relative)
SAME_TO = 1e-9


def narrowed_sweep(experiment: Experiment, config: dict, seed: int, store: ResultStore,
                   judged: dict[str, Verdict], families: Sizes, names: Collection[str],
                   others: Collection[str], look: Look, configure: Callable[[dict], dict]
                   ) -> tuple[dict[str, list], frozenset[str]]:
    """The sweep lists, narrower than ``config``'s, whose points reproduce the verdicts
    ``judged`` (of ``config``'s result at ``look``, whose families were ``families``:
    :mod:`bounds.family_sizes`) of the checks ``names`` (module docstring), only the dims
    narrowed (empty: every point is needed), and those of the checks ``others`` that they
    reproduce too (a look of those points judges them as well). ``configure``: the
    configuration with some sweep lists replaced, as the next look would be configured, with
    ``config``'s replicates."""
    dims = [dim for dim in experiment.sweep_dims
            if isinstance(config.get(dim), list) and len(config[dim]) > 1]
    optional = [key for key in experiment.optional_lists(config) if config.get(key)]
    if not (dims or optional) or not names or any(name not in judged for name in names):
        return {}, frozenset()
    identities = {point_key(point): point_identity(experiment, config, point, seed)
                  for point in experiment.points(config)}
    kept, reproduced = {dim: list(config[dim]) for dim in [*dims, *optional]}, frozenset()
    loaded: dict = {}  # the stored points the trials read, each read once

    def attempt(dim: str, values: list) -> None:
        nonlocal kept, reproduced
        trial = {**kept, dim: values}
        found = _reproduced(experiment, trial, seed, store, loaded, identities, judged,
                            families, [*names, *others], look, configure)
        if set(names) <= found:
            kept, reproduced = trial, found

    for dim in dims:
        for value in list(kept[dim]):
            if len(kept[dim]) == 1:
                break
            attempt(dim, [v for v in kept[dim] if v != value])
    for key in optional:
        attempt(key, [])
    narrowed = {dim: values for dim, values in kept.items() if values != list(config[dim])}
    return narrowed, (reproduced & frozenset(others) if narrowed else frozenset())


def _reproduced(experiment, lists, seed, store, loaded, identities, judged, families, names,
                look, configure) -> frozenset[str]:
    """Those of the checks ``names`` that the stored points of the sweep ``lists``, judged
    with the whole result's family sizes, judge as ``judged`` (module docstring).
    ``loaded``: the points already read from ``store`` (:func:`stored_result`)."""
    try:
        narrower = configure(lists)
    except (InvalidParameter, ValueError, KeyError, TypeError):
        return frozenset()
    points = experiment.points(narrower)
    if any(point_identity(experiment, narrower, point, seed) != identities.get(point_key(point))
           for point in points):
        return frozenset()
    dataset = stored_result(experiment, narrower, seed, store, loaded)
    if dataset is None:
        return frozenset()
    try:
        with at_look(look), family_sizes(families), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            verdicts = {verdict.check: verdict for verdict in experiment.checks(dataset)}
    except Exception:  # noqa: BLE001 - a check that cannot be judged on fewer points reads them
        return frozenset()
    return frozenset(name for name in names if name in verdicts and name in judged
                     and reads_the_same(verdicts[name], judged[name]))


def reads_the_same(narrower: Verdict, whole: Verdict) -> bool:
    """The same difference and Monte Carlo error (to :data:`SAME_TO`; NaN equals NaN), at a
    critical value at least as large as the whole judgement's."""
    return (_same(narrower.difference, whole.difference)
            and _same(narrower.mc_error, whole.mc_error)
            and narrower.z_threshold >= whole.z_threshold * (1 - SAME_TO))


def _same(x: float, y: float) -> bool:
    x, y = float(x), float(y)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=SAME_TO, abs_tol=0.0)
