"""Sequential checks (workbench/run/until_decided.py): looks that double the replicates until
every check is decided, decided checks kept as judged, the budget, the reasons given for what
stays undecided, and the store: a sequential run stores what a plain run with its last
replicates stores, and a rerun computes nothing."""

import io
import math
import re
import time
from dataclasses import replace

import numpy as np
import pytest
import xarray as xr

from bounds.checks import oracle_check, rate_check
from bounds.equivalence import CHAINS_FROM
from bounds.sequential import Look, at_look
from bounds.verdict import HOLDS, INCONCLUSIVE, z_for_family
from simulators.validation import InvalidParameter
from tests.workbench.tracks import Coin, wanting_track
from workbench.core.parameters import Parameter
from workbench.run.executors import open_workers
from workbench.run.experiment import Experiment
from workbench.run.main_job import run_all
from workbench.run.until_decided import replicate_keys, until_decided, why_undecided
from workbench.store.netcdf import read_netcdf


class Drawn(Coin):
    """Draws a figure of its replicates."""

    name = "drawn"

    def figures(self, dataset, out_dir):
        path = out_dir / f"{self.name}.txt"
        path.write_text(f"{dataset['x'].size} replicates")
        return [path]


class Unjudged(Coin):
    """Its checks raise."""

    name = "unjudged"

    def checks(self, dataset):
        raise ZeroDivisionError("no verdict today")


class Timings(Coin):
    """No replicate parameter: nothing to grow."""

    name = "timings"
    parameters = (Parameter("margin", 0.25, "margin of the mean check"),)

    def run_point(self, config, point, seed):
        return super().run_point({"n_replicates": 10}, point, seed)


class Fragile(Coin):
    """Cannot run with more than 10 replicates (as a grown point beyond the memory budget)."""

    name = "fragile"

    def run_point(self, config, point, seed):
        if config["n_replicates"] > 10:
            raise MemoryError("no room for more than 10 replicates")
        return super().run_point(config, point, seed)


class Referenced(Coin):
    """The mean of R replicates of N(0, 1) against a reference of ``reference_draws`` N(0, 1)
    draws within 0.25: with 25 draws the reference's own error (0.2) alone is too large for
    more replicates to decide it."""

    name = "referenced"
    parameters = (*Coin.parameters, Parameter("reference_draws", 25, "reference draws"))

    def run_point(self, config, point, seed):
        draws = np.random.default_rng([seed, 10**6]).standard_normal(config["reference_draws"])
        return super().run_point(config, point, seed).assign(
            reference=((), draws.mean()), reference_error=((), draws.std(ddof=1)
                                                           / math.sqrt(draws.size)))

    def checks(self, dataset):
        from workbench.reference.compare import reference_check

        def grid(value):
            return ("test_function", "component"), [[float(value)]]

        reference = xr.Dataset({"mean": grid(dataset["reference"]),
                                "mean_mc_error": grid(dataset["reference_error"]),
                                "rhat": grid(1.0)},
                               coords={"test_function": ["theta"], "component": [0]})
        x = dataset["x"].values[0]
        return [reference_check("mean", x.mean(), x.std(ddof=1) / math.sqrt(x.size), reference,
                                "theta", 0, z_for_family(0.05, 1), margin=0.25,
                                n_replicates=x.size)]


def _run(tmp_path, experiments, budget=600.0, log=None, figures=False):
    with open_workers(processes=1) as workers:
        return until_decided(experiments, [{} for _ in experiments], 7, tmp_path, workers,
                             budget, log=log or io.StringIO(), figures=figures)


def test_looks_double_the_replicates_until_the_check_is_decided_and_keep_decided_ones(tmp_path):
    log = io.StringIO()
    (outcome,), undecided = _run(tmp_path, [Coin()], log=log)
    assert undecided == []
    sure, mean = outcome.verdicts
    assert sure.verdict == HOLDS and sure.evidence["sequential"]["look"] == 1
    assert sure.evidence["sequential"]["replicates"] == {"n_replicates": 10}
    assert mean.verdict == HOLDS
    look = mean.evidence["sequential"]
    assert look["look"] >= 3 and look["replicates"]["n_replicates"] == 10 * 2 ** (look["look"] - 1)
    assert look["rate_share"] == 2.0 ** -look["look"]
    assert mean.false_failure_rate < 0.05 / 2  # the look's share of the family's rate
    history = look["looks"]
    assert [h["look"] for h in history][0] == 1 and history[-1]["look"] == look["look"]
    assert [h["verdict"] for h in history] == [INCONCLUSIVE] * (len(history) - 1) + [HOLDS]
    assert all(a["z_holds"] < b["z_holds"] for a, b in zip(history, history[1:], strict=False))
    assert sure.evidence["sequential"]["looks"] == [
        {**sure.evidence["sequential"]["looks"][0], "look": 1, "verdict": HOLDS}]
    assert "2 of 2 checks decided" in log.getvalue().splitlines()[-1]
    assert "round 1: 1 of 2 checks decided" in log.getvalue()
    # past the margin: two looks on, not one; the line says the replicates the look adds
    assert "next: coin look 4 (n_replicates 10 → 80; about " in log.getvalue()
    assert outcome.config["n_replicates"] == look["replicates"]["n_replicates"]


def test_a_sequential_run_stores_what_a_plain_run_with_its_replicates_stores(tmp_path):
    (outcome,), _ = _run(tmp_path / "sequential", [Coin()])
    assert outcome.paths == [tmp_path / "sequential" / "coin.nc"]  # no figures unless asked
    last = outcome.config["n_replicates"]
    with open_workers(processes=1) as workers:
        run_all([Coin()], False, 7, tmp_path / "plain", workers, figures=False,
                configs=[Coin().configure({"n_replicates": last})], log=io.StringIO())
    sequential = read_netcdf(tmp_path / "sequential" / "coin.nc")
    plain = read_netcdf(tmp_path / "plain" / "coin.nc")
    assert sequential["x"].shape == (1, last)
    xr.testing.assert_identical(sequential, plain)
    (again,), _ = _run(tmp_path / "sequential", [Coin()])
    assert again.sweep.computed == [] and again.verdicts == outcome.verdicts


def test_the_budget_stops_the_looks_and_the_reasons_say_what_would_decide(tmp_path):
    (outcome,), undecided = _run(tmp_path, [Coin()], budget=1e-6)
    assert [v.check for _, v, _ in undecided] == ["mean"]
    (name, verdict, why), = undecided
    assert verdict.verdict == INCONCLUSIVE and outcome.config["n_replicates"] == 10
    assert why.startswith("the budget ran out at look 1 (n_replicates = 10): about ")
    assert why.endswith("the difference sits near the margin")  # 10 replicates: factor > 100
    # the verdict keeps it (so --json carries it); a decided one has none
    assert outcome.verdicts[1] == verdict
    assert verdict.evidence["sequential"]["why_undecided"] == why
    assert "why_undecided" not in outcome.verdicts[0].evidence["sequential"]


def test_a_first_pass_that_spent_the_budget_is_judged_as_the_only_look_at_fixed_r_rates(
        tmp_path):
    """Nothing can follow it whatever its verdicts: its verdicts are a plain run's."""
    (outcome,), _ = _run(tmp_path / "spent", [Coin()], budget=1e-6)
    with open_workers(processes=1) as workers:
        (plain,) = run_all([Coin()], False, 7, tmp_path / "plain", workers, figures=False,
                           log=io.StringIO())
    for sequential, fixed in zip(outcome.verdicts, plain.verdicts, strict=True):
        assert sequential.evidence["sequential"]["rate_share"] == 1.0
        assert "only look" in sequential.evidence["sequential"]["spending"]
        assert replace(sequential, evidence=fixed.evidence) == fixed
    # negative control: with budget left, look 1 spends half of each rate, a stricter z
    (longer,), _ = _run(tmp_path / "longer", [Coin()])
    first = longer.verdicts[0]
    assert first.evidence["sequential"]["rate_share"] == 0.5
    assert first.z_threshold > plain.verdicts[0].z_threshold


