"""The registry of point kinds (:mod:`workbench.studies.point_kinds`): every shipped study and
example is of exactly one kind (the entries are exclusive, as the registry's first-match rule
assumes), every entry is used by one of them, and a kind added to the registry alone runs a
study's points and judges its checks, with no branch elsewhere (the negative control: without
the entry the same study runs as the Gaussian mean it is written as)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from bounds.verdict import HOLDS, Verdict
from workbench.run.runner import run_experiment
from workbench.studies import library, point_kinds
from workbench.studies.files import built_in, load, loads
from workbench.studies.parts_experiment import experiment_of
from workbench.studies.point_kinds import POINT_KINDS, PointKind, point_kind
from workbench.studies.schema import fields

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _studies():
    """Every shipped study and example, a study of parts as its parts."""
    studies = [built_in(name) for name in library.ORDER]
    studies += [load(path) for path in sorted(EXAMPLES.glob("*.toml"))]
    studies.append(load(EXAMPLES / "my-model" / "study.toml"))
    for study in studies:
        yield from ([part.study for part in study.parts] if hasattr(study, "parts")
                    else [study])


def _applying(config: dict) -> list[str]:
    catalogue = fields()

    def value(name):
        return config.get(name, catalogue[name].parameter.default)

    return [kind.name for kind in POINT_KINDS if kind.applies(value, config.keys())]


def test_every_shipped_study_is_of_exactly_one_kind_besides_the_gaussian_fallback():
    used = set()
    for study in _studies():
        config = experiment_of(study).configure(quick=True)
        applying = _applying(config)
        specific = [name for name in applying if name != "gaussian-mean"]
        assert len(specific) <= 1, (study.name, applying)
        assert point_kind(config).name == (specific or applying)[0]
        used.add(point_kind(config).name)
    # every entry runs some shipped study: the registry holds no kind nothing uses
    assert used == {kind.name for kind in POINT_KINDS}


TINY = """\
[study]
name = "tiny-registered"
[model]
kind = "gaussian-mean"
n_data = 50
[system]
kind = "constant"
staleness = 0
[sampler]
kind = "sgld"
step_size = 1e-3
[run]
n_iterations = 20
n_replicates = 4
n_checkpoints = 2
[[check]]
kind = "oracle"
"""


def test_a_kind_added_to_the_registry_alone_runs_the_points_and_judges_the_checks(monkeypatch):
    calls = []

    def run(experiment, config, point, seed):
        calls.append(("run", config["n_data"]))
        return xr.Dataset({"answer": ("replicate", np.full(config["n_replicates"], 42.0))})

    def judge(kind, dataset, ctx, options):
        calls.append(("judge", kind))
        return [Verdict(check=f"{kind}/answer", kind=kind, verdict=HOLDS,
                        observed=float(dataset["answer"].mean()), expected=42.0, mc_error=0.0,
                        margin=0.0, z_threshold=3.0, false_failure_rate=0.01)]

    module = types.ModuleType("registered_judgements")
    module.judge = judge
    monkeypatch.setitem(sys.modules, "registered_judgements", module)
    registered = PointKind("registered", lambda value, named: value("n_data") == 50, run,
                           "registered_judgements")
    monkeypatch.setattr(point_kinds, "POINT_KINDS", (registered, *POINT_KINDS))

    experiment = experiment_of(loads(TINY, "tiny.toml"))
    dataset = run_experiment(experiment, experiment.configure(), seed=1)
    verdicts = experiment.checks(dataset)
    assert calls == [("run", 50), ("judge", "oracle")]
    assert [(v.check, v.verdict, v.observed) for v in verdicts] == [("oracle/answer", HOLDS,
                                                                     42.0)]
    # negative control: another study of the same file is not of the registered kind
    other = experiment_of(loads(TINY.replace("n_data = 50", "n_data = 60"), "other.toml"))
    dataset = run_experiment(other, other.configure(), seed=1)
    assert "answer" not in dataset and calls == [("run", 50), ("judge", "oracle")]
    assert "oracle/theta/mean/" in {v.check for v in other.checks(dataset)}


@pytest.mark.parametrize("name", ["pooled-servers", "protocol-oracle", "paired-protocol"])
def test_a_marking_kind_names_itself_among_the_study_kinds_and_refuses_other_checks(name):
    kind = next(k for k in POINT_KINDS if k.name == name)
    assert kind.marks and kind.describes and kind.family
    study = next(s for s in _studies() if name in s.point_kinds)
    assert point_kind(experiment_of(study).configure(quick=True)) is kind
