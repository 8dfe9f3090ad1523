"""What ``downpour-period`` made the study layer say (seed 003, Li et al. 2019, Algorithm 1 and
its MSE bound C₁(E₁ + E₂ + E₃)): a study of parts sharing the sweep's points (``[study] points =
"shared"``), logistic regression with replicates paired across the sweep (``[run] start =
"laplace"``), a registered bound in its fixed-step form with its symbols named by sweep dims,
and checks of an excess over a ``baseline`` against an expression ``against`` of the sweep dims.
Each new key is refused, naming its line, where it cannot mean what it says; the shipped file is
the accepted form (its bit-for-bit test is in ``test_studies.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.studies.refusals import line_of, refused_when_read
from workbench.run.runner import run_experiment
from workbench.studies import library
from workbench.studies.document import StudyError
from workbench.studies.files import loads
from workbench.studies.parts_experiment import PartsExperiment

SHIPPED = library.path("downpour-period").read_text()
#: the shipped file as a researcher's own: no figure (the workbench's code)
TEXT = "\n".join(line for line in SHIPPED.splitlines() if not line.startswith("figure ="))
GAUSSIAN_RATE = 'name = "rate/downpour-e3/theta_squared"'


def _with(old: str, new: str, text: str = TEXT) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_the_shipped_file_reads_as_a_study_of_shared_points():
    study = loads(TEXT, "<test>")
    assert study.shared and [p.name for p in study.parts] == ["gaussian", "logistic"]
    assert study.streams(study.parts[0]) == "" and study.streams(study.parts[1]) == "logistic-"
    assert "paired-protocol" in study.parts[1].study.point_kinds
    assert "protocol-oracle" in study.parts[0].study.point_kinds
    bound = study.parts[0].study.bounds["downpour-e3"]
    assert bound.symbols == {"communication_period": "period", "n_workers": "workers"}
    assert "step_size" in {s.name for s in bound.bound.expression.free_symbols}  # fixed step


def test_shared_points_keep_the_sweep_dims_and_verdict_names_and_per_part_points_do_not():
    """Negative control of ``points = "shared"``: the same study with points of its own per
    part prefixes the logistic part's sweep dims and its verdicts, and keys its seeds by the
    part, so its Gaussian numbers differ."""
    small = {"period": [1, 2], "workers": [1, 2, 3], "gaussian_n_iterations": 60,
             "gaussian_n_replicates": 20, "gaussian_n_checkpoints": 4, "logistic_n_train": 120,
             "logistic_n_test": 60, "logistic_n_test_points": 30, "logistic_n_iterations": 30,
             "logistic_n_replicates": 4, "logistic_step_size": 1e-3,
             "logistic_reference_chains": 2, "logistic_reference_draws": 100,
             "logistic_reference_warmup": 50}
    runs = {}
    for points in ("shared", "per-part"):
        experiment = PartsExperiment(loads(_with('points = "shared"', f'points = "{points}"'),
                                           "<test>"))
        dataset = run_experiment(experiment, experiment.configure(small), seed=3)
        runs[points] = dataset, [v.check for v in experiment.checks(dataset)]
    shared, per_part = runs["shared"][0], runs["per-part"][0]
    assert shared["logistic_estimate"].dims == ("period", "workers", "logistic_replicate")
    assert "logistic_period" in per_part.dims and "logistic_period" not in shared.dims
    assert "rate/downpour-e3/log_loss" in runs["shared"][1]
    assert "logistic/rate/downpour-e3/log_loss" in runs["per-part"][1]
    assert not np.array_equal(shared["estimate"].values, per_part["estimate"].values)


HALVES = """\
[study]
name = "halves"
parts = ["gaussian", "logistic"]
points = "shared"

[constants]
workers = 1

[sweep]
workers = [1, 2]

[system]
kind = "downpour"
n_workers = "workers"

[sampler]
kind = "sgld"

[part.gaussian.model]
kind = "gaussian-mean"

[[part.gaussian.check]]
kind = "oracle"

[part.logistic.model]
kind = "logistic-regression"

[[part.logistic.check]]
kind = "ordering"
over = "workers"
test_function = "log_loss"
"""


def test_shared_points_are_refused_by_key_and_line():
    refused_when_read(_with('points = "shared"', 'points = "halves"'), "points =",
                      "per-part", "shared")
    # a later part whose runs do not name their streams by the part (a held-out point)
    refused_when_read(HALVES, "points =", "'logistic'", "start = \"laplace\"")
    loads(HALVES.replace('points = "shared"', 'points = "per-part"'), "<test>")


def test_points_is_refused_in_a_study_without_parts():
    text = """\
[study]
name = "one"
points = "shared"

[model]
kind = "gaussian-mean"
"""
    refused_when_read(text, "points =", "no parts")


PAIRED = """\
[study]
name = "paired"

[model]
kind = "logistic-regression"