class Excess(Coin):
    """A rate of a quantity whose mean at the first x is -0.01 (its replicates centred there),
    about 0 against its error: no slope, and no difference near a margin."""

    name = "excess"

    def run_point(self, config, point, seed):
        noise = np.random.default_rng(seed).standard_normal((4, config["n_replicates"]))
        noise -= noise.mean(axis=1, keepdims=True)
        return xr.Dataset({"x": (("point", "x", "replicate"),
                                 [noise + np.array([-0.01, 4.0, 16.0, 64.0])[:, None]])},
                          coords={"point": [0]})

    def checks(self, dataset):
        return [rate_check("excess", [1, 2, 4, 8], dataset["x"].values[0], 2.0,
                           z_for_family(0.05, 1), np.random.default_rng(0))]


def test_a_rate_whose_sign_is_not_shown_says_what_would_show_it_not_a_margin(tmp_path):
    (_, verdict, why), = _run(tmp_path, [Excess()], budget=1e-6)[1]
    assert "its sign not shown" in verdict.detail and verdict.replicate_factor > 100
    assert why.startswith("the budget ran out at look 1 (n_replicates = 10): about ")
    assert "near the margin" not in why


class SlowlyJudged(Coin):
    """Judging takes 0.3 s, the sweep almost nothing."""

    name = "slowly-judged"

    def checks(self, dataset):
        time.sleep(0.3)
        return super().checks(dataset)


def test_judging_counts_in_a_look_s_time_and_so_in_the_next_look_s_prediction(tmp_path):
    """The looks' checks run in this process after the sweeps: their time is part of the
    experiment's and predicts the next look's (the budget counts the whole command)."""
    (outcome,), _ = _run(tmp_path, [SlowlyJudged()], budget=1e-6)
    # beyond the sweep's own seconds (which, run first in a process, hold its first imports)
    assert outcome.seconds - outcome.sweep.seconds >= 0.3


def test_an_experiment_without_replicates_is_not_grown_and_says_so(tmp_path):
    (outcome,), undecided = _run(tmp_path, [Timings()])
    assert replicate_keys(outcome.config) == ()
    assert [(v.check, why) for _, v, why in undecided] == [
        ("mean", "the experiment has no replicate parameter to grow")]


def test_a_look_that_fails_leaves_the_last_one_and_says_why(tmp_path):
    """Look 4 fails, then look 3, then look 2: each failure is tried one look smaller."""
    log = io.StringIO()
    (outcome,), undecided = _run(tmp_path, [Fragile()], log=log)
    assert [line.split("next: ")[1].split(";")[0] for line in log.getvalue().splitlines()
            if "next: " in line] == ["fragile look 4 (n_replicates 10 → 80",
                                     "fragile look 3 (n_replicates 10 → 40",
                                     "fragile look 2 (n_replicates 10 → 20"]
    assert not outcome.error and outcome.config["n_replicates"] == 10
    (_, verdict, why), = undecided
    assert verdict.check == "mean" and verdict.evidence["sequential"]["look"] == 1
    assert why.startswith("look 2 failed: MemoryError: no room for more than 10 replicates "
                          "at look 1 (n_replicates = 10): about ")


def test_when_the_next_looks_do_not_fit_together_the_most_expensive_goes_fewer_looks_on_or_waits():
    from workbench.run.until_decided import _next_looks

    slow, fast = wanting_track(10.0, 3.0), wanting_track(1.0, 3.0)  # 4.5 times: three looks on
    assert _next_looks([slow, fast], 1000.0, None) == {slow: 4, fast: 4}
    assert _next_looks([slow, fast], 40.0, None) == {slow: 2, fast: 4}  # 20 s + 8 s
    assert _next_looks([slow, fast], 1000.0, 2) == {slow: 2, fast: 2}  # max_looks
    # the slow one's deciding look (3 times 10 s) does not fit in 15 s: not grown at all
    assert _next_looks([slow, fast], 15.0, None) == {fast: 4}
    # 1.5 times (2.25 with the stricter values: two looks on), 40 s + 4 s in 21 s: the slow
    # one goes one look down, 20 s + 4 s still do not fit, so it is left out and says why
    slow, fast = wanting_track(10.0, 1.5), wanting_track(1.0, 1.5)
    assert _next_looks([slow, fast], 21.0, None) == {fast: 3}
    why = why_undecided(next(iter(slow.undecided.values())), slow)
    assert why.startswith("look 2 (about 20 s) did not fit beside the other experiments' looks "
                          "in the 21 s left at look 1"), why
    assert not fast.stopped and not slow.stopped  # the slow one waits, it is not stopped
    # the next round plans it again: with the fast one decided, its look 2 fits in 30 s
    fast.undecided = {}
    assert _next_looks([slow, fast], 30.0, None) == {slow: 2}
    assert not slow.waiting
    # and if no later round has room for it, its checks say which look did not fit
    assert _next_looks([slow, fast], 12.0, None) == {}
    assert why_undecided(next(iter(slow.undecided.values())), slow).startswith(
        "at look 1 (n_replicates = 10), about 1.5 times the replicates would decide it: a look "
        "of about 20 s, more than the 12 s left")


def test_a_round_shares_its_looks_compute_among_the_workers_bounded_by_the_longest_task():
    """Looks computing 10 s and 6 s (longest tasks 4 s and 1 s), each writing and judged for
    1 s: on two processes 8 s of shared compute + half the longest task (Graham's bound: the
    last task may start when the other worker has just finished) + 2 s here = 12 s, where
    the two looks alone would take 8 s and 4.5 s; on one process 18 s. Scaled to a look 4 times
    as large that computes again half of it, less 2 s of kept blocks: 19 s of compute."""
    from workbench.run.until_decided import LookCost, round_seconds

    first, second = LookCost(10.0, 10.0, 0.0, 4.0, 1.0), LookCost(6.0, 6.0, 0.0, 1.0, 1.0)
    assert round_seconds([first, second], 2) == 12.0
    assert round_seconds([first], 2) + round_seconds([second], 2) == 12.5
    assert round_seconds([first, second], 1) == 18.0
    assert round_seconds([], 2) == 0.0
    later = replace(first, kept=2.0).at(4, 0.5)
    assert (later.computed, later.longest, later.serial) == (19.0, 16.0, 4.0)


def test_a_look_s_cost_is_read_from_its_sweep_and_from_its_wall_time_where_points_lack_seconds():
    """Points with their compute seconds: the look's work is their sum with the kept blocks
    it read, what it computed that sum less the points read from the store; a point whose
    seconds are not known (a store that did not record them): the sweep's 10 s on two
    workers, less the 4 s its tasks compiled, stand for what it computed. Either way the
    writing (the outcome's seconds beyond the sweep's) is spent in this process and the
    compiling is shared among the workers; the seconds outside their blocks of the points
    that ran blocks finished them."""
    from workbench.run.main_job import Outcome
    from workbench.run.runner import SweepResult
    from workbench.run.until_decided import LookCost

    sweep = SweepResult(xr.Dataset(), seconds=10.0, stored_seconds=3.0, reused_seconds=1.0,
                        kept_seconds=2.0, point_seconds=[5.0, 3.0], longest_task=4.0,
                        compile_seconds=4.0)
    outcome = Outcome(Coin(), Coin().configure(), 7, sweep=sweep, seconds=10.5)
    assert LookCost.of(outcome, 2) == LookCost(9.0, 5.0, 2.0, 4.0, 0.5, 2.0)
    # the first point's blocks took 4 s of its 5: 1 s finished it (the second has no blocks)
    sweep.block_seconds = [4.0, math.nan]
    assert LookCost.of(outcome, 2) == LookCost(9.0, 5.0, 2.0, 4.0, 0.5, 2.0, finishing=1.0)
    sweep.point_seconds = [5.0, math.nan]
    assert LookCost.of(outcome, 2) == LookCost(20.0, 16.0, 2.0, 0.0, 0.5, 2.0)


