"""Sequential checks: more replicates until every check is decided or the budget is spent
(``workbench check ... --until-decided [--budget 10m]``, or ``workbench check STUDY`` for a
study whose ``[study] until_decided`` names the budget; docs/verdicts.md, *Sequential
checks*).

Look k of an experiment runs it with 2^(k−1) times its configured replicates, in every
replicate parameter (``n_replicates`` and every ``*_replicates``) that its undecided checks
read (below), and judges it at look k
of :mod:`bounds.sequential` (the share 2^(−k) of every error rate). Look 1 is the configured
run; where it spent the whole budget (as the full-size experiments can on a slow machine), no
look can follow whatever its verdicts, and it is judged as the only look, at the fixed-R rates:
the verdicts of a plain ``workbench check``, not the stricter ones of a first look. A check
that comes out ``holds`` or ``violated`` is decided: its verdict is kept as judged, with the
look in its evidence and, under ``looks``, every look it was judged at (replicates, verdict,
difference, error and both critical values). An experiment with an
``inconclusive`` check that more replicates could decide (a finite replicate factor) runs
again at a later look, and its undecided checks are judged there, until no such check is
left, the budget is spent, or a larger run cannot be made (the memory budget or the plan
limits refuse it; the experiment then keeps its last look, and a look that failed is tried
again one look smaller while that is still beyond the last).

Which look comes next: the one whose replicates cover what the undecided checks ask for (the
largest finite factor up to :data:`bounds.equivalence.ON_THE_MARGIN` (when only larger ones are
left, two looks on), with :data:`STRICTER` for the stricter critical values of later looks), at
most :data:`MOST_LOOKS_AHEAD` looks on; when the experiments' next looks together, at
:data:`RESERVE` times their predicted time (room for a round that runs over its prediction), do
not fit in what is left of the budget, they go fewer looks on one at a time, first the look that
promises the fewest decisions per second (the undecided checks whose factor its replicates
cover, over its predicted time; of equal ones, the most expensive). An experiment whose next
look does not fit beside the others' even one look on is left out; once the round is cut, a look
left out takes the room the others left where it fits (the last left out first, at the furthest
look up to its aim), and otherwise waits: every later round plans it again with the others (its
look may fit once they are decided), and if the budget ends first its undecided checks say which
look did not fit in what was left. Only checks whose deciding look (the first with at least
their factor times the replicates) is predicted to fit, with that reserve, in what is left of
the budget count: a look towards checks that no look within the budget could decide would spend
it for nothing, so an experiment with none left stops, and the final table gives the predicted
time of the look its checks ask for. A check's deciding look is predicted aimed at it and at the
checks of its kind (more replicates, or more chains: below) that ask for no more looks, as a
look towards the checks asking least may run fewer points (:meth:`Track._aims`); a look aimed at
both kinds is taken where it fits too, else the kind deciding more checks a second, and a look
left out of a cut round may take the room the others left aimed at fewer checks
(:func:`_take_the_room`). Looks may be skipped: the rates a look spends are fixed by
its number, whatever looks were taken before, so skipping looks only leaves their shares unspent
(:mod:`bounds.sequential`).

The predicted time of a round is that of its looks run together (:func:`round_seconds`), as
the sweeps of one round overlap on the workers: each look's compute seconds (one process, as
its tasks measured them) are its experiment's last full look's scaled by the replicates (for
each point computed at two looks, by the seconds a replicate added between them:
:func:`point_seconds`), where
the points and kept blocks that look read from the store count at the compute seconds the store
recorded for them (reading them took a moment; the next look must compute them), less the
compute seconds of its kept blocks, which the next look reads, for the share of them in the
points the look computes again (:attr:`Track.growing`); the round's compute is shared among
the workers, plus (1 − 1/n) of the longest task (scaled too), Graham's bound on a schedule
that leaves no worker idle while a task waits, plus the seconds spent in this process (writing
each combined file and judging it, scaled too). numba's compiling, left out of the tasks'
compute seconds and of the judging's (:mod:`.compile_time`), counts in the round it happened
in and in no later look: a kernel compiles once a process, and once a machine with its
cache. What a round's costs do not explain of its
time (reading the store, combining, a worker left idle) is charged to its looks' seconds in
this process, so it scales with them (:func:`_charge_unexplained`: every look of the round
explains its own compute, a look whose cost predicts no later one included). The predicted
time of one experiment's look is that of a round running it alone; the budget counts the
whole command, look 1 included.

Replicates are independent chains with seeds by identity, and every look is an ordinary run
with larger replicate parameters: its points go through the result store like any other, so
a sequential run that stops at R replicates stores exactly what a plain run with R
replicates stores, and a rerun of the same command reads every look's points from the store.
Where a point's replicate blocks are the same bits whatever its replicate count (the Gaussian
mean's points, its designs', its phase space's, its pooled servers' and its protocols',
logistic regression's (downpour's from Laplace starts too), the sharded Gaussian's on
traveling chains and, of more than one block, on federated rounds),
the looks keep them (:meth:`~workbench.run.experiment.Experiment.kept_blocks`, the store's
*Blocks*): a look computes only the replicates the last one did not have, and reads the
others.

A check against a reference posterior whose own Monte Carlo error is too large for more
replicates alone to decide it says how many times both the replicates and the reference's
draws would (``reference_factor``, :meth:`bounds.equivalence.ErrorParts.joint`); from then
on the experiment's later looks multiply its reference draws (``reference_draws`` and every
``*_reference_draws``) as they multiply its replicates.

A chain-level check whose units are a fixed number of chains, each on its own schedule
(:mod:`workbench.systems.distributed.windows`), says how many times the chains would decide it
where their schedules' spread alone stands in the way (``chain_factor``): replicates average
out the sampler's noise in each chain, not the spread between schedules. Where its evidence
names a chain count the experiment has (``chains_from``: ``n_chains``, the federated rounds'
independent chains, or ``limit_schedules``, the schedules a traveling study's ``limit`` check
runs the exact oracle on; or a part's ``*_n_chains``, ``*_limit_schedules``), its later looks
aimed at such a check multiply that count as other looks multiply the replicates (look k runs
2^(k−1) times the configured count); a look aimed at those checks alone leaves the replicates
as they were, and one aimed at both kinds grows both. A look of more federated chains changes
every point it runs (a chain's schedule is drawn with the others), so it keeps no block; more
``limit_schedules`` only finish a point (no replay reads them:
:attr:`~workbench.run.experiment.Experiment.unblocked_keys`), so its blocks are read. Its
predicted time is the last full look's times its multiple of the chains, for the former; for
the latter, the blocks (as the runner measures them) times the multiple of the replicates,
less those read, and what finished the points (their seconds outside their blocks, where the
chains' limits are computed) times the multiple of the chains. Traveling
chains are otherwise one a worker, fixed by the system: no look adds to the chains of their
``posterior`` checks, which say so.

A look grows only the replicate parameters that the undecided checks more replicates could
decide read (:meth:`~workbench.run.experiment.Experiment.keys_read_by`): in a study of parts,
the parameters of the parts that own such a check; the other parts keep the last look's
replicates, so their points are read from the store, and the predicted time counts only the
points computed again. Within a study, a look runs only the sweep points the checks it aims at
read, where that is fewer than every point (:mod:`.narrowing`; :meth:`Track.aim_at`; a
federated study's step grid, which its chain checks do not read, is left out whole): it
judges those checks, and the other undecided ones those points alone give, at their
families' sizes at every point
(:mod:`bounds.family_sizes`), the others keep their last look, and the experiment's result
stays its last look of every point (:attr:`Track.full`), whose cost predicts the later looks
(for the share of its compute seconds in the points they run), but for a look of some of the
points of a narrower look since then that kept blocks: the latest such look's cost predicts
it, for its share in them (:attr:`Track.narrower_costs`), as it counts the blocks the next
look reads.
"""

