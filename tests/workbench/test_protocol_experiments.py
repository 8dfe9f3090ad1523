"""The protocol experiments (issue 16) on small configurations: refusal of bad configurations
by field, their verdicts, and a negative control for each check kind they add (an E₃ envelope
without the E₃ term, a rate against a too-shallow exponent, an oracle of the wrong protocol,
the protocols' MSE difference against its sign turned). Both are shipped study files (their
keys are the studies': ``n_iterations``, ``n_workers``; ``downpour-period``'s parts prefix
theirs: ``gaussian_n_iterations``)."""

import numpy as np
import pytest

from bounds import registry
from bounds.checks import envelope_check, fit_envelope, oracle_check, rate_check
from bounds.verdict import HOLDS, VIOLATED
from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.run.runner import run_experiment
from workbench.studies.protocol_judgements import envelope_fit, excess_samples, mse_difference
from workbench.systems.protocols.checks import oracle_checks

SMALL = {
    "downpour-period": {"gaussian_n_iterations": 500, "gaussian_n_replicates": 200,
                        "period": [1, 2, 4, 8], "workers": [1, 2, 4], **{
                            # the logistic part at its quick sizes
                            key: value for key, value in
                            experiments.get("downpour-period").quick.items()
                            if key.startswith("logistic_")}},
    "elastic-vs-downpour": {"n_iterations": 600, "n_replicates": 200, "period": [1, 2, 4]},
}


@pytest.fixture(scope="module")
def datasets():
    out = {}
    for name, overrides in SMALL.items():
        experiment = experiments.get(name)
        out[name] = run_experiment(experiment, experiment.configure(overrides), seed=7)
    return out


@pytest.mark.parametrize(("name", "overrides", "field"), [
    ("downpour-period", {"period": [0, 1]}, "period[0]"),
    ("downpour-period", {"period": [2, 2]}, "period"),
    ("downpour-period", {"workers": [0, 1, 2]}, "n_workers"),  # n_workers = "workers"
    ("downpour-period", {"workers": [2, 3, 4]}, "workers"),
    ("downpour-period", {"gaussian_step_size": 0.0}, "gaussian_step_size"),
    ("downpour-period", {"network_delay": -1.0}, "network_delay"),
    ("elastic-vs-downpour", {"coupling_strength": 1.5}, "coupling_strength"),
    ("elastic-vs-downpour", {"coupling_strength": -0.5}, "coupling_strength"),
    ("elastic-vs-downpour", {"n_workers": 0}, "n_workers"),
    ("elastic-vs-downpour", {"protocol": ["downpour", "asynchronous"]}, "protocol[1]"),
    ("elastic-vs-downpour", {"budget": "messages"}, "budget"),
])
def test_bad_configuration_names_the_field(name, overrides, field):
    with pytest.raises(InvalidParameter) as error:
        experiments.get(name).configure(overrides)
    assert error.value.field == field


def test_downpour_period_verdicts(datasets):
    verdicts = experiments.get("downpour-period").checks(datasets["downpour-period"])
    by_name = {v.check: v for v in verdicts}
    assert len(verdicts) == 3 * 12 + 2 + 4 + 3  # Gaussian half, then the logistic half
    oracle = [v for v in verdicts if v.kind == "oracle"]
    assert all(v.verdict == HOLDS for v in oracle), [v for v in oracle if v.verdict != HOLDS]
    assert by_name["envelope/downpour-e3/theta_squared"].verdict == HOLDS
    rate = by_name["rate/downpour-e3/theta_squared"]
    assert rate.verdict == HOLDS and 0.5 < rate.observed < 1.6  # excess grows, slower than x²


def gaussian_part(dataset, kind: str):
    """downpour-period's Gaussian part: its slice, its context and its ``kind`` check's
    options."""
    experiment = experiments.get("downpour-period")
    part = experiment.study.parts[0]
    own = experiment.part_dataset(dataset, part)
    options = next(c.options for c in part.study.checks if c.kind == kind)
    return own, experiment.experiments[part.name].context(own), options