def test_the_next_round_is_planned_as_the_looks_run_together_not_one_after_the_other():
    """Two experiments whose looks computed 10 s each on two processes, in tasks of at most
    4 s: each next look (twice the replicates) alone is 10 s + half its 8 s longest task =
    14 s, but together they share the workers and one longest task: 20 s + 4 s = 24 s, which
    fit in 25 s where the sum of the looks alone (28 s) would not; in 20 s one waits."""
    from workbench.run.until_decided import LookCost, _next_looks

    first, second = wanting_track(10.0, 1.0), wanting_track(10.0, 1.0)
    for track in (first, second):
        track.n_workers, track.cost = 2, LookCost(10.0, 10.0, 0.0, 4.0, 0.0)
    assert first.predicted(2) == 14.0
    assert _next_looks([first, second], 25.0, None) == {first: 2, second: 2}
    assert len(_next_looks([first, second], 20.0, None)) == 1


def test_a_round_is_planned_with_a_reserve_for_running_over_its_prediction():
    """The same two looks, 24 s together, with the reserve the sequential run plans with
    (1.25): 30 s is needed, so 25 s holds only one of them (14 s, 17.5 s with the reserve) and
    the other says what it needed with it; 30 s holds both. A check whose deciding look (14 s)
    fits in 15 s only without the reserve is not counted: its experiment is not grown."""
    from workbench.run.until_decided import RESERVE, LookCost, _next_looks, why_undecided

    assert RESERVE == 1.25
    first, second = wanting_track(10.0, 1.0), wanting_track(10.0, 1.0)
    for track in (first, second):
        track.n_workers, track.cost = 2, LookCost(10.0, 10.0, 0.0, 4.0, 0.0)
    assert _next_looks([first, second], 30.0, None, RESERVE) == {first: 2, second: 2}
    plan = _next_looks([first, second], 25.0, None, RESERVE)
    assert len(plan) == 1
    (waiting,) = (t for t in (first, second) if t not in plan)
    assert waiting.waiting == ("look 2 (about 14 s, 18 s with the reserve for a round that runs "
                               "over its prediction) did not fit beside the other experiments' "
                               "looks in the 25 s left")
    assert _next_looks([first], 15.0, None) == {first: 2}
    assert _next_looks([first], 15.0, None, RESERVE) == {}
    assert why_undecided(next(iter(first.undecided.values())), first).endswith(
        "a look of about 14 s, 18 s with the reserve for a round that runs over its prediction, "
        "more than the 15 s left of the budget")


def test_what_a_round_s_costs_do_not_explain_is_charged_to_its_looks_and_scales_with_them():
    """A round explained at 6 s (looks of 8 s and 4 s of compute on two processes) took 9 s:
    the 3 s its costs do not explain (reading the store, combining, an idle worker) go to the
    looks' serial seconds in proportion to their 4 s and 2 s alone, so a next look of twice
    the replicates is predicted at 2 × (4 + 2) = 12 s for the first. A round that took less
    than explained charges nothing (negative control)."""
    from workbench.run.until_decided import LookCost, _charge_unexplained

    first, second = wanting_track(8.0, 1.0), wanting_track(4.0, 1.0)
    for track in (first, second):
        track.n_workers = 2
    _charge_unexplained([first, second], 9.0, 2, [first, second])
    assert first.cost.serial == pytest.approx(2.0) and second.cost.serial == pytest.approx(1.0)
    assert first.predicted(2) == pytest.approx(12.0)
    first.cost = LookCost(8.0, 8.0)
    _charge_unexplained([first], 3.0, 2, [first])
    assert first.cost.serial == 0.0


def test_a_look_that_predicts_nothing_still_explains_its_round_s_compute():
    """A round of two looks of 8 s of compute each on two processes took 9 s: 8 s explained,
    1 s not. The second look's cost predicts no later look (a narrower look that kept no
    block), so it is not charged, but its 8 s are not unexplained either: the first look,
    4 s of 8 explained alone, is charged its half of the 1 s. Charging the whole round to the
    first look's cost alone (4 s explained) would have charged it 5 s (the negative
    control: what the round was charged before, with only the first look's cost)."""
    from workbench.run.until_decided import LookCost, _charge_unexplained

    first, second = wanting_track(8.0, 1.0), wanting_track(8.0, 1.0)
    second.last_key = None
    _charge_unexplained([first, second], 9.0, 2, [first])
    assert first.cost.serial == pytest.approx(0.5) and second.cost.serial == 0.0
    first.cost = LookCost(8.0, 8.0)
    _charge_unexplained([first], 9.0, 2, [first])
    assert first.cost.serial == pytest.approx(5.0)


def test_the_look_promising_fewest_decisions_per_second_goes_fewer_looks_on_first():
    """Four checks asking 3 times a 10 s look: look 4 (80 s) should decide all four. One check
    asking 16 times a 5 s look: look 4 (40 s, 8 times) should decide none. With 90 s left the
    second goes down to look 2 and the first keeps look 4 (the most expensive first would have
    taken the first down instead)."""
    from workbench.run.until_decided import _next_looks

    many, none = wanting_track(10.0, 3.0, checks=4), wanting_track(5.0, 16.0)
    assert many.promised(4) == 4 and many.promised(2) == 0 and none.promised(4) == 0
    assert _next_looks([many, none], 1000.0, None) == {many: 4, none: 4}
    assert _next_looks([many, none], 90.0, None) == {many: 4, none: 2}


def test_no_look_is_spent_towards_checks_whose_deciding_look_does_not_fit_in_the_budget():
    """A check asking 50 times the replicates of a 10 s look needs look 7 (64 times, about
    640 s): with 100 s left, looks towards it would spend the budget and decide nothing, so its
    experiment is not grown, and the final table says what the look would have cost; the 1 s
    experiment's 64 s look fits, so it goes on (three looks at most)."""
    from workbench.run.until_decided import _next_looks, why_undecided

    slow, fast = wanting_track(10.0, 50.0), wanting_track(1.0, 50.0)
    assert _next_looks([slow, fast], 1000.0, None) == {slow: 4, fast: 4}
    assert _next_looks([slow, fast], 100.0, None) == {fast: 4}
    why = why_undecided(slow.undecided["mean"], slow)
    assert why == ("at look 1 (n_replicates = 10), about 50 times the replicates would decide "
                   "it: a look of about 640 s, more than the 100 s left of the budget")
    assert why_undecided(fast.undecided["mean"], fast).startswith("the budget ran out at look 1")
    # looks double the replicates: 1.18 times a 62 s look is look 2, 124 s, not 73 s
    near = wanting_track(62.0, 1.18)
    assert near.deciding_seconds(1.18) == 124.0
    assert _next_looks([near], 103.0, None) == {} and _next_looks([near], 124.0, None) == {near: 2}


def test_figures_are_drawn_from_the_last_look_when_asked(tmp_path):
    (outcome,), _ = _run(tmp_path, [Drawn()], figures=True)
    figure = tmp_path / "drawn.txt"
    assert outcome.paths[-1] == figure
    assert figure.read_text() == f"{outcome.config['n_replicates']} replicates"
    assert outcome.config["n_replicates"] > 10


def test_checks_that_raise_make_an_error_row_and_the_others_go_on(tmp_path):
    (broken, coin), undecided = _run(tmp_path, [Unjudged(), Coin()])
    assert "ZeroDivisionError: no verdict today" in broken.error and broken.verdicts == []
    assert [v.verdict for v in coin.verdicts] == [HOLDS, HOLDS] and undecided == []


def _decided_after_an_inconclusive_first_look(tmp_path, experiment):
    """Run ``experiment`` (one check, 10 replicates) until decided: its outcome, its check
    (inconclusive at look 1, holding at a later look), the check's sequential evidence and the
    progress log."""
    log = io.StringIO()
    (outcome,), undecided = _run(tmp_path, [experiment], log=log)
    assert undecided == []
    (mean,) = outcome.verdicts
    first = mean.evidence["sequential"]["looks"][0]
    assert first["verdict"] == INCONCLUSIVE and first["replicates"] == {"n_replicates": 10}
    look = mean.evidence["sequential"]
    assert mean.verdict == HOLDS and look["look"] > 1
    return outcome, mean, look, log


