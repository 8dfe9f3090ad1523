"""The command line as a user types it."""

import json
import tomllib

import pytest
import xarray as xr

from bounds import registry
from bounds.verdict import INCONCLUSIVE
from workbench import experiments
from workbench.cli.main import main
from workbench.store.netcdf import read_netcdf

SMALL = ["--set", "staleness=[1, 5]", "--set", "base_iterations=100",
         "--set", "n_replicates=30", "--set", "n_checkpoints=5", "--set", "rate_staleness=[2]",
         "--set", "rate_iterations=[500, 1000, 2000]", "--set", "envelope_staleness=[1, 4]",
         "--set", "envelope_relative_step=[0.05, 0.1]",
         "--set", "envelope_iterations=[250, 500, 1000]", "--set", "bootstrap_resamples=200",
         "--quiet"]


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
    status = main(["check", "stale-gaussian", "--json", "--figures", "--out", str(tmp_path),
                   *SMALL])
    verdicts = json.loads(capsys.readouterr().out)
    assert {v["verdict"] for v in verdicts} <= {"holds", "violated", "inconclusive"}
    for v in verdicts:
        assert {"observed", "expected", "mc_error", "margin"} <= set(v)
    kinds = {v["kind"] for v in verdicts}
    assert {"oracle", "rate", "envelope", "invariance"} <= kinds
    assert (tmp_path / "stale-gaussian-bounds.png").stat().st_size > 0
    violated = any(v["verdict"] == "violated" for v in verdicts)
    assert status == (1 if violated else 0)


def test_check_draws_figures_only_when_asked_and_leaves_none_of_other_numbers(tmp_path):
    figures = ["stale-gaussian.png", "stale-gaussian-bounds.png"]
    run = ["--out", str(tmp_path), "--processes", "1", *SMALL]
    main(["check", "stale-gaussian", *run])
    assert (tmp_path / "stale-gaussian.nc").exists()
    assert not any((tmp_path / name).exists() for name in figures)
    main(["check", "stale-gaussian", "--figures", *run])
    assert all((tmp_path / name).stat().st_size > 0 for name in figures)
    main(["check", "stale-gaussian", *run])  # the same numbers: their figures stay
    assert all((tmp_path / name).exists() for name in figures)
    main(["check", "stale-gaussian", "--seed", "9", *run])  # other numbers: figures removed
    assert not any((tmp_path / name).exists() for name in figures)


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


