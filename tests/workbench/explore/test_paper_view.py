"""The Paper tab's rows (:mod:`workbench.explore.paper_view`): a synthetic table of reported
numbers beside a synthetic result, claims matched to verdicts by pattern, and the rows of a
stored stale-gaussian result."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED, Verdict
from workbench import experiments
from workbench.core.paper import PaperEntry, entries
from workbench.explore import paper_view
from workbench.store.netcdf import read_netcdf


def verdict(check: str, word: str, detail: str = "because") -> Verdict:
    return Verdict(check, "oracle", word, 1.0, 1.0, 0.1, 0.1, 3.0, 1e-3, detail)


VERDICTS = [verdict("oracle/a", HOLDS), verdict("oracle/b", VIOLATED),
            verdict("speed-up/slope", INCONCLUSIVE, "x" * 500)]

# a made-up table: accuracy by method and data set, the workbench's interval beside it
RESULT = xr.Dataset(
    {name: (("method", "dataset"), np.array([[0.9, 0.8], [0.7, 0.6]]) + shift)
     for name, shift in (("accuracy", 0.0), ("accuracy_lower", -0.01),
                         ("accuracy_upper", 0.01))} | {"loss": ("method", [1.0, 2.0])},
    coords={"method": ["dsgld", "sgld"], "dataset": ["nips", "wiki"]})
[TABLE] = entries([{
    "section": "a paper §4, Table 1", "claim": "Accuracy on NIPS", "checks": ["oracle/*"],
    "variable": "accuracy", "select": {"dataset": "nips"},
    "reported": [{"label": "D-SGLD", "value": 0.91, "sd": 0.02, "select": {"method": "dsgld"}},
                 {"label": "SGLD", "value": 0.75, "select": {"method": "sgld"}}]}])


def test_a_reported_number_is_put_beside_the_results_value_and_interval():
    assert paper_view.workbench_value(RESULT, TABLE, TABLE.reported[0]) == \
        pytest.approx((0.9, 0.89, 0.91))
    assert paper_view.workbench_value(RESULT, TABLE, TABLE.reported[1]) == \
        pytest.approx((0.7, 0.69, 0.71))
    rows = paper_view.paper_rows((TABLE,), VERDICTS, RESULT)
    assert [r["paper"] for r in rows] == ["Accuracy on NIPS: D-SGLD 0.91 ± 0.02",
                                          "Accuracy on NIPS: SGLD 0.75"]
    assert rows[0]["workbench"] == "0.9 [0.89, 0.91] (accuracy at dataset = nips, method = dsgld)"
    assert rows[1]["workbench"].startswith("0.7 [0.69, 0.71]")
    assert {r["section"] for r in rows} == {"a paper §4, Table 1"}
    assert {r["verdicts"] for r in rows} == {"1 holds; 1 violated"}


def test_a_value_the_result_lacks_is_said_not_guessed():
    def measured(**change):
        entry = PaperEntry.from_table({
            "section": "s", "claim": "c", "checks": [], "variable": "accuracy",
            "reported": [{"label": "x", "value": 1.0, "select": {"method": "dsgld"}}],
            "select": {"dataset": "nips"}, **change})
        return paper_view.paper_rows((entry,), [], RESULT)[0]["workbench"]

    assert measured().startswith("0.9 [")  # control: the full selection is found
    assert measured(variable="perplexity") == \
        "not in this result: the result has no variable perplexity"
    assert "has no coordinate" in measured(select={"dataset": "enron"})
    assert "has no dim corpus" in measured(select={"corpus": "nips"})
    assert measured(select={}) == \
        "not in this result: accuracy: select a coordinate of dataset"
    # a variable without an interval: the value alone
    loss = PaperEntry.from_table({"section": "s", "claim": "c", "checks": [],
                                  "variable": "loss", "reported": [{"label": "x", "value": 1}]})
    with pytest.raises(KeyError, match="select a coordinate of method"):
        paper_view.workbench_value(RESULT, loss, loss.reported[0])
    value, lower, upper = paper_view.workbench_value(
        RESULT, loss, PaperEntry.from_table({
            "section": "s", "claim": "c", "checks": [], "variable": "loss",
            "reported": [{"label": "x", "value": 1, "select": {"method": "sgld"}}]}).reported[0])
    assert value == 2.0 and np.isnan(lower) and np.isnan(upper)


def test_claims_are_matched_to_verdicts_and_an_unchecked_claim_says_so():
    claim = PaperEntry("seed 001 §5.1", "it scales", ("speed-up/*", "oracle/a", "time/*"))
    unchecked = PaperEntry("seed 001 §5.2", "CIFAR-10 is worse", (), note="no CIFAR-10")
    rows = paper_view.paper_rows((claim, unchecked), VERDICTS, RESULT)
    assert rows == [
        {"section": "seed 001 §5.1", "paper": "it scales", "workbench": "",
         "verdicts": "1 holds; 1 inconclusive; not in this result: time/*", "note": ""},
        {"section": "seed 001 §5.2", "paper": "CIFAR-10 is worse", "workbench": "",
         "verdicts": paper_view.NO_CHECK, "note": "no CIFAR-10"}]
    assert paper_view.NO_CHECK == "no check compares this claim"
    named = paper_view.paper_verdict_rows((claim, unchecked), VERDICTS)
    # in the result's order, each once; an unchecked claim names none
    assert [(r["check"], r["verdict"]) for r in named] == [("oracle/a", HOLDS),
                                                          ("speed-up/slope", INCONCLUSIVE)]
    assert named[0]["reason"] == "because" and named[0]["claim"] == "it scales"
    assert len(named[1]["reason"]) == paper_view.REASON_LENGTH and named[1]["reason"][-1] == "…"
    # negative control: a name is matched whole, not as a prefix
    assert paper_view.matching(PaperEntry("s", "c", ("oracle",)), VERDICTS) == []
    paraphrased = PaperEntry("s", "c", (), paraphrase=True)
    assert paper_view.paper_rows((paraphrased,), [], RESULT)[0]["paper"] == "c (paraphrased)"


def test_the_rows_of_a_stored_result(small_run):
    quick, _ = small_run
    dataset = read_netcdf(quick.path)
    declared = paper_view.declared(dataset)
    assert declared == experiments.get("stale-gaussian").paper and declared
    [row] = paper_view.paper_rows(declared, quick.verdicts, dataset)
    assert row["section"] == "seed 001 §5.1" and "same MSE" in row["paper"]
    compared = [v for v in quick.verdicts if v.check.startswith("invariance/mse/")]
    assert compared  # the claim is compared by the result's MSE invariance verdict
    assert row["verdicts"] == "; ".join(
        f"{n} {w}" for w in (HOLDS, VIOLATED, INCONCLUSIVE)
        if (n := sum(v.verdict == w for v in compared)))
    named = paper_view.paper_verdict_rows(declared, quick.verdicts)
    assert [(r["check"], r["verdict"]) for r in named] == [(v.check, v.verdict)
                                                           for v in compared]
    assert "declares nothing of its paper" in paper_view.none_declared("integrator-order")


def test_the_results_spread_is_put_beside_a_reported_sd_where_it_keeps_one():
    """``<variable>_sd`` (the spread over chains a paper's ± reports) is shown after the value;
    without it, or where it is not one number at the row, the value and interval alone."""
    with_sd = RESULT.assign(accuracy_sd=(("method", "dataset"),
                                         np.array([[0.05, 0.04], [0.03, 0.02]])))
    assert paper_view.measured_value(with_sd, TABLE, TABLE.reported[0]) == \
        "0.9 ± 0.05 [0.89, 0.91]"
    assert paper_view.measured_value(RESULT, TABLE, TABLE.reported[0]) == "0.9 [0.89, 0.91]"
    spread_by_method = RESULT.assign(accuracy_sd=("method", [0.05, 0.03]))
    assert paper_view.measured_value(spread_by_method, TABLE, TABLE.reported[1]) == \
        "0.7 ± 0.03 [0.69, 0.71]"
    assert paper_view.reported_value(TABLE.reported[0]) == "0.91 ± 0.02"
    assert paper_view.reported_value(TABLE.reported[1]) == "0.75"