def test_a_reference_too_short_for_replicates_alone_grows_with_them(tmp_path):
    """At look 1 the reference's error (25 draws) alone stands in the way: more replicates
    cannot decide the check, both together can; the later looks multiply the reference's
    draws with the replicates until it holds. Without a reference size to grow, the check says
    why it stays undecided."""
    outcome, mean, look, _ = _decided_after_an_inconclusive_first_look(tmp_path, Referenced())
    grown = 2 ** (look["look"] - 1)
    assert look["replicates"] == {"n_replicates": 10 * grown, "reference_draws": 25 * grown}
    assert outcome.config["reference_draws"] == 25 * grown

    class Fixed(Referenced):
        """The same check, its reference fixed (no reference size to grow)."""

        name = "fixed"
        parameters = Coin.parameters

        def run_point(self, config, point, seed):
            return super().run_point({**config, "reference_draws": 25}, point, seed)

    (fixed,), undecided = _run(tmp_path / "fixed", [Fixed()])
    assert fixed.config["n_replicates"] == 10  # nothing to grow that could decide it
    (_, verdict, why), = undecided
    assert math.isinf(verdict.replicate_factor) and "reference_factor" in verdict.evidence
    assert why.startswith("the reference's own error is too large: a longer reference run "
                          "would decide it")


class Slow(Coin):
    """Half a second a point, whatever its replicates."""

    name = "slow"

    def run_point(self, config, point, seed):
        import time

        time.sleep(0.5)
        return super().run_point(config, point, seed)


def test_a_look_read_from_the_store_is_predicted_at_the_compute_time_the_store_recorded(
        tmp_path):
    """A rerun reads look 1 from the store in a moment, but the next look must compute: it is
    predicted from the seconds the store recorded for the point (at least the 0.5 s it slept),
    so three looks on (8 × 0.5 s) do not fit in 3 s. Predicted from the read alone, look 4
    would have seemed to cost almost nothing."""
    from workbench.run.until_decided import Track, _next_looks

    with open_workers(processes=1) as workers:
        run_all([Slow()], False, 7, tmp_path, workers, figures=False, log=io.StringIO())
        (again,) = run_all([Slow()], False, 7, tmp_path, workers, figures=False,
                           log=io.StringIO())
    assert again.sweep.computed == [] and again.sweep.stored_seconds >= 0.5
    track = Track(Slow(), {}, Slow().configure(), False)
    track.absorb(again, Look(1))
    assert track.undecided and track.cost.work >= again.sweep.stored_seconds >= 0.5
    assert track.cost.computed < 0.5  # what the rerun computed: nothing, or almost
    assert _next_looks([track], 3.0, None)[track] < 4


class TwoParts(Experiment):
    """Two parts as a study of parts has them: ``slow`` (a point that sleeps, its ``sure``
    check holding at once) and ``coin`` (the Coin's ``mean``, which needs more replicates),
    each with its own replicate parameter; a part's checks read its point alone
    (:meth:`keys_read_by`)."""

    name = "two-parts"
    parameters = (Parameter("slow_n_replicates", 10, "replicates of the slow part"),
                  Parameter("coin_n_replicates", 10, "replicates of the coin part"))
    sweep_dims = ("part",)

    def points(self, config):
        return [{"part": "slow"}, {"part": "coin"}]

    def point_identity(self, config, point):
        return {"n_replicates": config[f"{point['part']}_n_replicates"]}

    def keys_read_by(self, checks):
        return {f"{check.partition('/')[0]}_n_replicates" for check in checks}

    def run_point(self, config, point, seed):
        import time

        if point["part"] == "slow":
            time.sleep(0.4)
        n = config[f"{point['part']}_n_replicates"]
        draws = [np.random.default_rng([seed, i]).standard_normal() for i in range(n)]
        return xr.Dataset({f"{point['part']}_x": ("replicate_" + point["part"], draws)})

    def combine(self, config, datasets):
        return xr.merge(datasets)

    def checks(self, dataset):
        verdicts = []
        for part, margin in (("slow", 10.0), ("coin", 0.25)):
            x = dataset[f"{part}_x"].values
            error = x.std(ddof=1) / math.sqrt(x.size)
            verdicts.append(oracle_check(f"{part}/{'sure' if part == 'slow' else 'mean'}",
                                         x.mean(), error, 0.0, z_for_family(0.05, 2),
                                         margin=margin, n_replicates=x.size))
        return verdicts


class TwoPartsWhole(TwoParts):
    """Its checks read every key, as the base experiment says."""

    name = "two-parts-whole"
    keys_read_by = Experiment.keys_read_by


def test_a_look_grows_only_the_parts_whose_checks_are_undecided(tmp_path):
    """Only the coin part's check is undecided after look 1: later looks double its
    replicates alone, the slow part's point is read from the store (its check kept as
    decided), and the predicted time counts only the coin part's share of look 1's seconds.
    Negative control: an experiment whose checks read every key grows both parts."""
    from workbench.run.until_decided import Track

    (outcome,), undecided = _run(tmp_path / "parts", [TwoParts()])
    assert undecided == []
    slow, coin = outcome.verdicts
    assert slow.verdict == HOLDS and slow.evidence["sequential"]["look"] == 1
    assert coin.verdict == HOLDS and coin.evidence["sequential"]["look"] >= 3
    assert outcome.config["slow_n_replicates"] == 10
    assert outcome.config["coin_n_replicates"] == 10 * 2 ** (coin.evidence["sequential"]["look"]
                                                             - 1)
    assert outcome.sweep.computed == [{"part": "coin"}]
    assert outcome.sweep.loaded == [{"part": "slow"}]

    with open_workers(processes=1) as workers:
        (first,) = run_all([TwoParts()], False, 7, tmp_path / "first", workers, figures=False,
                           judge=False, log=io.StringIO())
    track = Track(TwoParts(), {}, TwoParts().configure(), False)
    track.absorb(first, Look(1))
    slow_seconds, coin_seconds = first.sweep.point_seconds
    assert slow_seconds >= 0.4 and track.growing == pytest.approx(
        coin_seconds / (slow_seconds + coin_seconds))
    assert track.predicted(2) == pytest.approx(track.growing * 2 * track.cost.work
                                               + 2 * track.cost.serial)
    assert track.config_at(3)["slow_n_replicates"] == 10
    assert track.config_at(3)["coin_n_replicates"] == 40
    # a check that more replicates cannot decide does not grow its part
    [coin_check] = track.undecided.values()
    track.undecided["slow/stuck"] = replace(coin_check, check="slow/stuck",
                                            replicate_factor=math.inf)
    assert track.config_at(3)["slow_n_replicates"] == 10
    track.undecided["slow/stuck"] = replace(coin_check, check="slow/stuck")
    assert track.config_at(3)["slow_n_replicates"] == 40

    (whole,), _ = _run(tmp_path / "whole", [TwoPartsWhole()])
    assert whole.config["slow_n_replicates"] == whole.config["coin_n_replicates"] > 10
    whole_track = Track(TwoPartsWhole(), {}, TwoPartsWhole().configure(), False)
    whole_track.absorb(first, Look(1))
    assert whole_track.growing == 1.0


class Capped(Coin):
    """Refuses more than 10 replicates at configuration (as a parameter's range would)."""

    name = "capped"

    def configure(self, overrides=None, quick=False):
        if (overrides or {}).get("n_replicates", 10) > 10:
            raise InvalidParameter("n_replicates", overrides["n_replicates"], "must be <= 10")
        return super().configure(overrides, quick)


def test_a_next_look_refused_at_configuration_stops_the_experiment_with_the_reason(tmp_path):
    """Judging look 1 asks what the next look would compute again; a configuration that
    refuses the next look's replicates does not break the run: the plan stops the
    experiment, and its undecided check says why."""
    (outcome,), undecided = _run(tmp_path, [Capped()])
    assert outcome.error == "" and outcome.config["n_replicates"] == 10
    [(name, verdict, why)] = undecided
    assert name == "capped" and verdict.check == "mean"
    assert "was refused" in why and "must be <= 10" in why