def test_downpour_negative_controls(datasets):
    dataset = datasets["downpour-period"]
    # the standard bound B₀ has no E₃ term: fitted where π(P − 1) is small, it is constant
    # across the grid and the growing MSE of φ̂(θ²) rises above it
    fit = envelope_fit(*gaussian_part(dataset, "envelope"))
    standard = fit_envelope(registry.get("seed003-standard-b0").with_fixed_step(), fit.values,
                            fit.observed, ~fit.held_out)
    verdict = envelope_check("control/b0", standard, fit.values, fit.observed, fit.errors, 4.0,
                             fit.held_out, margin=0.1)
    assert verdict.verdict == VIOLATED
    # the excess MSE grows about linearly in π(P − 1): judged against exponent 0.5 it is
    # steeper than claimed
    own, ctx, options = gaussian_part(dataset, "rate")
    x, samples = excess_samples(own, ctx.dims, options, ctx.config)
    assert rate_check("control/rate", x, samples, 0.5, 4.0, generator(1, "control"),
                      paired=True, margin=0.1).verdict == VIOLATED
    # a point judged against another point's oracle (P = 4 against P = 1 at π = 8): the
    # staleness bias of φ̂(θ²) is detected
    final = dataset.isel(checkpoint=-1).sel(period=8)
    wrong = final.sel(workers=4).copy()
    wrong["exact_bias"] = final.sel(workers=1)["exact_bias"]
    verdicts = oracle_checks(wrong, "control", 4.0, 200)
    assert verdicts[2].verdict == VIOLATED


def test_downpour_period_figure(datasets, tmp_path):
    paths = experiments.get("downpour-period").figures(datasets["downpour-period"], tmp_path)
    assert all(p.stat().st_size > 10_000 for p in paths)
    assert np.all(datasets["downpour-period"]["messages"].isel(checkpoint=-1) == 2 * 500)


def test_elastic_vs_downpour_verdicts_and_budget(datasets):
    dataset = datasets["elastic-vs-downpour"]
    verdicts = experiments.get("elastic-vs-downpour").checks(dataset)
    assert len(verdicts) == 3 * 6 + 3
    assert all(v.verdict == HOLDS for v in verdicts), [v for v in verdicts if v.verdict != HOLDS]
    # same local steps and the same messages: L pushes against Lπ/P steps on P chains, but
    # the elastic round that ends the run sends nothing (it would change no sample): 2P fewer
    final = dataset["messages"].isel(checkpoint=-1)
    workers = experiments.get("elastic-vs-downpour").configure()["n_workers"]
    np.testing.assert_array_equal(final.sel(protocol="downpour") - final.sel(protocol="elastic"),
                                  2 * workers)


def test_too_short_elastic_runs_are_refused_by_field():
    """Elastic at downpour's budget runs n_iterations·π/P steps per chain: 10·1/8 = 1 at
    π = 1, fewer than the checkpoints, refused when configured, naming the point."""
    experiment = experiments.get("elastic-vs-downpour")
    with pytest.raises(InvalidParameter) as error:
        experiment.configure({"n_iterations": 10, "n_workers": 8})
    assert error.value.field == "n_checkpoints"
    assert "n_iterations, which is 1 at protocol = elastic, period = 1" in str(error.value)


def test_elastic_vs_downpour_negative_control(datasets):
    """At π = 1 the two protocols' MSEs differ by more than twice the Monte Carlo error; the
    measured difference judged against the protocols swapped (the exact difference with its
    sign turned) with no margin is violated. (The experiment's default margin, half a
    replicate's standard deviation, is wider than this difference at these sizes: the check
    there shows agreement, it does not rank the protocols.)"""
    observed, error, exact = mse_difference(datasets["elastic-vs-downpour"], "protocol",
                                            {"period": 1})
    assert abs(exact) > 2 * error
    verdict = oracle_check("control", observed, error, -exact, 4.0, margin=0.0)
    assert verdict.verdict == VIOLATED


def test_protocol_runs_store_diagnostics_with_every_chain_a_chain(datasets):
    """Downpour keeps the master's versions (one chain per replicate), elastic every worker's
    chain (4 per replicate). A longer period runs more local steps per push, so the master's
    draws span more Langevin time: their ESS rises and their KSD falls with the period at every
    worker count (seeded; the opposite order would fail both)."""
    downpour = datasets["downpour-period"]
    assert downpour["rhat"].dims == ("period", "workers", "test_function")
    assert downpour["ksd"].dims == ("period", "workers", "replicate")
    assert (downpour["diagnostic_chains"]
            == SMALL["downpour-period"]["gaussian_n_replicates"]).all()
    ess = downpour["ess_bulk"].sel(test_function="theta")
    assert (ess.diff("period") > 0).all()
    assert (downpour["ksd"].median("replicate").diff("period") < 0).all()
    elastic = datasets["elastic-vs-downpour"]
    chains = elastic["diagnostic_chains"].sel(protocol="elastic")
    assert (chains == SMALL["elastic-vs-downpour"]["n_replicates"]
            * experiments.get("elastic-vs-downpour").configure()["n_workers"]).all()
    assert np.isfinite(elastic["ksd"]).all()
