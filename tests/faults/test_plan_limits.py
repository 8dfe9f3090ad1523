"""Plans are sized before work: a run too large for its limits is refused at once, exit 2.

The inputs that used to start and then die (a MemoryError after climbing to gigabytes, an
xarray AlignmentError, a sweep of 100,000 values validated for a minute) are refused before
any point runs, with one line saying what the plan would need and which flag raises the limit
(:mod:`workbench.run.plan`). Negative controls: every built-in experiment's quick and full
plans pass the default limits, a plan within raised limits is accepted, and a large accepted
plan says its size before it starts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench import experiments
from workbench.cli.main import build_parser, check_arguments, main
from workbench.run.plan import MAX_POINTS, MAX_WORK, Limits, plan_limits, size_plan
from workbench.studies import grid

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my-staleness-bound.toml"


def one_error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(("assignment", "says"), [
    ("n_replicates=1000000000", "MiB of results in one point"),
    ("dim=100000000", "MiB of results in one point"),
    ("base_iterations=1000000000000", "replicate-updates"),
    ("n_checkpoints=100000000", "must be at most n_iterations"),
    ("n_draws=1000000000", "MiB of results in one point"),
])
def test_a_run_beyond_the_limits_is_refused_before_any_point(tmp_path, capsys, monkeypatch,
                                                             assignment, says):
    out = tmp_path / "out"
    assert main(["run", "stale-gaussian", "--quick", "--quiet", "--processes", "1",
                 "--out", str(out), "--set", assignment]) == 2
    line = one_error_line(capsys)
    assert says in line, line
    if says != "must be at most n_iterations":  # the others are the plan's own refusals
        assert "stale-gaussian plan" in line and re.search(r"raise --(max-work|memory-budget)",
                                                           line), line
    assert not (out / "store").exists()  # nothing ran, nothing was stored


def test_a_sweep_longer_than_max_points_is_refused_before_its_points_are_resolved(
        tmp_path, capsys, monkeypatch):
    text = EXAMPLE.read_text().replace("staleness = [1, 4, 16]",
                                       f"staleness = {list(range(1, 100_001))}")
    assert "staleness = [1, 2, 3," in text
    study = tmp_path / "huge.toml"
    study.write_text(text)

    def resolved(*args):
        raise AssertionError("a point was resolved before the plan was sized")

    monkeypatch.setattr(grid, "resolve", resolved)
    assert main(["check", str(study), "--quick", "--out", str(tmp_path / "out")]) == 2
    line = one_error_line(capsys)
    assert "[sweep] staleness" in line and "100,000 points" in line
    assert f"--max-points {MAX_POINTS:,}" in line


def test_max_points_raises_the_limit(tmp_path, capsys):
    text = EXAMPLE.read_text().replace("staleness = [1, 4, 16]",
                                       f"staleness = {list(range(1, 31))}")
    study = tmp_path / "thirty.toml"
    study.write_text(text)
    assert main(["show", str(study), "--max-points", "20"]) == 2
    assert "30 points" in one_error_line(capsys)
    assert main(["show", str(study), "--max-points", "1000"]) == 0  # negative control


def test_max_work_and_the_memory_budget_are_separate_limits(tmp_path, capsys):
    argv = ["run", "stale-gaussian", "--quick", "--quiet", "--processes", "1",
            "--out", str(tmp_path), "--set", "base_iterations=1000000000000"]
    assert main(argv) == 2
    assert "--max-work" in one_error_line(capsys)
    assert main([*argv, "--max-work", "1e30"]) == 2  # past the work limit: its schedule
    assert "MiB of results in one point" in one_error_line(capsys)


def test_every_built_in_plan_passes_the_default_limits():
    for name, experiment in experiments.EXPERIMENTS.items():
        for quick in (True, False):
            plan = size_plan(experiment, experiment.configure(quick=quick))
            assert 0 < plan.points <= MAX_POINTS and plan.work <= MAX_WORK, (name, plan)


def test_a_large_accepted_plan_says_its_size_before_it_starts(tmp_path, capsys):
    args = build_parser().parse_args(["run", "stale-gaussian", "--quick", "--out",
                                      str(tmp_path), "--set", "n_replicates=1000000"])
    with plan_limits(Limits()):
        check_arguments(args)
    line = one_error_line(capsys)
    assert line.startswith("stale-gaussian: plan of 21 points, 47,900,000,000 replicate-updates")
    args.quiet = True
    with plan_limits(Limits()):
        check_arguments(args)
    assert capsys.readouterr().err == ""  # --quiet: no size line