def test_a_study_of_parts_names_the_parameters_of_the_parts_owning_the_checks():
    """multi-server: its logistic part's checks read the logistic part's parameters (and the
    shared ones), not the Gaussian part's; downpour-period's parts share their points, so its
    checks read every key."""
    from workbench import experiments

    multi = experiments.get("multi-server")
    read = multi.keys_read_by(["logistic/theorem7/variance-vs-servers"])
    assert "logistic_n_replicates" in read and "gaussian_n_replicates" not in read
    assert "servers" in read  # the shared sweep constant
    both = multi.keys_read_by(["logistic/theorem6/loss-unchanged", "gaussian/oracle/bias/S=1"])
    assert {"logistic_n_replicates", "gaussian_n_replicates"} <= both
    assert experiments.get("downpour-period").keys_read_by(["logistic/rate"]) is None
    assert experiments.get("stale-gaussian").keys_read_by(["oracle/theta"]) is None


class Coins(Coin):
    """Two points, R replicates of N(0, 1) each (seeded by point and index): ``mean/point=0``
    reads point 0 alone within 0.25 (about 160 replicates decide it), ``sure/point=1`` point 1
    within 10 and ``sure/both`` both points within 10 (both decided at once); one family of a
    check per point and one more (three at both points, two at one)."""

    name = "coins"
    parameters = (*Coin.parameters, Parameter("point", [0, 1], "the points"))
    both_margin = 10.0

    def points(self, config):
        return [{"point": p} for p in config["point"]]

    def run_point(self, config, point, seed):
        draws = [np.random.default_rng([seed, point["point"], i]).standard_normal()
                 for i in range(config["n_replicates"])]
        return xr.Dataset({"x": (("point", "replicate"), [draws])},
                          coords={"point": [point["point"]]})

    def checks(self, dataset):
        z = z_for_family(0.05, dataset.sizes["point"] + 1)

        def check(name, x, margin):
            return oracle_check(name, x.mean(), x.std(ddof=1) / math.sqrt(x.size), 0.0, z,
                                margin=margin, n_replicates=x.size)

        return [*(check("mean/point=0", dataset["x"].sel(point=0).values, 0.25) if p == 0
                  else check(f"sure/point={p}", dataset["x"].sel(point=p).values, 10.0)
                  for p in dataset["point"].values.tolist()),
                check("sure/both", dataset["x"].values.ravel(), self.both_margin)]


class PooledCoins(Coins):
    """``mean/point=0`` as in :class:`Coins`, and a check of both points' mean within 0.25
    that stays undecided as long: a look aimed at both reads both points."""

    name = "pooled-coins"
    both_margin = 0.25


def _stored_points(out, name):
    import json

    lines = (out / "store" / name / "manifest.jsonl").read_text().splitlines()
    return [json.loads(line)["point"]["point"] for line in lines]


def test_a_look_runs_only_the_points_the_checks_it_aims_at_read(tmp_path):
    """After look 1 only ``mean/point=0`` is undecided; it reads point 0 alone (leaving out
    point 1 judges it the same), so the later looks run point 0 alone with their replicates,
    and judge that check alone, in its family's size at both points. The experiment's result
    stays its last look of every point,
    the file a plain run with those replicates writes; a rerun computes nothing. Negative
    control: a check of both points' mean keeps both points in every look."""
    log = io.StringIO()
    (outcome,), undecided = _run(tmp_path / "narrow", [Coins()], log=log)
    assert undecided == []
    mean, sure, both = outcome.verdicts
    assert [v.verdict for v in outcome.verdicts] == [HOLDS] * 3
    assert sure.evidence["sequential"]["look"] == both.evidence["sequential"]["look"] == 1
    look = mean.evidence["sequential"]
    assert look["look"] >= 3 and look["sweep"] == {"point": [0]}
    assert look["replicates"] == {"n_replicates": 10 * 2 ** (look["look"] - 1)}
    assert [h.get("sweep") for h in look["looks"]] == [None] + [{"point": [0]}] * (
        len(look["looks"]) - 1)
    assert "next: coins look 4 (n_replicates 10 → 80, only point = 0; about " in log.getvalue()
    with at_look(Look(look["look"])):  # its family's size at both points: three, not two
        assert mean.z_threshold == pytest.approx(z_for_family(0.05, 3))
        assert mean.z_threshold > z_for_family(0.05, 2)
    # point 1 ran once, at look 1; point 0 at every look
    stored = _stored_points(tmp_path / "narrow", "coins")
    assert stored.count(1) == 1 and stored.count(0) == len(look["looks"])
    assert outcome.config["point"] == [0, 1] and outcome.config["n_replicates"] == 10
    with open_workers(processes=1) as workers:
        run_all([Coins()], False, 7, tmp_path / "plain", workers, figures=False,
                log=io.StringIO())
    xr.testing.assert_identical(read_netcdf(tmp_path / "narrow" / "coins.nc"),
                                read_netcdf(tmp_path / "plain" / "coins.nc"))
    (again,), _ = _run(tmp_path / "narrow", [Coins()])
    assert again.verdicts == outcome.verdicts
    assert _stored_points(tmp_path / "narrow", "coins") == stored

    (pooled,), undecided = _run(tmp_path / "pooled", [PooledCoins()])
    assert undecided == []
    assert all("sweep" not in v.evidence["sequential"] for v in pooled.verdicts)
    assert pooled.config["n_replicates"] > 10 and pooled.config["point"] == [0, 1]


def test_a_later_look_is_predicted_from_each_point_s_last_two_measurements():
    """A point whose compute seconds went from 10 s at look 1 to 20 s at look 3 (four times
    the replicates) adds 10/3 s a first look's replicates: its look 4 (eight times) is
    predicted at 20 + 4·10/3 s, a third of the 8 times its look 1's 10 s that the replicates'
    multiple gives; with one measurement, in proportion (negative control); a fall between
    two measurements is read as a quarter of the last seconds per replicate."""
    from workbench.run.until_decided import LEAST_RATE, point_seconds

    track = wanting_track(seconds=10.0, factor=4.0)
    track.computing = {"point=0": 10.0}
    assert track.multiple(4) == 8.0  # not measured: the replicates' multiple
    track.measured = {"point=0": [(1, 10.0)]}
    assert track.multiple(4) == pytest.approx(8.0)  # one measurement: in proportion
    track.measured = {"point=0": [(1, 10.0), (3, 20.0)]}
    assert point_seconds(track.measured["point=0"], 4) == pytest.approx(20 + 4 * 10 / 3)
    assert track.multiple(4) == pytest.approx((20 + 4 * 10 / 3) / 10)
    assert track.predicted(4) < wanting_track(seconds=10.0, factor=4.0).predicted(4)
    assert point_seconds([(1, 10.0), (2, 9.0)], 3) == pytest.approx(9 + LEAST_RATE * 9 / 2 * 2)


def test_a_look_s_points_are_measured_where_it_computed_them_whole(tmp_path):
    """The points a look computed give their seconds; a look that read kept blocks computed
    only the replicates it added, and gives none (negative control: the same look without)."""
    from workbench.run.main_job import Outcome
    from workbench.run.runner import SweepResult

    track = wanting_track(seconds=1.0, factor=4.0)
    config = Coins().configure()
    track.experiment = Coins()
    sweep = SweepResult(xr.Dataset(), computed=[{"point": 0}], loaded=[{"point": 1}],
                        point_seconds=[2.0, 3.0])
    track._measure(Outcome(Coins(), config, 7, sweep=sweep), 2)
    assert track.measured == {"point=0": [(2, 2.0)]}
    track._measure(Outcome(Coins(), config, 7, sweep=replace(sweep, kept_blocks=3)), 3)
    assert track.measured == {"point=0": [(2, 2.0)]}
    # a full look that read kept blocks: the next look scales by the replicates alone
    track.outcome = track.full = Outcome(Coins(), config, 7, sweep=replace(
        sweep, computed=[{"point": 0}, {"point": 1}], loaded=[], kept_blocks=3))
    assert track._growing_share() == 1.0 and track.computing == {}
    track.full = replace(track.full, sweep=replace(track.full.sweep, kept_blocks=0))
    assert track._growing_share() == 1.0 and track.computing == {"point=0": 2.0,
                                                                  "point=1": 3.0}