def test_bounds_list_names_every_bound_with_its_provenance(capsys):
    assert main(["bounds", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(registry.names())
    theorem = next(line for line in out if line.startswith("seed001-theorem-3-mse"))
    assert "[recon] hypothesis under test" in theorem
    assert "[seed]" in next(line for line in out if line.startswith("seed003-downpour-mse"))


def test_bounds_show_renders_formula_provenance_source_optimum_and_rate(capsys):
    assert main(["bounds", "show", "seed001-theorem-3-mse", "seed002-theorem-1-dsgld"]) == 0
    out = capsys.readouterr().out
    for text in ("formula     C1/(L*h) + C2*M**2*h**2*τ**2 + C3*h**(2*K)",
                 "[recon] hypothesis under test", "Theorem 3; docs/math.md §2",
                 "K = 1: exact", "K = 2: dominant balance", "rate        L^(-2/3)",
                 "\\frac{{C_{1}}}{L h}", "∂/∂τ non-negative",
                 "boundary: the bound does not decrease with the step size",
                 "FAILS: Theorem 1 with one shard"):
        assert text in out, text


def test_bounds_show_json_and_unknown_names(capsys):
    assert main(["bounds", "show", "seed003-downpour-mse", "--json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert record["provenance"] == "seed" and record["analysis"]["optimum"]["rate"] == "-2/3"
    assert any(r["holds"] and "P = 1" in r["claim"] for r in record["relations"])
    assert main(["bounds", "show", "no-such-bound"]) == 2
    assert "seed001-theorem-3-mse" in capsys.readouterr().err


def test_check_all_prints_the_verdict_table_and_report_reuses_the_store(tmp_path, capsys,
                                                                         monkeypatch):
    from workbench import experiments

    # the registry narrowed to stale-gaussian keeps this test about the command, not the suite
    stale = experiments.get("stale-gaussian")
    monkeypatch.setattr(experiments, "EXPERIMENTS", {stale.name: stale})
    n_points = len(stale.points(stale.configure(quick=True)))
    status = main(["check", "--all", "--quick", "--processes", "2", "--out", str(tmp_path),
                   "--quiet", "--verbose"])
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["experiment", "check", "verdict", "margin"]
    rows = [line.split() for line in out.splitlines()[2:] if line.startswith("stale-gaussian")]
    n_checks = len(stale.checks(read_netcdf(tmp_path / "stale-gaussian.nc")))
    assert len(rows) == n_checks
    assert {row[2] for row in rows} <= {"holds", "violated", "inconclusive"}
    violated = any(row[2] == "violated" for row in rows)
    assert status == (1 if violated else 0)
    assert ("exit status 1" if violated else "exit status 0") in out.splitlines()[-1]

    combined = tmp_path / "stale-gaussian.nc"
    garbled = bytearray(combined.read_bytes())
    middle = len(garbled) // 2
    garbled[middle - 2048:middle + 2048] = bytes(4096)  # damaged: report rebuilds it
    combined.write_bytes(bytes(garbled))
    assert main(["report", "--quick", "--processes", "1", "--out", str(tmp_path),
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert f"workbench: {combined}: " in captured.err and "rebuilt from the store" in captured.err
    assert f"{n_points} from the store, 0 computed" in captured.err  # nothing recomputed
    read_netcdf(combined)  # verified again
    page = (tmp_path / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 2  # both figures, embedded
    assert "src=\"http" not in page and "<link" not in page  # self-contained
    for row in rows:
        assert f"<td>{row[1]}</td>" in page
    assert "invariance/mse/theta_squared" in page and "Per sweep point" in page


def test_check_prints_a_summary_first_and_every_verdict_with_verbose(tmp_path, capsys):
    """By default one row per experiment, the violated checks one line each, the inconclusive
    ones counted with the command that lists them; --verbose prints every verdict, and that
    command reruns nothing (the points come from the store)."""
    run = ["--quick", "--processes", "1", "--quiet", "--out", str(tmp_path), "--seed", "5"]
    status = main(["check", "stale-gaussian", *run])
    out = capsys.readouterr().out.splitlines()
    verdicts = experiments.get("stale-gaussian").checks(read_netcdf(
        tmp_path / "stale-gaussian.nc"))
    counts = {kind: sum(v.verdict == kind for v in verdicts)
              for kind in ("holds", "violated", "inconclusive")}
    assert out[0].split() == ["experiment", "checks", "holds", "violated", "inconclusive",
                              "seconds"]
    assert out[2].split()[:5] == ["stale-gaussian", str(len(verdicts)), str(counts["holds"]),
                                  str(counts["violated"]), str(counts["inconclusive"])]
    violated = [line for line in out if line.startswith("  stale-gaussian ") and
                "beyond the margin" in line]
    assert len(violated) == counts["violated"]
    assert out[-1].startswith(f"{counts['holds']} holds, {counts['violated']} violated")
    assert status == (1 if counts["violated"] else 0)
    assert len(out) < 10 + counts["violated"]
    if counts["inconclusive"]:
        command = next(line for line in out if line.startswith(
            f"  stale-gaussian {counts['inconclusive']}: "))
        argv = command.split(": ", 1)[1].split()[2:]
        assert argv[-1] == "--verbose" and "--seed" in argv and "--quick" in argv
        status = main(["check", *argv, "--processes", "1", "--quiet"])
        captured = capsys.readouterr()
        assert "0 computed" in captured.err  # read from the store
        printed = [line for line in captured.out.splitlines()
                   if line.split()[:1] in (["holds"], ["violated"], ["inconclusive"])]
        assert len(printed) == len(verdicts)


@pytest.mark.parametrize("looks", [[], ["--until-decided", "--budget", "1"]])
def test_check_of_several_names_checks_them_together_as_all_does(looks, tmp_path, capsys):
    """``check A B``: both run, one summary row each and one total line; with looks, both
    are planned together within one budget (a second: look 1 only) and every undecided
    check says why."""
    names = ["dsgld-coupling", "dsgld-trajectory"]
    status = main(["check", *names, "--quick", "--processes", "1", "--quiet",
                   "--out", str(tmp_path), *looks])
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[2:4]] == names
    assert out[-1].startswith("2 experiment(s), ") and status in (0, 1)
    assert all((tmp_path / f"{name}.nc").exists() for name in names)
    assert ("Undecided when the looks stopped, and why:" in out) == bool(looks)


@pytest.mark.parametrize("argv, field", [
    (["check", "--all", "--set", "n_replicates=10"], "--set"),
    (["check", "stale-gaussian", "--all"], "name"),
    (["check"], "name"),
    (["check", "stale-gaussian", "stale-gaussian"], "names an experiment twice"),
    (["check", "stale-gaussian", "mine.toml"], "check a study file on its own"),
    (["check", "stale-gaussian", "dsgld-coupling", "--set", "n_replicates=10"], "--set"),
    (["check", "stale-gaussian", "no-such-experiment"], "no-such-experiment"),
    (["run", "stale-gaussian", "--processes", "0"], "processes"),
    (["run", "stale-gaussian", "--processes", "100000"], "processes"),
    (["run", "stale-gaussian", "--seed", "99999999999999999999999999"], "--seed"),
    (["run", "stale-gaussian", "--seed", "-1"], "--seed"),
    (["run", "stale-gaussian", "--scheduler", "garbage"], "--scheduler"),
    (["run", "stale-gaussian", "--scheduler", "tcp://host:99999"], "--scheduler"),
    (["run", "stale-gaussian", "--connect-timeout", "0"], "connect_timeout"),
    (["run", "stale-gaussian", "--memory-budget", "lots"], "memory_budget"),
    (["run", "stale-gaussian", "--memory-budget", "0"], "memory_budget"),
    (["check", "--all", "--memory-budget", "12 parsecs"], "memory_budget"),
    (["check", "--all", "--budget", "10m"], "--budget"),  # without --until-decided
    (["check", "--all", "--until-decided", "--budget", "10 weeks"], "--budget"),
    (["check", "--all", "--until-decided", "--budget", "0"], "--budget"),
    (["check", "stale-gaussian", "--until-decided", "--once"], "--once"),
    (["check", "stale-gaussian", "--once", "--budget", "1m"], "--budget"),
    (["run", "stale-gaussian", "--set", "true_mean=nan"], "true_mean"),
    (["run", "stale-gaussian", "--set", "n_replicates=1e30"], "n_replicates"),
    (["dashboard", "--port", "70000"], "--port"),
    (["dashboard", "--address", "not an address"], "--address"),
    (["store", "verify", "--out", "no-such-directory"], "--out"),
    (["run", "stale-gaussian", "--out", "a\x00b"], "--out"),
    (["store", "verify", "--out", "a\x00b"], "--out"),
    (["dashboard", "--results", "a\x00b"], "--results"),
])
def test_bad_check_all_and_executor_options_are_refused(argv, field, capsys):
    assert main(argv) == 2
    assert field in capsys.readouterr().err


@pytest.mark.parametrize("processes", ["1", "2"])
def test_the_memory_budget_reaches_every_task(processes, tmp_path, capsys):
    # 256 KiB holds a stale-gaussian point's results (so the plan passes) but not the
    # engine's working arrays: wherever its tasks run, they are refused before they start,
    # with what they would need; without the flag the same run succeeds
    argv = ["run", "stale-gaussian", "--quick", "--quiet", "--set", "staleness=[2]",
            "--processes", processes, "--out", str(tmp_path)]
    assert main([*argv, "--memory-budget", "256KiB"]) == 2
    error = capsys.readouterr().err
    assert "memory_budget = 262144 is invalid: is too small for this run" in error
    assert main([*argv, "--memory-budget", "0.5GiB"]) == 0


def test_a_plan_whose_results_exceed_the_budget_is_refused_before_any_task(tmp_path, capsys):
    # 1 KiB cannot hold even the results: the plan is refused in this process, before the
    # pool starts or the store is touched (negative control above: 256 KiB passes the plan)
    argv = ["run", "stale-gaussian", "--quick", "--quiet", "--set", "staleness=[2]",
            "--processes", "2", "--out", str(tmp_path / "out")]
    assert main([*argv, "--memory-budget", "1KiB"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "stale-gaussian plan" in error[0] and "memory budget" in error[0]
    assert not (tmp_path / "out" / "store").exists()


def test_executor_options_are_exclusive(capsys):
    with pytest.raises(SystemExit) as error:
        main(["run", "stale-gaussian", "--processes", "2", "--dask-local", "2"])
    assert error.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_an_experiment_that_fails_is_an_error_row_and_exit_status_3(tmp_path, monkeypatch,
                                                                     capsys):
    from workbench import experiments
    from workbench.run.experiment import Experiment

    class Broken(Experiment):
        name = "broken"
        summary = "raises while listing its points"
        sweep_dims = ("x",)

        def points(self, config):
            raise RuntimeError("no grid today")

    monkeypatch.setattr(experiments, "EXPERIMENTS", {"broken": Broken()})
    assert main(["check", "--all", "--out", str(tmp_path), "--processes", "1"]) == 3
    captured = capsys.readouterr()
    assert captured.out.splitlines()[2].split()[:5] == ["broken", "failed", "0", "0", "0"]
    assert "Failed to run:" in captured.out and "no grid today" in captured.out
    assert "no grid today" in captured.err and "exit status 3" in captured.out
    assert main(["check", "--all", "--out", str(tmp_path), "--processes", "1",
                 "--verbose"]) == 3
    assert capsys.readouterr().out.splitlines()[2].split() == ["broken", "(run", "failed)",
                                                              "error"]
    assert main(["report", "--out", str(tmp_path), "--processes", "1"]) == 3
    assert "no grid today" in (tmp_path / "report.html").read_text()


def test_run_resumes_from_the_store_unless_told_to_recompute(tmp_path, capsys):
    from workbench import experiments
    from workbench.core.parameters import parse_assignment

    stale = experiments.get("stale-gaussian")
    overrides = dict(parse_assignment(a) for a in SMALL[1::2] if "=" in a)
    n = len(stale.points(stale.configure(overrides)))
    argv = ["run", "stale-gaussian", "--out", str(tmp_path), "--processes", "1", *SMALL]
    assert main(argv) == 0
    assert f"0 from the store, {n} computed" in capsys.readouterr().err
    assert main(argv) == 0
    assert f"{n} from the store, 0 computed" in capsys.readouterr().err
    assert main([*argv, "--recompute"]) == 0
    assert f"0 from the store, {n} computed" in capsys.readouterr().err
    manifest = (tmp_path / "store" / "stale-gaussian" / "manifest.jsonl").read_text()
    assert len(manifest.splitlines()) == 2 * n  # every point recorded twice


def test_a_sampler_that_diverges_everywhere_is_a_violated_finding(tmp_path, capsys):
    """Step ×4 (C = 0.02): every replicate diverges at every τ. That is a finding — exit 1
    with violated oracle checks naming the divergence — never an inconclusive exit 0."""
    status = main(["check", "stale-gaussian", "--quick", "--quiet", "--out", str(tmp_path),
                   "--set", "step_size_constant=0.02", "--set", "staleness=[1,5]",
                   "--set", "designs=false", "--verbose"])
    out = capsys.readouterr().out
    assert status == 1
    findings = [line for line in out.splitlines()
                if line.startswith("violated") and "oracle/divergence/staleness=" in line]
    assert len(findings) == 2
    assert "100 of 100 replicates diverged, the first at sample" in out


def test_scheduler_addresses_are_read_as_tcp_host_port():
    from workbench.run.executors import scheduler_address

    assert scheduler_address("localhost:8786") == "tcp://localhost:8786"
    assert scheduler_address("tcp://10.0.0.2:8786") == "tcp://10.0.0.2:8786"
    assert scheduler_address("tcp://[::1]:8786") == "tcp://[::1]:8786"


def test_an_unreachable_scheduler_is_named_within_the_connect_timeout(tmp_path, capsys):
    import time

    started = time.monotonic()
    assert main(["run", "stale-gaussian", "--scheduler", "127.0.0.1:1", "--connect-timeout",
                 "0.5", "--out", str(tmp_path)]) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert "--scheduler = 'tcp://127.0.0.1:1'" in err and "0.5 s" in err


def test_the_dashboard_warns_when_it_is_not_on_this_machine_only():
    from workbench.cli.dashboard import exposure_warning

    for address in ("127.0.0.1", "::1", "localhost"):
        assert exposure_warning(address) == ""
    for address in ("0.0.0.0", "192.168.1.5", "example.org"):
        assert "anyone who can reach that address" in exposure_warning(address)


def test_a_dask_local_run_writes_its_store_and_result_like_one_process(tmp_path):
    """With a distributed client open, xarray would take a cluster lock for each netCDF
    write; the store's in-memory writes must not (workbench.store.atomic.netcdf_bytes)."""
    argv = ["run", "stale-gaussian", "--seed", "3", "--quiet", *SMALL]
    assert main([*argv, "--dask-local", "1", "--out", str(tmp_path / "dask")]) == 0
    assert main([*argv, "--processes", "1", "--out", str(tmp_path / "one")]) == 0
    dask, one = (read_netcdf(tmp_path / name / "stale-gaussian.nc") for name in ("dask", "one"))
    assert dask.drop_attrs().identical(one.drop_attrs())


def test_until_decided_prints_its_rounds_and_what_stays_undecided(tmp_path, capsys):
    """stale-gaussian's quick run at τ = 1, 15 leaves an oracle variance check inconclusive at
    look 1; --until-decided runs it again at a later look, says so per round, judges with the
    look's share of the rates, and ends with the table of what is still undecided."""
    argv = ["check", "stale-gaussian", "--quick", "--quiet", "--out", str(tmp_path),
            "--set", "staleness=[1,15]", "--set", "designs=false", "--until-decided",
            "--budget", "5m", "--processes", "1"]
    status = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert status == 1  # the slope of the variance against τ is violated, as in a plain run
    rounds = [line for line in captured.err.splitlines() if line.startswith("round ")]
    assert rounds[0].startswith("round 1: ") and "next: stale-gaussian look " in rounds[0]
    assert len(rounds) >= 2
    verdicts = json.loads(captured.out)
    looks = {v["check"]: v["evidence"]["sequential"]["look"] for v in verdicts}
    assert max(looks.values()) > 1 and looks["oracle/theta/mean/staleness=1"] == 1
    # --json carries why each undecided check stayed so (the table is not printed)
    assert all(("why_undecided" in v["evidence"]["sequential"]) == (v["verdict"] == INCONCLUSIVE)
               for v in verdicts)
    late = next(v for v in verdicts if v["evidence"]["sequential"]["look"] > 1)
    assert late["evidence"]["sequential"]["replicates"]["n_replicates"] > 100
    last = max(v["evidence"]["sequential"]["replicates"]["n_replicates"] for v in verdicts)
    plain = ["check", "stale-gaussian", "--quick", "--quiet", "--out", str(tmp_path / "plain"),
             "--set", "staleness=[1,15]", "--set", "designs=false", "--processes", "1",
             "--set", f"n_replicates={last}"]
    assert main(plain) == 1
    capsys.readouterr()
    sequential = read_netcdf(tmp_path / "stale-gaussian.nc")
    assert sequential.sizes["replicate"] == last  # the last look is the plain run at its R
    xr.testing.assert_identical(sequential, read_netcdf(tmp_path / "plain" / "stale-gaussian.nc"))
    assert main(argv) in (0, 1)  # again, from the store: the summary and the table
    out = capsys.readouterr().out
    assert "Undecided when the looks stopped, and why:" in out
    assert "Inconclusive (the data cannot tell yet" not in out  # the table says it instead


def test_a_study_asking_for_looks_runs_them_unless_once(tmp_path, capsys):
    """``[study] until_decided = "2m"``: ``workbench check STUDY`` runs its looks by default
    within that budget (the user's staleness bound leaves checks inconclusive at look 1 of its
    quick run); ``--once`` judges the one look, and names itself in the verbose command."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "my-staleness-bound.toml"
    text = example.read_text().replace('name = "my-staleness-bound"\n',
                                       'name = "my-staleness-bound"\nuntil_decided = "2m"\n', 1)
    study = tmp_path / "looks.toml"
    study.write_text(text)
    argv = ["check", str(study), "--quick", "--processes", "1"]
    assert main([*argv, "--out", str(tmp_path / "looks")]) == 0
    captured = capsys.readouterr()
    rounds = [line for line in captured.err.splitlines() if line.startswith("round ")]
    assert rounds[0].startswith("round 1: ") and "s of the budget left; next: " in rounds[0]
    assert float(rounds[0].split("s, ")[1].split(" s of")[0]) > 60  # of the study's 120 s
    assert "Undecided when the looks stopped, and why:" in captured.out
    assert main([*argv, "--once", "--quiet", "--out", str(tmp_path / "once")]) == 0
    captured = capsys.readouterr()
    assert not [line for line in captured.err.splitlines() if line.startswith("round ")]
    assert " inconclusive; exit status 0" in captured.out
    assert f"--out {tmp_path / 'once'} --once --verbose" in captured.out


def test_a_closed_pipe_stops_the_command_quietly_with_status_141():
    """``workbench list | head -1``: the reader goes away before the list is written; the
    command stops with the status a shell gives a command a closed pipe stopped (128 +
    SIGPIPE), and says nothing (not a failed run with a traceback file)."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "workbench.cli.main", "list"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # long before the interpreter has started and written
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 141
    assert stderr == b""


def test_check_prints_the_table_a_paper_reports_beside_the_results_values(tmp_path, capsys):
    """fsgld-mlp's [[paper]] entry reports seed 002 Table 1: every row is printed with the
    paper's value ± sd beside the result's average_log_likelihood ± its sd over the chains and
    its interval; a study without a reported table prints none (stale-gaussian above)."""
    tiny = {"n_train": 600, "n_test": 200, "n_shards": 6, "hidden_sizes": "[4]",
            "surrogate_samples": 50, "surrogate_burn_in": 10, "surrogate_thin": 1,
            "burn_in": 40, "n_iterations": 80, "n_replicates": 3, "n_evaluations": 20,
            "n_checkpoints": 3, "step_per_row": "[0.09]"}
    sets = [arg for key, value in tiny.items() for arg in ("--set", f"{key}={value}")]
    main(["check", "fsgld-mlp", *sets, "--processes", "1", "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    table = out.index("seed 002 §5.3, Table 1: Average log-likelihood for MLPs learned with "
                      "DSGLD and FSGLD.")
    assert out[table + 1].split() == ["paper", "workbench", "(average_log_likelihood)"]
    dataset = read_netcdf(tmp_path / "fsgld-mlp.nc")
    at = {"estimator": "dsgld", "split": "test", "label_skew": 0.5, "step_per_row": 0.09}
    value = float(dataset["average_log_likelihood"].sel(at))
    spread = float(dataset["average_log_likelihood_sd"].sel(at))
    row = next(line for line in out[table:] if line.startswith("  DSGLD, test, non-IID"))
    assert f"-1.11 ± 0.31  {value:.4g} ± {spread:.2g} [" in row
    assert sum(line.startswith("  DSGLD, ") or line.startswith("  FSGLD, ")
               for line in out[table:]) == 8
    assert out[-1].split(";")[0].endswith("inconclusive")  # the totals stay last
