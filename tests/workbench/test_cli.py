"""The command line as a user types it."""

import json
import tomllib

import pytest

from workbench.cli import main

SMALL = ["--set", "staleness=[1, 5]", "--set", "base_iterations=100",
         "--set", "n_replicates=30", "--set", "n_checkpoints=5", "--quiet"]


def test_list_names_every_experiment(capsys):
    assert main(["list"]) == 0
    assert "stale-gaussian" in capsys.readouterr().out


def test_show_prints_parseable_toml_with_overrides(capsys):
    assert main(["show", "stale-gaussian", "--quick", "--set", "staleness=[2, 3]"]) == 0
    config = tomllib.loads(capsys.readouterr().out)
    assert config["staleness"] == [2, 3]
    assert config["base_iterations"] == 300  # the quick value
    assert config["n_data"] == 1000


def test_run_writes_dataset_and_figure(tmp_path, capsys):
    assert main(["run", "stale-gaussian", "--out", str(tmp_path), "--seed", "3", *SMALL]) == 0
    assert (tmp_path / "stale-gaussian.nc").stat().st_size > 0
    assert (tmp_path / "stale-gaussian.png").stat().st_size > 0
    assert "wrote" in capsys.readouterr().out


def test_check_json_reports_verdicts_and_sets_the_exit_status(tmp_path, capsys):
    status = main(["check", "stale-gaussian", "--json", "--out", str(tmp_path), *SMALL])
    verdicts = json.loads(capsys.readouterr().out)
    assert {v["verdict"] for v in verdicts} <= {"holds", "violated", "inconclusive"}
    for v in verdicts:
        assert {"observed", "expected", "mc_error", "margin"} <= set(v)
    violated = any(v["verdict"] == "violated" for v in verdicts)
    assert status == (1 if violated else 0)


@pytest.mark.parametrize("assignment, field", [
    ("no_such_key=3", "no_such_key"),
    ("step_size_constant=0", "step_size_constant"),
    ("staleness=[1, -1]", "staleness[1]"),
])
def test_bad_set_values_fail_with_the_field_named(assignment, field, capsys):
    assert main(["run", "stale-gaussian", "--set", assignment]) == 2
    assert field in capsys.readouterr().err


def test_unknown_experiment_is_refused(capsys):
    assert main(["show", "no-such-experiment"]) == 2
    assert "stale-gaussian" in capsys.readouterr().err