class CoinsWithUnknown(Coins):
    """:class:`Coins` and a check of point 0 that no replicates decide (no error estimate)."""

    name = "coins-with-unknown"

    def checks(self, dataset):
        unknown = [oracle_check("unknown/point=0", float(dataset["x"].sel(point=0).mean()),
                                math.nan, 0.0, 3.0, margin=0.25)] \
            if 0 in dataset["point"].values.tolist() else []
        return super().checks(dataset) + unknown


def test_a_narrower_look_judges_every_undecided_check_its_points_give_not_only_its_aim(
        tmp_path):
    """The look aimed at ``mean/point=0`` runs point 0 alone; ``unknown/point=0`` reads that
    point alone too, so it is judged at every such look, not left at look 1."""
    (outcome,), undecided = _run(tmp_path, [CoinsWithUnknown()])
    [(_, unknown, why)] = undecided
    assert unknown.check == "unknown/point=0" and "more replicates cannot decide" in why
    mean = next(v for v in outcome.verdicts if v.check == "mean/point=0")
    looks = [h["look"] for h in unknown.evidence["sequential"]["looks"]]
    assert looks == [h["look"] for h in mean.evidence["sequential"]["looks"]]
    assert looks[0] == 1 and len(looks) > 1
    assert all(h["sweep"] == {"point": [0]} for h in unknown.evidence["sequential"]["looks"][1:])


def test_an_aimed_check_a_narrower_look_does_not_give_stays_as_last_judged(tmp_path):
    """Were a narrower look's result to lack a check it aimed at, the check keeps its last
    verdict: it is never dropped from the experiment's verdicts."""
    from workbench.run.until_decided import Track

    coins = Coins()
    with open_workers(processes=1) as workers:
        (first,) = run_all([coins], False, 7, tmp_path, workers, figures=False, judge=False,
                           log=io.StringIO())
        track = Track(coins, {}, coins.configure(), False)
        track.absorb(first, Look(1))
        ghost = replace(track.undecided["mean/point=0"], check="ghost")
        track.undecided["ghost"], track.order = ghost, [*track.order, "ghost"]
        track.sweep, track.aiming = {"point": [0]}, frozenset({"mean/point=0", "ghost"})
        (narrow,) = run_all([coins], False, 7, tmp_path, workers, figures=False, judge=False,
                            log=io.StringIO(), written=[False],
                            configs=[track.config_at(2)])
    track.absorb(narrow, Look(2))
    assert track.undecided["ghost"] == ghost
    assert [v.check for v in track.verdicts()] == track.order
    assert track.result().config["point"] == [0, 1]


def test_a_narrower_look_that_kept_blocks_predicts_the_next_look_of_its_points(tmp_path):
    """A narrower look of point 0 whose 8 s of compute all went into kept blocks predicts the
    next look of that point: twice the replicates, half of them read, so 8 s computed in
    tasks of up to 8 s, 4 + 4 = 8 s on two processes; the last full look (40 s of compute in
    tasks of 20 s, three looks before) would predict many times that. Negative control: a
    narrower look that kept no block leaves the prediction to the full look."""
    from workbench.run.until_decided import LookCost, Track

    coins = Coins()
    with open_workers(processes=1) as workers:
        (first,) = run_all([coins], False, 7, tmp_path, workers, figures=False, judge=False,
                           log=io.StringIO())
        track = Track(coins, {}, coins.configure(), False)
        track.absorb(first, Look(1), 2)
        track.cost = LookCost(work=40.0, computed=40.0, longest=20.0)
        track.sweep, track.aiming = {"point": [0]}, frozenset({"mean/point=0"})
        (narrow,) = run_all([coins], False, 7, tmp_path, workers, figures=False, judge=False,
                            log=io.StringIO(), written=[False], configs=[track.config_at(3)])

    def absorbed(kept_seconds):
        seen = Track(coins, {}, coins.configure(), False)
        seen.absorb(first, Look(1), 2)
        seen.cost = track.cost
        sweep = replace(narrow.sweep, point_seconds=[8.0], kept_seconds=kept_seconds,
                        longest_task=4.0, stored_seconds=0.0, reused_seconds=0.0,
                        compile_seconds=0.0)
        seen.sweep, seen.aiming = dict(track.sweep), track.aiming
        seen.absorb(replace(narrow, sweep=sweep, seconds=sweep.seconds), Look(3), 2)
        seen.sweep = {"point": [0]}
        seen.growing = seen._growing_share()
        return seen

    kept = absorbed(8.0)
    assert kept.last_key == (("point", (0,)),) and kept.growing == 1.0
    assert kept.later(4).computed == pytest.approx(8.0)
    assert kept.predicted(4) == pytest.approx(8.0, abs=0.5)  # + the judging's serial seconds
    whole = absorbed(0.0)
    assert whole.last_key is None and whole.narrower_costs == {}
    assert whole.predicted(4) > 5 * kept.predicted(4)
    assert whole.later(4) == whole.cost.at(whole.multiple(4), whole.growing)


def test_a_narrower_look_predicts_later_looks_of_its_points_or_of_some_of_them():
    """A narrower look's points include a later look's where every dim it narrowed is
    narrowed at least as much; a dim the later look does not narrow runs every value, which
    the narrower look did not (negative controls)."""
    from workbench.run.until_decided import _covers

    assert _covers({"group_size": (2, 5, 10, 20)}, {"group_size": [10, 20]})
    assert _covers({"group_size": (10, 20)}, {"group_size": [10, 20], "network": ["cnn"]})
    assert not _covers({"group_size": (10, 20)}, {"group_size": [5, 10, 20]})
    assert not _covers({"group_size": (10, 20)}, {"network": ["cnn"]})


def test_no_task_of_a_later_look_is_predicted_longer_than_all_it_computes():
    """A look whose longest task took 6 s of 10 s, with 8 s of kept blocks: the next look
    (twice the replicates) computing half of its points again computes 6 s in all, so its
    longest task is 6 s, not twice 6 s; computing every point again (no kept blocks), 20 s,
    its longest task scales with the replicates (negative control)."""
    from workbench.run.until_decided import LookCost

    assert LookCost(10.0, 10.0, 8.0, 6.0).at(2.0, 0.5) == LookCost(20.0, 6.0, 0.0, 6.0)
    assert LookCost(10.0, 10.0, 0.0, 6.0).at(2.0, 1.0) == LookCost(20.0, 20.0, 0.0, 12.0)


def test_a_look_of_more_chains_that_finish_a_point_grows_its_finishing_and_longest_task():
    """A look of 10 s, 4 s of it finishing its points (its chains' limits, in a task of 4 s),
    6 s of kept blocks: a later look of four times the chains and twice the replicates
    computes the blocks twice, less those read (6 s), and the finishing four times (16 s);
    its longest task may be a finishing one, four times as long (16 s), not twice. Without
    the finishing split (no ``finishing_multiple``) the whole look grows by ``multiple``."""
    from workbench.run.until_decided import LookCost

    cost = LookCost(10.0, 10.0, 6.0, 4.0, finishing=4.0)
    assert cost.at(2.0, 1.0, 1.0, 4.0) == LookCost(28.0, 22.0, 0.0, 16.0)
    assert cost.at(2.0, 1.0) == LookCost(20.0, 14.0, 0.0, 8.0)


def _first_look(tmp_path, experiment, **options):
    """``experiment``'s look 1, run on one process and not judged, and a new track of it
    (``options``: the track's fields) that has not absorbed it."""
    from workbench.run.until_decided import Track

    with open_workers(processes=1) as workers:
        (outcome,) = run_all([experiment], False, 7, tmp_path, workers, figures=False,
                             log=io.StringIO(), judge=False)
    return Track(experiment, {}, experiment.configure(), False, **options), outcome