from __future__ import annotations

import math
import sys
import time
import traceback
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path

from bounds.equivalence import (
    CHAIN_FACTOR,
    CHAINS_FROM,
    ON_THE_MARGIN,
    REFERENCE_FACTOR,
    resolve_z_holds,
)
from bounds.family_sizes import Sizes, family_sizes
from bounds.sequential import GROWTH, Look, at_look
from bounds.verdict import INCONCLUSIVE, Verdict
from simulators.validation import InvalidParameter
from workbench.run.compile_time import compiling
from workbench.run.executors import Workers
from workbench.run.experiment import Experiment, point_key
from workbench.run.main_job import Outcome, run_all
from workbench.run.narrowing import narrowed_sweep
from workbench.run.plan import size_plan
from workbench.store.atomic import under
from workbench.store.figure_cache import figures_once
from workbench.store.result_store import (
    STORE_DIR,
    ResultStore,
    is_replicate_count,
    positive_counts,
)

#: a look's critical values are stricter than the last one's: aim this much further
STRICTER = 1.5
#: the furthest one round goes beyond an experiment's last look (8 times its replicates), so
#: that the budget is shared and the next aim rests on more replicates
MOST_LOOKS_AHEAD = 3
#: how many times its predicted time a round is planned to have room for in what is left of the
#: budget: the predictions are estimates, and a round that runs over leaves no room for the
#: short looks that usually follow it, or ends past the budget. Measured on the 2-core host
#: (2026-12-03; benchmarks/README.md, *A reserve for rounds that run over*): rounds after the
#: first took 0.59 to 1.13 times their predictions at full size, and 1.06 at quick size
#: (12.7 s past a 10-minute budget)
RESERVE = 1.25


def replicate_keys(config: dict) -> tuple[str, ...]:
    """The configuration's replicate parameters: ``n_replicates`` and every ``*_replicates``
    (:func:`~workbench.store.result_store.is_replicate_count`) holding a positive integer."""
    return positive_counts(config, is_replicate_count)


#: the configuration keys that count chains on independent schedules: the federated rounds'
#: chains, and the traveling chains' schedules a ``limit`` check's exact oracle runs on (each
#: adds as many chains again)
CHAIN_COUNTS = ("n_chains", "limit_schedules")


def _counts(key: str, name: str) -> bool:
    """Whether configuration key ``key`` is the count ``name``, or a part's (``*_name``)."""
    return key == name or key.endswith(f"_{name}")


def chain_keys(config: dict) -> tuple[str, ...]:
    """The configuration's chain counts holding a positive integer: :data:`CHAIN_COUNTS`, and
    a part's (``*_n_chains``, ``*_limit_schedules``)."""
    return positive_counts(config, lambda key: any(_counts(key, name) for name in CHAIN_COUNTS))


def counted_by(verdict: Verdict, keys: Collection[str]) -> list[str]:
    """The chain counts among ``keys`` whose growth adds chains to ``verdict`` (its evidence
    names the count, :data:`bounds.equivalence.CHAINS_FROM`; none where the system fixes
    its chains)."""
    name = verdict.evidence.get(CHAINS_FROM, "")
    return [key for key in keys if name and _counts(key, name)]


def reference_keys(config: dict) -> tuple[str, ...]:
    """The configuration's reference sizes: ``reference_draws`` and every
    ``*_reference_draws`` (a part's) holding a positive integer."""
    return positive_counts(config, lambda key: key == "reference_draws"
                           or key.endswith("_reference_draws"))


@dataclass(frozen=True)
class LookCost:
    """What an experiment's look cost, in the terms that predict a later one (module
    docstring): compute seconds are those of one process, as the tasks measure them."""

    #: the compute seconds of every point and kept block the look computed or read (as the
    #: store recorded them): what computing all of it would take
    work: float = 0.0
    #: the compute seconds of what the look computed (the rest it read from the store)
    computed: float = 0.0
    #: the compute seconds of its kept blocks, which a later look reads instead of computing
    kept: float = 0.0
    #: the compute seconds of the longest task it computed
    longest: float = 0.0
    #: the seconds it spent in this process: writing its combined file and judging it
    serial: float = 0.0
    #: the round's seconds numba spent compiling for it (its tasks' compiling shared among
    #: the workers, and its judging's): once a process or a machine, so no later look's
    compiling: float = 0.0
    #: of the compute seconds of the points it computed whose replicate blocks are kept, those
    #: outside their blocks: finishing them (merging the blocks, an oracle, the chains' limits)
    finishing: float = 0.0

    @classmethod
    def of(cls, outcome: Outcome, n_workers: int) -> LookCost:
        """``outcome``'s cost; where a point's compute seconds are not known (a store that did
        not record them), the sweep's wall time on ``n_workers``, less its compiling, stands
        for what it computed, and no task is known to be longest."""
        sweep = outcome.sweep
        if sweep is None:
            return cls(serial=outcome.seconds)
        serial = max(outcome.seconds - sweep.seconds, 0.0)
        compiling = sweep.compile_seconds / n_workers
        seconds = sweep.point_seconds
        if seconds and all(math.isfinite(s) for s in seconds):
            blocks = sweep.block_seconds or [math.nan] * len(seconds)  # (none: not known)
            finishing = sum(max(point - block, 0.0) for point, block
                            in zip(seconds, blocks, strict=True) if math.isfinite(block))
            return cls(sum(seconds) + sweep.reused_seconds,
                       max(sum(seconds) - sweep.stored_seconds, 0.0), sweep.kept_seconds,
                       sweep.longest_task, serial, compiling, finishing)
        computed = max(sweep.seconds * n_workers - sweep.compile_seconds, 0.0)
        return cls(computed + sweep.stored_seconds + sweep.reused_seconds, computed,
                   sweep.kept_seconds, 0.0, serial, compiling)

    def at(self, multiple: float, growing: float, kept_multiple: float = 1.0,
           finishing_multiple: float | None = None) -> LookCost:
        """A look with ``multiple`` times this look's work that computes again the share
        ``growing`` of this look's compute seconds (the points whose identity it changes), less
        the kept blocks it reads (``kept_multiple`` times this look's: none where it grows
        chains that its blocks read); where ``finishing_multiple`` is given, the points'
        finishing (:attr:`finishing`) is that many times this look's and only the rest
        ``multiple`` times (a look of more chains that only finish a point:
        :meth:`Track._multiples`); the writing and judging ``multiple`` times as long, and
        every task as many times as the larger multiple (the longest may be one that finishes
        a point), but no task longer than all it computes; no compiling."""
        finishing = multiple if finishing_multiple is None else finishing_multiple
        work = (self.work - self.finishing) * multiple + self.finishing * finishing
        computed = growing * max(work - self.kept * kept_multiple, 0.0)
        longest = self.longest * max(multiple, finishing)
        return LookCost(work, computed, 0.0, min(longest, computed), self.serial * multiple)