[system]
kind = "asynchronous"

[sampler]
kind = "sgld"

[run]
start = "laplace"
"""


@pytest.mark.parametrize(("text", "needle", "words"), [
    (_with('start = "laplace"', 'start = "mode"'), "start =", ("scaled", "laplace")),
    (_with('n_replicates = 100', 'n_replicates = 100\nburn_in = 10'), "burn_in =",
     ('start = "laplace"',)),
    (PAIRED, 'kind = "asynchronous"', ("laplace", "downpour points")),
    (PAIRED.replace("asynchronous", "elastic"), 'kind = "elastic"', ("laplace",
                                                                     "downpour points")),
    (PAIRED.replace('kind = "sgld"', 'kind = "psgld"').replace("asynchronous", "downpour"),
     'kind = "psgld"', ("laplace", "sgld")),
])
def test_paired_starts_are_refused_by_key_and_line(text, needle, words):
    refused_when_read(text, needle, *words)


@pytest.mark.parametrize(("old", "new", "needle", "words"), [
    ('step = "fixed"', 'step = "decreasing"', "step =", ("as-registered", "fixed")),
    ('symbols = { communication_period = "period", n_workers = "workers" }',
     'symbols = { communication_period = "period", n_workers = "servers" }', "symbols =",
     ("sweep dim", "servers")),
    ('symbols = { communication_period = "period", n_workers = "workers" }',
     'symbols = { period = "period" }', "symbols =", ("not a symbol of the bound",)),
    ('registered = "seed003-downpour-mse"\nstep = "fixed"',
     'expression = "C1 * step_size**2"\nstep = "fixed"', "step =", ("registered",)),
])
def test_bound_step_and_symbols_are_refused_by_key_and_line(old, new, needle, words):
    refused_when_read(_with(old, new), needle, *words)


@pytest.mark.parametrize(("old", "new", "needle", "words"), [
    ('against = "period * (workers - 1)"\nenvelope_margin', 'against = "period * servers"\n'
     'envelope_margin', 'against = "period * servers"', ("servers", "sweep dim")),
    ('against = "period * (workers - 1)"\nenvelope_margin', 'against = "period * ("\n'
     'envelope_margin', 'against = "period * ("', ()),
    ("envelope_margin = 0.1", "envelope_margin = -1", "envelope_margin", ("> 0",)),
    (GAUSSIAN_RATE, GAUSSIAN_RATE.replace("name", "split = \"checkerboard\"\nname"), "split =",
     ("unknown key",)),
    ('baseline = { workers = 1 }\nexpected = 2.0\nrate_margin = 0.1\nname = "rate/downpour-e3/'
     'theta', 'baseline = { workers = 3 }\nexpected = 2.0\nrate_margin = 0.1\nname = "rate/'
     'downpour-e3/theta', "workers = 3", ("not among the values",)),
    ('baseline = { workers = 1 }\nexpected = 2.0\nrate_margin = 0.1\nname = "rate/downpour-e3/'
     'theta', 'baseline = 1\nexpected = 2.0\nrate_margin = 0.1\nname = "rate/downpour-e3/'
     'theta', "baseline = 1", ("one sweep dim",)),
    ('of = "excess"', 'of = "bias"', 'of = "bias"', ("excess", "deviation")),
    ('where = { workers = 1 }', 'where = { servers = 1 }', "where =", ("servers",)),
    ('kind = "reference"           # the synchronous', 'kind = "envelope"           # the sync',
     'kind = "envelope"           # the sync', ("start = \"laplace\"", "reference / rate")),
    ('kind = "oracle"              # bias', 'kind = "ordering"              # bias',
     'kind = "ordering"              # bias', ("protocols on the Gaussian mean",
                                               "oracle / envelope / rate")),
])
def test_protocol_check_options_are_refused_by_key_and_line(old, new, needle, words):
    refused_when_read(_with(old, new), needle, *words)


def test_a_rate_without_its_exponent_is_refused_at_its_table():
    """A key that is missing is named at the line of its ``[[check]]`` table."""
    text = _with('expected = 2.0\nrate_margin = 0.1\nname = "rate/downpour-e3/theta',
                 'rate_margin = 0.1\nname = "rate/downpour-e3/theta')
    with pytest.raises(StudyError) as caught:
        loads(text, "<test>")
    header = line_of(text, 'kind = "rate"                # excess MSE') - 1
    assert f"<test>:{header}: [[part.gaussian.check]] #3 expected:" in str(caught.value)


def test_a_baseline_dropped_by_set_is_refused_naming_the_dim():
    from simulators.validation import InvalidParameter

    experiment = PartsExperiment(loads(TEXT, "<test>"))
    with pytest.raises(InvalidParameter) as error:
        experiment.configure({"workers": [2, 4]})
    assert error.value.field == "workers" and "workers = 1" in str(error.value)