class Chained(Coin):
    """``n_chains`` chains, chain c on its own schedule with exact value b_c ~ N(0, 1) (seeded
    by c), each of R replicates b_c + 0.2 N(0, 1) (seeded by r and c): the mean against 0 is a
    chain-level check (:func:`~workbench.systems.distributed.windows.chain_level_check`, its
    evidence naming ``n_chains`` as what adds chains), whose
    error is floored at 1/√C whatever the replicates; with 4 chains only more chains decide it
    (about 40 make it hold within its margin, half the spread of one replicate, about 0.51)."""

    name = "chained"
    parameters = (Parameter("n_replicates", 10, "replicates R"),
                  Parameter("n_chains", 4, "independent chains C"))

    def run_point(self, config, point, seed):
        chains, replicates = config["n_chains"], config["n_replicates"]
        exact = np.array([np.random.default_rng([seed, 10**6, c]).standard_normal()
                          for c in range(chains)])
        noise = np.array([[np.random.default_rng([seed, r, c]).standard_normal()
                           for c in range(chains)] for r in range(replicates)])
        return xr.Dataset({"x": (("point", "replicate", "chain"), [exact + 0.2 * noise]),
                           "exact": (("point", "chain"), [exact])}, coords={"point": [0]})

    def checks(self, dataset):
        from workbench.systems.distributed.windows import chain_level_check

        return [chain_level_check("mean", dataset["x"].values[0], 0.0, 0.05, 1,
                                  exact=dataset["exact"].values[0],
                                  evidence={CHAINS_FROM: "n_chains"})]


class Traveling(Chained):
    """The same check on a fixed number of chains (one a worker, as traveling chains are):
    no chain count to grow."""

    name = "traveling"
    parameters = (Parameter("n_replicates", 10, "replicates R"),)

    def run_point(self, config, point, seed):
        return super().run_point({**config, "n_chains": 4}, point, seed)


def test_a_check_only_more_chains_decide_grows_the_chains_and_not_the_replicates(tmp_path):
    """At look 1 the 4 chains' spread alone stands in the way: more replicates cannot decide
    the check (its replicate factor is infinite), more chains can (``chain_factor``); the
    later looks multiply the chains alone until it holds. Without a chain count to grow (the
    negative control), it stays undecided and says why."""
    outcome, mean, look, log = _decided_after_an_inconclusive_first_look(tmp_path, Chained())
    assert look["replicates"] == {"n_replicates": 10, "n_chains": 4 * 2 ** (look["look"] - 1)}
    assert outcome.config["n_chains"] == mean.evidence["n_chains"] == 4 * 2 ** (look["look"] - 1)
    assert "(n_chains 4 → " in log.getvalue() and "n_replicates 10 →" not in log.getvalue()

    (fixed,), undecided = _run(tmp_path / "fixed", [Traveling()])
    assert fixed.config["n_replicates"] == 10  # nothing to grow that could decide it
    (_, verdict, why), = undecided
    assert math.isinf(verdict.replicate_factor) and verdict.evidence["chain_factor"] > 1
    assert why.startswith("the chains' schedules spread too much")


def test_a_look_of_more_chains_is_predicted_by_their_multiple_and_reads_no_kept_block(tmp_path):
    """A look aimed at a check only more chains decide grows ``n_chains`` alone, and its
    predicted compute is the last look's times the chains' multiple, none of it read from
    kept blocks (every chain's schedule is drawn with the others); a look aimed at a check
    more replicates decide grows the replicates alone, and reads the kept blocks."""
    from workbench.run.until_decided import LookCost, Track

    experiment = Chained()
    track, outcome = _first_look(tmp_path, experiment)
    track.absorb(outcome, Look(1))
    assert track.chains == ("n_chains",) and track.by_chains("mean")
    assert track.config_at(3) == {**experiment.configure(), "n_chains": 16}
    track.cost = LookCost(work=3.0, computed=3.0, kept=1.0)
    assert track.later(3).computed == pytest.approx(12.0)  # 4 times the chains, none kept
    track.undecided["mean"] = replace(track.undecided["mean"], replicate_factor=2.0)
    assert not track.by_chains("mean")
    assert track.config_at(3) == {**experiment.configure(), "n_replicates": 40}
    assert track.later(3).computed == pytest.approx(11.0)  # 4 times the replicates, less kept

    class Finished(Chained):
        """Its chains are added where the point is finished: no block reads them."""

        unblocked_keys = ("n_chains",)

    track = Track(Finished(), {}, Finished().configure(), False)
    track.absorb(outcome, Look(1))
    track.cost = LookCost(work=3.0, computed=3.0, kept=1.0, finishing=2.0)
    assert track.later(3).computed == pytest.approx(8.0)  # the blocks read, the rest 4 times
    # with the replicates too (twice the chains and twice the replicates): the blocks twice,
    # less those read, and the finishing twice, not the whole look 4 times less those read
    track.undecided["other"] = replace(track.undecided["mean"], check="other",
                                       replicate_factor=1.5)
    track.order.append("other")
    assert track.config_at(2) == {**Finished().configure(), "n_chains": 8, "n_replicates": 20}
    assert track.later(2).computed == pytest.approx(2 * 1.0 + 2 * 2.0 - 1.0)


def test_a_check_names_the_count_that_adds_chains_to_it():
    """A chain-level check grows only the chain count its evidence names, or a part's; a
    check that names none (traveling chains, one a worker) has none to grow."""
    from workbench.run.until_decided import chain_keys, counted_by

    config = {"n_chains": 20, "limit_schedules": 1, "fed_n_chains": 8, "n_replicates": 4,
              "part_limit_schedules": 2, "other_chains": 3}
    assert chain_keys(config) == ("n_chains", "limit_schedules", "fed_n_chains",
                                  "part_limit_schedules")
    verdict = oracle_check("mean", 0.1, 0.1, 0.0, 3.0, margin=0.25,
                           evidence={CHAINS_FROM: "limit_schedules"})
    assert counted_by(verdict, chain_keys(config)) == ["limit_schedules",
                                                       "part_limit_schedules"]
    assert counted_by(replace(verdict, evidence={}), chain_keys(config)) == []


def test_a_check_left_out_of_the_later_looks_says_what_it_asked_of_the_look_that_judged_it():
    """A check last judged at look 1 (10 replicates, asking 50 times them) while narrower looks
    ran other checks up to look 3 (40 replicates): the final table quotes look 1, its 10
    replicates and its 50 times, not look 3's 40 replicates with the 12.5 times that the plan
    counts from there (and predicts the deciding look from: four looks on, 16 times the 10 s).
    Negative control: a check judged at the last look quotes that look."""
    from workbench.run.until_decided import why_undecided

    track = wanting_track(10.0, 50.0)
    track.history = {"mean": [{"look": 1, "replicates": {"n_replicates": 10}}]}
    track.look, track.budget_left = 3, 100.0
    track.outcome = replace(track.outcome, config={**track.outcome.config, "n_replicates": 40})
    assert track.needs("mean") == 12.5
    assert why_undecided(track.undecided["mean"], track) == (
        "at look 1 (n_replicates = 10), about 50 times the replicates would decide it: a look "
        "of about 160 s, more than the 100 s left of the budget")
    track.history["mean"].append({"look": 3, "replicates": {"n_replicates": 40}})
    assert why_undecided(track.undecided["mean"], track).startswith(
        "at look 3 (n_replicates = 40), about 50 times the replicates")


def test_a_look_left_out_while_a_round_was_cut_takes_the_room_a_larger_one_left():
    """In 100 s: ten checks asking 1.5 times a 5 s look (look 3, 20 s), four asking 1.1 times a
    44 s look (look 2, 88 s) and one asking 2.34 times a 10 s look (look 3, 40 s): 148 s
    together. The last goes down to look 2, which promises nothing (2 < 2.34), and is left
    out; the 88 s look still does not fit beside the 20 s one and is left out too. The room
    that leaves holds the first one left out at its aim, look 3 (60 s together): without the
    second pass the round would run 20 s of 100. The 88 s look, tried first, still does not
    fit, and waits (negative control)."""
    from workbench.run.until_decided import _next_looks

    many = wanting_track(5.0, 1.5, checks=10)
    large, cheap = wanting_track(44.0, 1.1, checks=4), wanting_track(10.0, 2.34)
    assert _next_looks([many, large, cheap], 1000.0, None) == {many: 3, large: 2, cheap: 3}
    assert _next_looks([many, large, cheap], 100.0, None) == {many: 3, cheap: 3}
    assert not cheap.waiting
    assert large.waiting.startswith("look 2 (about 88 s) did not fit beside the other "
                                    "experiments' looks in the 100 s left")