def looks_on(factor: float) -> int:
    """How many looks on the first look with at least ``factor`` times a look's replicates is
    (looks multiply them by powers of :data:`GROWTH`; at least one)."""
    return max(math.ceil(math.log(max(factor, 1.0), GROWTH) - 1e-9), 1)


def _asking_at_most(factors: dict[str, float], looks: int) -> dict[str, float]:
    """The checks of ``factors`` (name: factor) asking for at most ``looks`` looks
    (:func:`looks_on`)."""
    return {name: f for name, f in factors.items() if looks_on(f) <= looks}


def _by_looks(factors: dict[str, float]) -> list[dict[str, float]]:
    """The checks of ``factors`` asking for at most as many looks as each of them does
    (:func:`_asking_at_most`), the most first: every check, then those asking fewer looks
    than the most, and so on."""
    counts = sorted({looks_on(f) for f in factors.values()}, reverse=True)
    return [_asking_at_most(factors, most) for most in counts]


def _sweep_key(sweep: dict[str, list]) -> tuple:
    """A narrower sweep's lists as a key."""
    return tuple(sorted((dim, tuple(values)) for dim, values in sweep.items()))


def _covers(sweep: dict, narrower: dict[str, list]) -> bool:
    """Whether the points of the sweep lists ``sweep`` (a dim it does not name: every value)
    include those of ``narrower``'s."""
    return all(dim in narrower and set(narrower[dim]) <= set(values)
               for dim, values in sweep.items())


@dataclass(frozen=True)
class Growth:
    """What a later look grows against a look configured ``then`` (:meth:`Track._growth`):
    its multiple of the chains, of the other grown parameters (None: not known), and its own
    configuration ``later`` (None where it grows no chains)."""

    chains: float
    others: float | None
    then: dict
    later: dict | None = None


def round_seconds(costs: list[LookCost], n_workers: int) -> float:
    """The time of a round that runs looks of these ``costs`` together on ``n_workers``
    processes: their compute shared among the workers, plus (1 − 1/n) of the longest task,
    Graham's bound on any schedule that leaves no worker idle while a task waits
    (R. L. Graham, *Bounds on multiprocessing timing anomalies*, SIAM J. Appl. Math. 17, 1969),
    plus the seconds spent in this process and the compiling."""
    workers = max(n_workers, 1)
    compute = sum(cost.computed for cost in costs) / workers
    longest = max((cost.longest for cost in costs), default=0.0) * (1 - 1 / workers)
    return compute + longest + sum(cost.serial + cost.compiling for cost in costs)


def _charge_unexplained(tracks: list[Track], took: float, n_workers: int,
                        charged: Collection[Track]) -> None:
    """Charge the part of a round's ``took`` seconds that the costs of its looks (``tracks``,
    each the look it just ran: :attr:`Track.ran`) do not explain (:func:`round_seconds`:
    reading the store, combining points, a worker left idle) to the serial seconds of the
    looks whose cost predicts later ones (``charged``), in proportion to what each look
    explains alone: it then scales with their replicates, as reading and combining do. A look
    whose cost predicts nothing (a narrower look that kept no block) still explains its own
    compute, and its share of the rest is charged to no other look."""
    alone = [round_seconds([track.ran], n_workers) for track in tracks]
    unexplained = took - round_seconds([track.ran for track in tracks], n_workers)
    if unexplained <= 0 or sum(alone) <= 0:
        return
    share = unexplained / sum(alone)
    for track, seconds in zip(tracks, alone, strict=True):
        if track in charged:
            track.charge(serial=seconds * share)


@dataclass(eq=False)
class Track:
    """One experiment's sequential run: its verdicts so far, and why it stopped."""

    experiment: Experiment
    overrides: dict
    first: dict
    quick: bool
    decided: dict[str, Verdict] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    undecided: dict[str, Verdict] = field(default_factory=dict)
    history: dict[str, list[dict]] = field(default_factory=dict)
    outcome: Outcome | None = None
    look: int = 0
    #: the last look of every point (:attr:`sweep` empty), whose cost predicts a later look and
    #: whose result is the experiment's; its number, the verdicts judged at it, and its look
    full: Outcome | None = None
    full_judged: dict[str, Verdict] = field(default_factory=dict)
    full_families: Sizes = field(default_factory=dict)
    full_at: Look | None = None
    cost: LookCost = field(default_factory=LookCost)  # the last full look's: predicts a later
    n_workers: int = 1  # the processes the looks' tasks run on
    total_seconds: float = 0.0
    stopped: str = ""
    waiting: str = ""  # why the last round left out its next look (it may run in a later one)
    ceiling: int | None = None
    #: the share of the last look's compute seconds in the points a later look computes again
    #: (the others, read by no check that more replicates could decide, come from the store)
    growing: float = 1.0
    references_grow: bool = False
    chains_grow: bool = False
    budget_left: float = math.inf
    #: how many times its predicted time a look needs in :attr:`budget_left` (:data:`RESERVE`)
    reserve: float = 1.0
    #: the next look's sweep lists, where it needs fewer points than every one
    #: (:mod:`.narrowing`), and the checks it aims at (None: every undecided one)
    sweep: dict[str, list] = field(default_factory=dict)
    aiming: frozenset[str] | None = None
    #: the aims (name: factor) the next look may take, its own first (:meth:`_aims`)
    options: list[dict[str, float]] = field(default_factory=list)
    #: where the looks' points are stored (and the narrower sweeps' trials read them)
    seed: int = 0
    store: ResultStore | None = None
    narrowings: dict[frozenset[str], dict[str, list]] = field(default_factory=dict)
    #: each point's compute seconds at every look that computed it whole (look, seconds), and
    #: the points the next look computes, with their seconds at the last full look (none
    #: where that look read kept blocks: :meth:`multiple` then scales by the replicates)
    measured: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    computing: dict[str, float] = field(default_factory=dict)
    #: the outcome, cost and look number of the last look of each narrower sweep
    #: (:func:`_sweep_key`) since the last full look, where it kept replicate blocks: a later
    #: look of its points, or of some of them, reads them, which the last full look's cost
    #: does not know
    narrower_costs: dict[tuple, tuple[Outcome, LookCost, int]] = field(default_factory=dict)
    #: the key of the cost the look just absorbed predicts later looks with: () for
    #: :attr:`cost` (a full look), a key of :attr:`narrower_costs`, or None (neither)
    last_key: tuple | None = ()
    #: what the look just absorbed cost, its judging included, whether or not it predicts
    #: a later look: its part of its round's time (:func:`_charge_unexplained`)
    ran: LookCost = field(default_factory=LookCost)

    @property
    def keys(self) -> tuple[str, ...]:
        return replicate_keys(self.first)

    @property
    def chains(self) -> tuple[str, ...]:
        """The chain counts a later look may multiply (:meth:`absorb`: once a check's chains
        alone stand in the way)."""
        return chain_keys(self.first) if self.chains_grow else ()

    @property
    def grown_keys(self) -> tuple[str, ...]:
        """What a later look multiplies: the replicate parameters, the reference's draws
        once a check's reference error alone stands in the way, and the chains once a check's
        chains alone do (:meth:`absorb`)."""
        return (self.keys + (reference_keys(self.first) if self.references_grow else ())
                + self.chains)

    def config_at(self, look: int) -> dict:
        """The configuration of look ``look`` (``first``, look 1's): every grown parameter
        that the checks it aims at read (:attr:`aiming`, else every undecided check more
        replicates could decide; :meth:`~workbench.run.experiment.Experiment.keys_read_by`)
        times 2^(k−1), the others as the last look ran them; the sweep narrowed to
        :attr:`sweep`. The chain counts are read by the checks only more chains decide
        (:meth:`by_chains`), the other grown parameters by the others."""
        if look == 1:
            return self.first
        aimed = [name for name, verdict in self.undecided.items()
                 if math.isfinite(self.factor(verdict))
                 and (self.aiming is None or name in self.aiming)]
        chained = [name for name in aimed if self.by_chains(name)]
        others = [name for name in aimed if name not in chained]
        counts = {key for name in chained for key in counted_by(self.undecided[name],
                                                                 self.chains)}
        reads = {True: self.experiment.keys_read_by(chained) if chained else (),
                 False: self.experiment.keys_read_by(others) if others else ()}
        last = self.first if self.outcome is None else self.outcome.config

        def grows(key: str) -> bool:
            read = reads[key in self.chains]
            return (read is None or key in read) and (key in counts or key not in self.chains)

        grown = {key: self.first[key] * Look(look).replicate_multiple if grows(key)
                 else last[key] for key in self.grown_keys}
        return self.experiment.configure({**self.overrides, **grown, **self.sweep},
                                         quick=self.quick)

    def by_chains(self, name: str) -> bool:
        """Whether only more chains decide the undecided check ``name`` (its chain factor),
        and the experiment has a count of them to grow (:func:`counted_by`)."""
        verdict = self.undecided[name]
        return not math.isfinite(verdict.replicate_factor) \
            and math.isfinite(verdict.evidence.get(CHAIN_FACTOR, math.inf)) \
            and bool(counted_by(verdict, self.chains))

    def _ratio(self, keys: Collection[str], later: dict, then: dict) -> float:
        """How many times ``then``'s values of ``keys`` ``later``'s are (the largest; 1 for
        none)."""
        return max((later[key] / then[key] for key in keys), default=1.0)

    def _growth(self, look: int, then: dict) -> Growth:
        """Look ``look`` against a look configured ``then``: its multiple of the chains, and
        of the other grown parameters (1: a look of more chains alone), and its configuration.
        Without chains to grow, or where look ``look``'s configuration is refused (the plan
        then says so), the chains' multiple is 1 and the other's is not known (None): the
        look numbers say it."""
        if not self.chains:
            return Growth(1.0, None, then)
        try:
            later = self.config_at(look)
        except InvalidParameter:
            return Growth(1.0, None, then)
        return Growth(self._ratio(self.chains, later, then),
                      self._ratio([key for key in self.grown_keys if key not in self.chains],
                                  later, then), then, later)

    def _multiples(self, growth: Growth, multiple: float) -> tuple[float, float, float | None]:
        """The look ``growth`` leads to, ``multiple`` times the work of the look it starts
        from (``then``), in :meth:`LookCost.at`'s terms: the multiple of that look's work, of
        its kept blocks that it reads instead of computing, and of its points' finishing
        (None: as the rest). Where it grows no chains, the kept blocks are read once; where it
        grows chains its blocks read (a federated point's, each drawn with the others), none
        is read; where it grows only chain counts no block reads
        (:attr:`~workbench.run.experiment.Experiment.unblocked_keys`), the blocks are read
        and grow with the replicates alone, and the finishing (where the chains' limits are
        computed) with the chains alone."""
        if growth.chains == 1.0:
            return multiple, 1.0, None
        if any(growth.later[key] != growth.then[key] for key in self.chains
               if key not in self.experiment.unblocked_keys):
            return multiple, 0.0, None
        return multiple / growth.chains, 1.0, growth.chains

    def _growing_share(self) -> float:
        """The share of the compute seconds of the look that predicts the next one
        (:meth:`_narrower_basis`, else the last full look, as its sweep reports them per
        point) in the points the next look computes
        (:meth:`_computed_share`), keeping those points' seconds (:attr:`computing`) for
        :meth:`multiple` (none from a narrower look)."""
        narrower = self._narrower_basis()
        if narrower is not None:
            self.computing = {}
            return self._computed_share(narrower[0])[0]
        share, computing = self._computed_share(self.full or self.outcome)
        self.computing = computing
        return share

    def _narrower_basis(self) -> tuple[Outcome, LookCost, int] | None:
        """The latest narrower look since the last full look that kept blocks and ran
        every point of the next look's narrower sweep (its outcome, cost and number): it knows
        which of those points' replicates the next look reads; the share of its compute in
        them is :attr:`growing`."""
        if not self.sweep:
            return None
        covering = [known for key, known in self.narrower_costs.items()
                    if _covers(dict(key), self.sweep)]
        return max(covering, key=lambda known: known[2], default=None)

    @property
    def last_cost(self) -> LookCost:
        """The cost of :attr:`last_key`."""
        return self.cost if not self.last_key else self.narrower_costs[self.last_key][1]

    def charge(self, serial: float = 0.0, compiling: float = 0.0) -> None:
        """Add ``serial`` and ``compiling`` seconds to :attr:`last_cost`."""
        cost = replace(self.last_cost, serial=self.last_cost.serial + serial,
                       compiling=self.last_cost.compiling + compiling)
        if not self.last_key:
            self.cost = cost
        else:
            outcome, _, number = self.narrower_costs[self.last_key]
            self.narrower_costs[self.last_key] = (outcome, cost, number)

    def _computed_share(self, base: Outcome) -> tuple[float, dict[str, float]]:
        """The share of look ``base``'s compute seconds (as its sweep reports them per point)
        in the points the next look computes: those it runs whose identity it changes (the
        others are read from the store, or not run; 1 where the seconds are not known, the
        next look has a point ``base`` did not, or its configuration is refused, which the
        plan then says); and those points' seconds, none where ``base`` read kept blocks."""
        experiment, now, sweep = self.experiment, base.config, base.sweep
        try:
            later = self.config_at(self.look + 1)
        except InvalidParameter:
            return 1.0, {}
        points = experiment.points(now)
        seconds = [] if sweep is None else sweep.point_seconds
        index = {point_key(point): i for i, point in enumerate(points)}
        runs = experiment.points(later)
        if len(seconds) != len(points) or not all(math.isfinite(s) for s in seconds) \
                or any(point_key(point) not in index for point in runs):
            return 1.0, {}
        total = sum(seconds)
        computing = {point_key(point): seconds[index[point_key(point)]] for point in runs
                     if experiment.point_identity(now, point)
                     != experiment.point_identity(later, point)}
        share = sum(computing.values()) / total if total else 1.0
        # a look that read kept blocks measured only the replicates it added
        return share, ({} if sweep.kept_blocks else computing)

    def _measure(self, outcome: Outcome, look: int) -> None:
        """Keep the compute seconds of the points ``outcome`` computed (not read) at ``look``;
        none where it read kept blocks (their points' seconds are then those of the
        replicates it added alone, which the kept blocks' share of a look predicts:
        :meth:`LookCost.at`)."""
        sweep = outcome.sweep
        if sweep is None or sweep.kept_blocks or any(
                outcome.config[key] != self.first[key] for key in chain_keys(self.first)):
            return
        points = self.experiment.points(outcome.config)
        if len(points) != len(sweep.point_seconds):
            return
        for point, seconds in zip(points, sweep.point_seconds, strict=True):
            if point in sweep.computed and math.isfinite(seconds):
                self.measured.setdefault(point_key(point), []).append((look, seconds))

    def multiple(self, look: int, growth: Growth | None = None) -> float:
        """How many times the last full look's compute seconds of the points a later look
        ``look`` computes (:attr:`computing`) that look's are predicted to be: each point's
        seconds at that look from its measurements (:func:`point_seconds`, at the configured
        chains: :meth:`_measure`), where every such point was measured; else the replicates'
        multiple (from the configurations where chains grow: a look of more chains alone
        leaves the look numbers behind the replicates); times the look's multiple of the
        chains. ``growth``: look ``look``'s against the last full look (:meth:`_growth`; by
        default computed here)."""
        basis = self.look if self.full_at is None else self.full_at.number
        growth = growth or self._growth(look, (self.full or self.outcome).config)
        chains, others = growth.chains, growth.others
        total = sum(self.computing.values())
        if others == 1.0:
            return chains
        if not total or any(key not in self.measured for key in self.computing):
            return (float(GROWTH ** (look - basis)) if others is None else others) * chains
        return (sum(point_seconds(self.measured[key], look) for key in self.computing) / total
                * (1.0 if growth.later is None
                   else self._ratio(self.chains, growth.later, self.first)))

    def factor(self, verdict: Verdict) -> float:
        """What ``verdict`` asks for, as a multiple of the grown parameters of the look it
        was last judged at: its replicate factor, or, where only the reference's error stands
        in the way, the factor on both the replicates and the reference's draws (once they
        grow), or where only the chains' spread does, the factor on the chains (once they
        grow)."""
        if math.isfinite(verdict.replicate_factor):
            return verdict.replicate_factor
        for key, grown in ((REFERENCE_FACTOR, self.references_grow),
                           (CHAIN_FACTOR, bool(counted_by(verdict, self.chains)))):
            if grown and key in verdict.evidence:
                return float(verdict.evidence[key])
        return verdict.replicate_factor

    def needs(self, name: str) -> float:
        """What the undecided check ``name`` asks for as a multiple of this look's grown
        parameters (:meth:`factor`; a check a narrower look did not judge was last judged
        at an earlier look, with fewer replicates; one only more chains decide, as a multiple
        of this look's chains)."""
        judged = self.history.get(name)
        if self.by_chains(name):
            then = judged[-1]["replicates"] if judged else {}
            now = self.outcome.config
            return self.factor(self.undecided[name]) / self._ratio(
                self.chains, now, {key: then.get(key, self.first[key]) for key in self.chains})
        earlier = self.look - judged[-1]["look"] if judged else 0
        return self.factor(self.undecided[name]) / GROWTH ** earlier

    def absorb(self, outcome: Outcome, look: Look, n_workers: int = 1) -> None:
        """Judge ``outcome`` at ``look``: keep the checks it decides, the others stay
        undecided. A look after the first that failed to run leaves the last one in place.
        ``n_workers``: the processes its points could run on, which share the compute time
        the store recorded for the points it read (module docstring)."""
        self.total_seconds += outcome.seconds
        self.ran = LookCost.of(outcome, max(n_workers, 1))
        if outcome.error and self.outcome is not None:
            self.ceiling = look.number - 1  # a smaller look may still run
            self.stopped = (f"look {look.number} failed: "
                            f"{outcome.error.strip().splitlines()[-1]}")
            return
        narrowed, aiming = dict(self.sweep), self.aiming
        self.sweep, self.aiming = {}, None
        self.outcome, self.look = outcome, look.number
        self._measure(outcome, look.number)
        self.n_workers = max(n_workers, 1)
        if not narrowed:
            self.full, self.full_at = outcome, look
            self.cost = self.ran
            self.narrower_costs, self.last_key = {}, ()
        elif outcome.sweep is not None and outcome.sweep.kept_seconds > 0:
            self.last_key = _sweep_key(narrowed)
            self.narrower_costs[self.last_key] = (outcome, self.ran, look.number)
        else:
            self.last_key = None
        if outcome.error:
            return
        judging = time.perf_counter()
        try:
            with at_look(look), compiling() as compiled, family_sizes(
                    self.full_families if narrowed else None) as families:
                verdicts = self.experiment.checks(outcome.dataset)
                evidence = {**look.describe(), "z_holds": resolve_z_holds(None),
                            "replicates": {k: outcome.config[k] for k in self.grown_keys},
                            **({"sweep": narrowed} if narrowed else {})}
        except Exception as error:  # noqa: BLE001 - an error row, as run_all makes of it
            self.outcome = replace(outcome, error="".join(
                traceback.format_exception(type(error), error, error.__traceback__)))
            self.full = self.full if narrowed else self.outcome
            return
        finally:  # judged here, one experiment after the other: part of the look's time
            judging = time.perf_counter() - judging
            self.ran = replace(self.ran, serial=self.ran.serial + judging - compiled.seconds,
                               compiling=self.ran.compiling + compiled.seconds)
            if self.last_key is not None:
                self.charge(judging - compiled.seconds, compiled.seconds)
            self.total_seconds += judging
        if not narrowed:
            self.full_judged = {verdict.check: verdict for verdict in verdicts}
            self.full_families = families.recorded
            self.narrowings = {}
        # a narrower look judges the checks it aims at (those its points give): the others
        # keep their last look
        judged = {verdict.check for verdict in verdicts}
        self.undecided = {name: verdict for name, verdict in self.undecided.items()
                          if narrowed and (name not in aiming or name not in judged)}
        for verdict in verdicts:
            if verdict.check in self.decided or (narrowed and verdict.check not in aiming):
                continue
            if verdict.check not in self.order:
                self.order.append(verdict.check)
            looks = self.history.setdefault(verdict.check, [])
            looks.append({"look": look.number, "replicates": evidence["replicates"],
                          **({"sweep": narrowed} if narrowed else {}),
                          "verdict": verdict.verdict, "difference": verdict.difference,
                          "mc_error": verdict.mc_error, "z_threshold": verdict.z_threshold,
                          "z_holds": evidence["z_holds"]})
            stamped = replace(verdict, evidence={**verdict.evidence, "sequential": {
                **evidence, "looks": list(looks)}})
            if verdict.verdict == INCONCLUSIVE:
                self.undecided[verdict.check] = stamped
            else:
                self.decided[verdict.check] = stamped
        self.references_grow = self.references_grow or (bool(reference_keys(self.first)) and any(
            math.isfinite(v.evidence.get(REFERENCE_FACTOR, math.inf))
            for v in self.undecided.values()))
        self.chains_grow = self.chains_grow or any(
            math.isfinite(v.evidence.get(CHAIN_FACTOR, math.inf))
            and counted_by(v, chain_keys(self.first)) for v in self.undecided.values())
        self.growing = self._growing_share() if self.undecided else 1.0

    def wanted(self) -> float:
        """The replicates, as a multiple of this look's, that the undecided checks ask for
        (0: none that more replicates could decide), counting only the checks whose deciding
        look fits in :attr:`budget_left` (its predicted time at their factor): a look towards
        a check that no look within the budget could decide would spend the budget for
        nothing (module docstring). The look is aimed at the first of :meth:`_aims`, which
        :attr:`options` keeps with the narrower ones for a round that has no room for it."""
        self.options = []
        if not self.keys or self.outcome.error or (self.stopped and (
                self.ceiling is None or self.ceiling <= self.look)):
            return 0.0
        needs = {name: self.needs(name) for name in self.undecided}
        needs = {name: factor for name, factor in needs.items() if math.isfinite(factor)}
        useful = ({name: f for name, f in needs.items() if f <= ON_THE_MARGIN}
                  or dict.fromkeys(needs, float(GROWTH**2)))
        self.options = self._aims(useful)
        if not self.options:
            return 0.0
        self.aim_at(self.options[0])
        return self.asks(self.options[0])

    @staticmethod
    def asks(aim: dict[str, float]) -> float:
        """The replicates, as a multiple of this look's, that a look aimed at the checks
        ``aim`` (name: factor) is planned with: the largest factor, :data:`STRICTER` for the
        stricter critical values of later looks, and at least one look on."""
        return max(max(aim.values()) * STRICTER, GROWTH)

    def _aims(self, factors: dict[str, float]) -> list[dict[str, float]]:
        """The aims (name: factor) a next look may take, the widest first: each kind of
        check (:meth:`kinds`) by its own look, of which the checks whose deciding look fits in
        :attr:`budget_left` aimed at them and at the checks of their kind that ask for no
        more looks (:meth:`_fitting`: a look towards those asking less may run fewer points
        than one aimed at every check of the kind); both kinds together first where that look
        fits too (it grows both); then each kind alone, the one deciding more checks a second
        first; then, of each, fewer checks, those asking fewest looks (tried where a round has
        no room for a wider look: :func:`_next_looks`)."""
        fitting = sorted((found for found in map(self._fitting, self.kinds(factors)) if found),
                         key=lambda found: -len(found[0]) / max(found[1], 1e-9))
        kinds = [aim for aim, _ in fitting]
        aims = []
        if len(kinds) > 1:
            both = {name: f for aim in kinds for name, f in aim.items()}
            self.aim_at(both)
            if self.fits(max(both.values())):
                aims.append(both)
        aims += kinds
        return aims + [fewer for aim in kinds for fewer in _by_looks(aim)[1:]]

    def _fitting(self, group: dict[str, float]) -> tuple[dict[str, float], float] | None:
        """The checks of ``group`` (one kind) whose deciding look fits in
        :attr:`budget_left` aimed at them, and that look's predicted seconds: the most
        checks, asking fewest looks first (:func:`_by_looks`), whose look aimed at them fits
        for the one asking most; None where no such look fits."""
        for aim in _by_looks(group):
            self.aim_at(aim)
            if self.fits(max(aim.values())):
                return aim, self.deciding_seconds(max(aim.values()))
        return None

    def kinds(self, factors: dict[str, float]) -> list[dict[str, float]]:
        """The undecided checks of ``factors`` (name: factor) that only more chains decide
        (:meth:`by_chains`) and the others, the empty ones left out: a look aimed at one kind
        grows only what it needs, and is predicted so; a look aimed at both grows both."""
        chained = {name: f for name, f in factors.items() if self.by_chains(name)}
        others = {name: f for name, f in factors.items() if name not in chained}
        return [group for group in (chained, others) if group]

    def aim_at(self, names: Collection[str]) -> None:
        """Aim the next look at the undecided checks ``names``: only their points where they
        read fewer than every one (:mod:`.narrowing`, from the last full look's stored
        points), judging the other undecided checks those points give too, and the share of
        the compute seconds that look computes."""
        aimed = frozenset(names)
        self.aiming, self.sweep = aimed, {}
        if self.store is not None and self.full is not None and self.full.sweep is not None:
            if aimed not in self.narrowings:
                full = self.full.config
                kept = {key: full[key] for key in self.grown_keys}
                self.narrowings[aimed] = narrowed_sweep(
                    self.experiment, full, self.seed, self.store, self.full_judged,
                    self.full_families, aimed, set(self.undecided) - aimed, self.full_at,
                    lambda lists: self.experiment.configure(
                        {**self.overrides, **kept, **lists}, quick=self.quick))
            self.sweep, covered = self.narrowings[aimed]
            self.aiming = aimed | covered
        self.growing = self._growing_share()

    def promised(self, look: int) -> int:
        """How many undecided checks look ``look`` should decide: those asking for no more
        than its replicates (their factor at most 2^(look − this look)); the stricter critical
        values of later looks are left out of this count, as the factors are estimates."""
        multiple = GROWTH ** (look - self.look)
        return sum(self.needs(name) <= multiple for name in self.undecided
                   if self.aiming is None or name in self.aiming)

    def deciding_seconds(self, factor: float) -> float:
        """The predicted time of the first later look with at least ``factor`` times this
        look's replicates (:func:`looks_on`)."""
        return self.predicted(self.look + looks_on(factor))

    def aim_look(self, wanted: float, max_looks: int | None) -> int:
        """The look whose replicates cover ``wanted`` times this look's (:meth:`asks`), at
        most :data:`MOST_LOOKS_AHEAD` looks on, ``max_looks`` and the look a failed one left
        (:attr:`ceiling`)."""
        aim = self.look + min(looks_on(wanted), MOST_LOOKS_AHEAD)
        return min([aim, *(limit for limit in (max_looks, self.ceiling) if limit is not None)])

    def later(self, look: int) -> LookCost:
        """The predicted cost of a later look ``look`` (:meth:`LookCost.at`): from the
        narrower look that ran its points and kept blocks (:meth:`_narrower_basis`), by the
        replicates (and the chains); else from the last full look's."""
        narrower = self._narrower_basis()
        if narrower is None:
            cost, growth = self.cost, self._growth(look, (self.full or self.outcome).config)
            multiple = self.multiple(look, growth)
        else:
            outcome, cost, number = narrower
            growth = self._growth(look, outcome.config)
            multiple = (GROWTH ** (look - number) if growth.others is None
                        else growth.others) * growth.chains
        multiple, kept, finishing = self._multiples(growth, multiple)
        return cost.at(multiple, self.growing, kept, finishing)

    def predicted(self, look: int) -> float:
        """The predicted time of a later look ``look`` run alone (:func:`round_seconds`)."""
        return round_seconds([self.later(look)], self.n_workers)

    def fits(self, factor: float) -> bool:
        """Whether the look that ``factor`` asks for is predicted to fit in
        :attr:`budget_left`, with its :attr:`reserve`."""
        return self.deciding_seconds(factor) * self.reserve <= self.budget_left

    def about(self, seconds: float) -> str:
        """``about 20 s``, and where a look needs a reserve, what it needs with it."""
        if self.reserve == 1.0:
            return f"about {seconds:.0f} s"
        return (f"about {seconds:.0f} s, {seconds * self.reserve:.0f} s with the reserve for "
                f"a round that runs over its prediction")

    def verdicts(self) -> list[Verdict]:
        """Every check in its first look's order: as decided, or as last judged."""
        known = {**self.undecided, **self.decided}
        return [known[name] for name in self.order if name in known]

    def result(self) -> Outcome:
        """The last full look's outcome (a narrower look's result is not the experiment's)
        with every check's verdict."""
        return replace(self.full or self.outcome, verdicts=self.verdicts(),
                       seconds=self.total_seconds)