class TwoCosts(Coins):
    """Both points' means against 0 within 0.25, each its own check (both undecided at 10
    replicates); the tests give the points their compute seconds."""

    name = "two-costs"

    def checks(self, dataset):
        z = z_for_family(0.05, dataset.sizes["point"])
        return [oracle_check(f"mean/point={p}", x.mean(), x.std(ddof=1) / math.sqrt(x.size),
                             0.0, z, margin=0.25, n_replicates=x.size)
                for p in dataset["point"].values.tolist()
                for x in [dataset["x"].sel(point=p).values]]


def _two_costs_track(tmp_path, seconds, factors):
    """A :class:`TwoCosts` track after look 1 on one process, whose points computed for
    ``seconds`` and whose checks ask for ``factors`` times its replicates."""
    track, first = _first_look(tmp_path, TwoCosts(), seed=7,
                               store=_store(tmp_path, TwoCosts.name))
    sweep = replace(first.sweep, point_seconds=list(seconds), longest_task=max(seconds),
                    stored_seconds=0.0, reused_seconds=0.0, kept_seconds=0.0,
                    compile_seconds=0.0)
    track.absorb(replace(first, sweep=sweep, seconds=sweep.seconds), Look(1), 1)
    assert sorted(track.undecided) == ["mean/point=0", "mean/point=1"]
    track.undecided = {name: replace(verdict, replicate_factor=factors[name])
                       for name, verdict in track.undecided.items()}
    return track


def _store(out, name):
    from workbench.store.result_store import STORE_DIR, ResultStore

    return ResultStore(out / STORE_DIR, name)


def test_a_look_aimed_at_the_checks_asking_least_fits_where_one_aimed_at_all_would_not(tmp_path):
    """Point 0 computed 1 s, point 1 30 s; point 0's check asks 1.6 times the replicates,
    point 1's 30 times. Aimed at both, even point 0's deciding look (look 2: both points,
    62 s) does not fit in 60 s, so the experiment would not grow; aimed at the check asking
    fewer looks, it runs point 0 alone (look 2, about 2 s) and is planned to look 3, the
    stricter values' aim. In the final table point 0's check says the budget ran out (its
    look fits), point 1's quotes its own look (both points, look 6: about 990 s). Negative
    control: with room for every look, the look is aimed at both, every point."""
    from workbench.run.until_decided import _explained, _next_looks

    factors = {"mean/point=0": 1.6, "mean/point=1": 30.0}
    track = _two_costs_track(tmp_path, [1.0, 30.0], factors)
    assert _next_looks([track], 10000.0, None) == {track: 4}
    assert track.sweep == {} and track.aiming == frozenset(factors)
    assert _next_looks([track], 60.0, None) == {track: 3}
    assert track.sweep == {"point": [0]} and track.aiming == {"mean/point=0"}
    assert track.predicted(3) == pytest.approx(4.0, abs=0.5)
    assert track.options == [{"mean/point=0": 1.6}]
    why = {verdict.check: reason for _, verdict, reason in _explained(track)}
    assert why["mean/point=0"].startswith("the budget ran out at look 1")
    assert re.search(r"a look of about 9\d\d s, more than the 60 s left", why["mean/point=1"])


def test_a_look_left_out_of_a_cut_round_takes_the_room_aimed_at_fewer_checks(tmp_path):
    """Point 0 (1 s) asks 1.6 times, point 1 (29 s) 3 times: aimed at both, look 4 (240 s);
    its deciding look 3 (120 s) fits alone in 130 s. Beside ten checks asking 1.5 times a
    30.5 s look (look 3, 122 s), the round is cut: the two-point look goes down to look 2,
    which promises one check in 60 s, and is left out. In the 8 s the other leaves, its aim at
    point 0's check alone takes look 3 (4 s), which promises it; before, it waited. Where even
    look 2 of that aim (2 s) does not fit beside the other (123 s left), it waits, aimed at
    both as before (negative control)."""
    from workbench.run.until_decided import _next_looks

    factors = {"mean/point=0": 1.6, "mean/point=1": 3.0}
    two = _two_costs_track(tmp_path, [1.0, 29.0], factors)
    many = wanting_track(30.5, 1.5, checks=10)
    assert _next_looks([two, many], 130.0, None) == {many: 3, two: 3}
    assert two.sweep == {"point": [0]} and two.aiming == {"mean/point=0"}
    assert two.options == [factors, {"mean/point=0": 1.6}] and not two.waiting
    assert _next_looks([two, many], 123.0, None) == {many: 3}
    assert two.sweep == {} and two.aiming == frozenset(factors)
    assert two.waiting.startswith("look 2 (about 60 s) did not fit")


def test_a_look_aimed_at_both_kinds_is_taken_only_where_it_fits_else_one_kind_goes_first(
        tmp_path):
    """A check only more chains decide (1.5 times the chains) and two that more replicates
    decide (1.5 times them) after a look that computed 10 s: each kind's deciding look 2
    grows its own count alone (20 s); aimed at both it grows both (40 s), which does not fit
    in 30 s. So the look is aimed at one kind, the replicates' (two checks in 20 s before one),
    and cut to look 2, which fits; aimed at both, as before, it would not have fitted at any
    look. Negative control: with room, the look is aimed at both and grows both."""
    from workbench.run.until_decided import LookCost, _next_looks

    experiment = Chained()
    track, outcome = _first_look(tmp_path, experiment)
    track.absorb(outcome, Look(1))
    mean = track.undecided["mean"]
    track.undecided = {
        "mean": replace(mean, evidence={**mean.evidence, "chain_factor": 1.5}),
        **{name: replace(mean, check=name, replicate_factor=1.5) for name in ("r1", "r2")}}
    track.cost = LookCost(work=10.0, computed=10.0)
    assert track.by_chains("mean") and not track.by_chains("r1")
    assert _next_looks([track], 1000.0, None) == {track: 3}
    assert track.config_at(3) == {**experiment.configure(), "n_chains": 16, "n_replicates": 40}
    assert track.predicted(2) == pytest.approx(40.0, abs=0.5)
    assert _next_looks([track], 30.0, None) == {track: 2}
    assert track.aiming == {"r1", "r2"} and track.options == [
        {"r1": 1.5, "r2": 1.5}, {"mean": 1.5}]
    assert track.config_at(2) == {**experiment.configure(), "n_replicates": 20}
    assert track.predicted(2) == pytest.approx(20.0, abs=0.5)


class ThreeCoins(Coins):
    """:class:`Coins` at three points."""

    name = "three-coins"
    parameters = (*Coin.parameters, Parameter("point", [0, 1, 2], "the points"))


def test_the_narrowing_s_trials_read_each_stored_point_once(tmp_path):
    """Aiming a look at point 0's check tries the sweep without each point in turn: points 1
    and 2 (point 0's check is not reproduced), 0 and 2, then 0 alone, five points judged, but
    each of the three stored points is read from the store once. Negative control: without
    the points kept between them, two reads of the same sweep read it twice."""
    from unittest import mock

    from workbench.run.runner import stored_result
    from workbench.store.result_store import ResultStore

    coins = ThreeCoins()
    track, first = _first_look(tmp_path, coins, seed=7, store=_store(tmp_path, coins.name))
    track.absorb(first, Look(1))
    reads = mock.patch.object(ResultStore, "load", autospec=True, side_effect=ResultStore.load)
    with reads as load:
        track.aim_at(["mean/point=0"])
    assert track.sweep == {"point": [0]}
    assert load.call_count == 3
    with reads as load:
        for _ in range(2):
            stored_result(coins, coins.configure(), 7, track.store)
    assert load.call_count == 6