#: the least seconds a replicate adds to a point, as a share of its last look's seconds per
#: replicate (two noisy measurements may show less, or a fall)
LEAST_RATE = 0.25


def point_seconds(measured: list[tuple[int, float]], look: int) -> float:
    """A point's compute seconds at look ``look`` from its measurements (look, seconds) at
    earlier looks: its last seconds plus, for every replicate added, the seconds a replicate
    added between its last two (a point's fixed cost, its schedule, oracle and data, does not
    grow with its replicates), at least :data:`LEAST_RATE` of its last seconds per replicate;
    from one measurement, in proportion to the replicates (look k runs 2^(k−1) times the
    first look's)."""
    last, seconds = measured[-1]
    per_replicate = seconds / GROWTH ** (last - 1)
    rate = per_replicate
    if len(measured) > 1:
        before, earlier = measured[-2]
        rate = max((seconds - earlier) / (GROWTH ** (last - 1) - GROWTH ** (before - 1)),
                   LEAST_RATE * per_replicate)
    return seconds + rate * (GROWTH ** (look - 1) - GROWTH ** (last - 1))


def why_undecided(verdict: Verdict, track: Track) -> str:
    """Why more replicates did not decide ``verdict`` (for the final table): the look it was
    last judged at (a narrower look may have left it out), with that look's grown parameters
    and what it asked for of them, and why no later look was run towards it."""
    if not track.keys:
        return "the experiment has no replicate parameter to grow"
    factor = track.needs(verdict.check)
    if not math.isfinite(factor):
        return verdict.evidence.get("cannot_decide", "more replicates cannot decide it: no "
                                    "finite difference or Monte Carlo error")
    asked = track.factor(verdict)  # of the parameters of the look it was judged at
    near = ("; the difference sits near the margin"
            if asked > ON_THE_MARGIN and math.isfinite(verdict.difference) else "")
    what = ("the replicates" if math.isfinite(verdict.replicate_factor)
            else "the chains" if track.by_chains(verdict.check)
            else "both the replicates and the reference's draws")
    wants = f"about {asked:.3g} times {what} would decide it"
    judged = track.history.get(verdict.check)
    at = (f"at look {judged[-1]['look']} ({_parameters(judged[-1]['replicates'])})" if judged
          else f"at look {track.look} ({_parameters(track.outcome.config, track.grown_keys)})")
    if not track.stopped and track.budget_left > 0 and not track.fits(factor):
        return (f"{at}, {wants}: a look of "
                f"{track.about(track.deciding_seconds(factor))}, more than the "
                f"{max(track.budget_left, 0):.0f} s left of the budget{near}")
    stop = track.stopped or track.waiting or "the budget ran out"
    return f"{stop} {at}: {wants}{near}"


def _parameters(values: dict, keys: Collection[str] | None = None) -> str:
    """``n_replicates = 10, n_chains = 40``: ``values`` of ``keys`` (default: every one)."""
    return ", ".join(f"{k} = {values[k]}" for k in (values if keys is None else keys))


def until_decided(selected: list[Experiment], overrides: list[dict], seed: int, out: Path,
                  workers: Workers, budget: float, *, quick: bool = False,
                  recompute: bool = False, show_progress: bool = False, log=None,
                  max_looks: int | None = None, figures: bool = False
                  ) -> tuple[list[Outcome], list[tuple[str, Verdict, str]]]:
    """Run ``selected``, each configured with its ``overrides`` (and ``quick``), look after
    look (module docstring) within ``budget`` seconds. Returns the outcomes (every check's
    verdict as decided, or as last judged) and, for every check left undecided,
    (experiment, verdict, why). ``max_looks``: no look beyond that number; ``figures``: draw
    each experiment's figures from its last look."""
    log = sys.stderr if log is None else log
    started = time.perf_counter()
    tracks = [Track(e, chosen, e.configure(chosen, quick=quick), quick, seed=seed,
                    store=ResultStore(under(out, Path(out) / STORE_DIR), e.name))
              for e, chosen in zip(selected, overrides, strict=True)]
    plan = {track: 1 for track in tracks}
    rounds = 0
    while plan:
        rounds += 1
        round_started = time.perf_counter()
        running = list(plan)
        outcomes = run_all([t.experiment for t in running], quick, seed, out, workers,
                           recompute=recompute, show_progress=show_progress, figures=False,
                           log=log, judge=False, keep_blocks=True,
                           configs=[t.config_at(plan[t]) for t in running],
                           written=[not t.sweep for t in running])
        # the first pass spent the budget (or one look is the limit): nothing can follow,
        # whatever the verdicts, so look 1 is judged as the only one (bounds.sequential)
        only = rounds == 1 and (budget - (time.perf_counter() - started) <= 0
                                or max_looks == 1)
        for track, outcome in zip(running, outcomes, strict=True):
            track.absorb(outcome, Look(plan[track], only=only), workers.n_workers)
        took = time.perf_counter() - round_started
        _charge_unexplained(running, took, workers.n_workers,
                            [t for t in running if t.look == plan[t] and t.last_key is not None])
        left = budget - (time.perf_counter() - started)
        plan = {} if only else _next_looks(tracks, left, max_looks, RESERVE)
        decided = sum(len(t.decided) for t in tracks)
        total = sum(len(t.order) for t in tracks)
        print(f"round {rounds}: {decided} of {total} checks decided; {took:.1f} s, "
              f"{max(left, 0):.0f} s of the budget left"
              + (f"; next: {', '.join(_next_look(t, k) for t, k in plan.items())}; "
                 f"about {_round_predicted(plan):.0f} s together" if plan else "; done"),
              file=log, flush=True)
    undecided = [row for t in tracks for row in _explained(t)]
    results = [t.result() for t in tracks]
    for result in results if figures else ():
        if not result.error:
            result.paths += figures_once(result.experiment.name, result.dataset, Path(out),
                                         result.experiment.figures)
    return results, undecided


def _explained(track: Track) -> list[tuple[str, Verdict, str]]:
    """``track``'s undecided checks, each with why (:func:`why_undecided`), which its
    evidence keeps too (``sequential.why_undecided``, so that ``--json`` carries it)."""
    rows = []
    finite = {name: track.needs(name) for name in track.undecided}
    kinds = {name: group for group in track.kinds(
        {name: f for name, f in finite.items() if math.isfinite(f)}) for name in group}
    for verdict in track.verdicts():
        if verdict.verdict != INCONCLUSIVE:
            continue
        if verdict.check in kinds and track.outcome is not None and not track.outcome.error:
            # its look's time as the planner judges it (Track._fitting): aimed at the
            # checks of its kind that ask for no more looks
            track.aim_at(_asking_at_most(kinds[verdict.check], looks_on(finite[verdict.check])))
        why = why_undecided(verdict, track)
        verdict = track.undecided[verdict.check] = replace(verdict, evidence={
            **verdict.evidence,
            "sequential": {**verdict.evidence.get("sequential", {}), "why_undecided": why}})
        rows.append((track.experiment.name, verdict, why))
    return rows


def _next_look(track: Track, look: int) -> str:
    """``name look k (n_replicates 10 → 80, ...; about 12 s)``: the look a round runs next,
    the replicate parameters (and reference draws) it adds to, the sweep values it runs where
    fewer than every one ("only ...") and the lists it leaves empty ("no ..."), and its
    predicted time."""
    now, then = track.outcome.config, track.config_at(look)
    grown = [f"{key} {now[key]} → {then[key]}" for key in track.grown_keys
             if then[key] != now[key]]
    only = {dim: values for dim, values in track.sweep.items() if values}
    if only:
        grown.append("only " + " and ".join(f"{dim} = {', '.join(map(str, values))}"
                                            for dim, values in only.items()))
    grown += [f"no {dim}" for dim, values in track.sweep.items() if not values]
    return (f"{track.experiment.name} look {look} ({', '.join(grown)}; about "
            f"{track.predicted(look):.0f} s)")


def _round_predicted(plan: dict[Track, int]) -> float:
    """The predicted time of a round that runs these looks together (:func:`round_seconds`)."""
    some = next(iter(plan))
    return round_seconds([t.later(k) for t, k in plan.items()], some.n_workers)


def _next_looks(tracks: list[Track], left: float, max_looks: int | None,
                reserve: float = 1.0) -> dict[Track, int]:
    """The next look of every experiment that wants more (module docstring): at most
    :data:`MOST_LOOKS_AHEAD` looks on, and fewer until ``reserve`` times their predicted time
    together fits in ``left`` seconds (:data:`RESERVE`; 1: the predictions as they are), the
    look that promises the fewest decisions per second going one look down first
    (:meth:`Track.promised`; of equal ones, the most expensive); an experiment one look on that
    still does not fit is left out, and once the round is cut, each one left out (the last
    first) takes the room the others left where a look of one of its aims fits
    (:func:`_take_the_room`), or waits for a later round (:attr:`Track.waiting` says why)."""
    plan: dict[Track, int] = {}
    for track in tracks:
        track.budget_left, track.reserve, track.waiting = left, reserve, ""
        wanted = track.wanted()
        if not wanted:
            continue
        aim = track.aim_look(wanted, max_looks)
        if aim > track.look:
            plan[track] = aim
    left_out = []
    while plan and _round_predicted(plan) * reserve > left:
        track = min(plan, key=lambda t: (t.promised(plan[t]) / max(t.predicted(plan[t]), 1e-9),
                                         -t.predicted(plan[t])))
        if plan[track] > track.look + 1:
            plan[track] -= 1
        else:
            track.waiting = (f"look {plan[track]} ({track.about(track.predicted(plan[track]))}) "
                             f"did not fit beside the other experiments' looks in the "
                             f"{max(left, 0):.0f} s left")
            left_out.append(track)
            del plan[track]
    # the room a look left out may have left, once a larger one went too: the last left out
    # (promising the most a second) first
    for track in reversed(left_out):
        _take_the_room(track, plan, left, max_looks, reserve)
    for track, look in list(plan.items()):
        try:
            size_plan(track.experiment, track.config_at(look))
        except InvalidParameter as refused:
            track.stopped = f"look {look} was refused ({refused})"
            del plan[track]
    return plan


def _take_the_room(track: Track, plan: dict[Track, int], left: float, max_looks: int | None,
                   reserve: float) -> None:
    """Put ``track``, left out of ``plan``, back into it where a look of it fits in ``left``
    seconds beside the others' (with ``reserve``): of each of its aims (:attr:`Track.options`,
    the widest first), the furthest look up to the one it asks for that fits; the first that
    promises a decision (:meth:`Track.promised`), else the first that fits. Where none fits it
    keeps its own aim and waits."""

    def fits(look: int) -> bool:
        together = _round_predicted({**plan, track: look})
        return together * reserve <= left

    fallback = None
    for option in track.options:
        track.aim_at(option)
        top = track.aim_look(track.asks(option), max_looks)
        look = next((look for look in range(top, track.look, -1) if fits(look)), None)
        if look is not None and track.promised(look):
            plan[track], track.waiting = look, ""
            return
        fallback = fallback or (None if look is None else (option, look))
    track.aim_at(fallback[0] if fallback else track.options[0])
    if fallback:
        plan[track], track.waiting = fallback[1], ""
