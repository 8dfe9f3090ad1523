"""The ``workbench`` command line: list, show, run, check and report experiments; browse the
bounds (``workbench bounds``, :mod:`workbench.cli.bounds`); start the dashboard (``workbench
dashboard``, :mod:`workbench.cli.dashboard`); verify and repair a result store (``workbench
store verify``, :mod:`workbench.cli.store`).

Exit status: 0 when every check holds or is inconclusive, 1 when some check is violated (a
finding about the theory, not a failure of the run), 2 for invalid input, 3 when a run failed
(an experiment raised, or a file could not be written: disk full, file-size limit, read-only
or immutable directory, ``--out`` included), 130 when interrupted (Ctrl-C), 141, silently,
when the reader of its output closed the pipe (``workbench list | head -1``). Any other
exception is a failed run too (:mod:`workbench.cli.failure`): exit status 3 and one line
naming the error and where its traceback was written (``<out>/workbench-error.log``, or a file
in the system temp dir), never Python's own status 1, which would read as a finding.

Every argument is checked at the boundary (:func:`check_arguments`) before any work starts, so
a bad value is refused with exit status 2 and one line naming the field, the value and the
accepted range, never a traceback: the experiment name and ``--set`` values, the seed (an int64
attribute of every result, so 0 to 2**63 - 1), the executor options (``--scheduler`` must be
``host:port`` or ``tcp://host:port``), and ``--out``, which must be a directory (one where
no file can be created is a failed write, exit status 3).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from simulators.validation import InvalidParameter, byte_size, duration, integer
from workbench import experiments
from workbench.cli import bounds as cli_bounds
from workbench.cli import dashboard as cli_dashboard
from workbench.cli import store as cli_store
from workbench.core.parameters import parse_assignment, to_toml
from workbench.run.executors import CONNECT_TIMEOUT, available_cores, check_options, open_workers
from workbench.run.plan import MAX_POINTS, MAX_WORK, Limits, plan_limits
from workbench.store.atomic import WriteFailed, require_writable
from workbench.studies.document import StudyError
from workbench.studies.user_code import CodeNotAllowed

if TYPE_CHECKING:
    from bounds.verdict import Verdict

# Verdicts, the runner, the suite and the report import scipy.stats, sympy, xarray and
# matplotlib (seconds): the commands that run experiments import them where they need them,
# so that --help, list and argument errors answer at once (issue 15).

DEFAULT_SEED = 2016
DEFAULT_OUT = Path("results")
DEFAULT_BUDGET = "10m"


EXIT_VIOLATED, EXIT_INVALID, EXIT_FAILED, EXIT_INTERRUPTED = 1, 2, 3, 130
#: the reader of stdout went away (``workbench list | head -1``): 128 + SIGPIPE, the status a
#: shell reports for a command that a closed pipe stopped
EXIT_PIPE_CLOSED = 141


def _add_sweep_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="the small, fast configuration")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"directory for results, figures and the result store "
                             f"<out>/store (default {DEFAULT_OUT}/)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"root seed (default {DEFAULT_SEED})")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--processes", type=int, default=None, metavar="N",
                       help="run sweep points in a pool of N processes (default: the "
                            f"number of cores, here {available_cores()}; 1 runs in this "
                            "process)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run sweep points on the Dask cluster at ADDRESS "
                            "(tcp://host:port)")
    where.add_argument("--dask-local", type=int, metavar="N",
                       help="start a Dask LocalCluster of N worker processes and run there")
    parser.add_argument("--connect-timeout", type=float, default=CONNECT_TIMEOUT,
                        metavar="SECONDS",
                        help=f"how long to wait for the --scheduler to answer (default "
                             f"{CONNECT_TIMEOUT:g} s)")
    parser.add_argument("--memory-budget", metavar="SIZE",
                        help="most memory one replay may hold, e.g. 512MiB or 2GB (default "
                             "1GiB); a point that cannot fit fails before it starts, saying "
                             "what it needs; results do not depend on it")
    parser.add_argument("--recompute", action="store_true",
                        help="ignore points already in the result store and recompute them")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _add_plan_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-points", type=int, default=MAX_POINTS, metavar="N",
                        help=f"refuse a plan of more sweep points (default {MAX_POINTS:,})")
    parser.add_argument("--max-work", type=float, default=MAX_WORK, metavar="N",
                        help=f"refuse a plan of more replicate-updates in all (default "
                             f"{MAX_WORK:.0e})")


def _add_code_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-code", action="store_true",
                        help="run the Python a study file names (its own model): running such "
                             "a study runs that code with your rights")


def _add_set_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", dest="assignments", action="append", default=[],
                        metavar="KEY=VALUE", help="override a parameter (TOML value)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Distributed and stale-gradient SG-MCMC: run experiments and check them "
                    "against exact oracles and the papers' claims.",
        epilog="Exit status: 0 no check violated; 1 some check violated (a finding, not an "
               "error); 2 invalid input; 3 an experiment failed to run.")
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="list the experiments, one line each")
    listing.add_argument("--markdown", action="store_true",
                         help="as a Markdown table (the one in docs/experiments.md)")
    show = sub.add_parser("show", help="an experiment's parameters and defaults, as TOML")
    show.add_argument("name", help="experiment name or a study file (FILE.toml)")
    show.add_argument("--quick", action="store_true", help="show the quick configuration")
    _add_set_option(show)
    _add_plan_options(show)
    run = sub.add_parser("run", help="run an experiment; write its Dataset and figures")
    run.add_argument("name", help="experiment name (see `workbench list`) or a study file "
                                  "(FILE.toml)")
    _add_sweep_options(run)
    _add_code_option(run)
    _add_set_option(run)
    _add_plan_options(run)
    check = sub.add_parser("check", help="run an experiment (or --all) and print its verdicts")
    check.add_argument("name", nargs="*", help="experiment name (see `workbench list`) or a "
                                               "study file (FILE.toml); several names are "
                                               "checked together, with the summary table of "
                                               "--all")
    check.add_argument("--all", action="store_true",
                       help="every registered experiment, with a summary table of verdicts")
    _add_sweep_options(check)
    _add_code_option(check)
    _add_set_option(check)
    _add_plan_options(check)
    check.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    check.add_argument("--verbose", action="store_true",
                       help="print every verdict with its numbers and why it is violated or "
                            "inconclusive (by default: one row per experiment, then the "
                            "violated checks, then the inconclusive ones counted)")
    check.add_argument("--until-decided", action="store_true",
                       help="judge again with 2, 4, 8, ... times the replicates, look after "
                            "look, until every check is decided or the --budget is spent; the "
                            "error rates are spent across the looks (docs/verdicts.md)")
    check.add_argument("--budget", metavar="DURATION",
                       help="wall-clock limit of the looks for the whole command, e.g. 600, "
                            "90s, 10m or 1.5h (default: the study's until_decided, else 10m)")
    check.add_argument("--once", action="store_true",
                       help="judge one look at the configured replicates, also for a study "
                            "whose until_decided asks for looks")
    check.add_argument("--figures", action="store_true",
                       help="also draw the figures, as run and report do (by default check "
                            "writes the results and judges them without drawing)")
    report = sub.add_parser("report", help="run experiments and write a self-contained HTML "
                                           "report (<out>/report.html)")
    report.add_argument("names", nargs="*", metavar="name",
                        help="experiments to include (default: all)")
    _add_sweep_options(report)
    _add_plan_options(report)
    cli_bounds.add_parser(sub)
    cli_dashboard.add_parser(sub)
    cli_store.add_parser(sub)
    return parser


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse any invalid argument before work starts (module docstring); normalizes ``args``
    and adds ``args.experiment`` and ``args.config`` for a command naming one experiment."""
    if args.command == "dashboard":
        cli_dashboard.check_arguments(args)
    if args.command == "store":
        cli_store.check_arguments(args)
    if args.command not in ("show", "run", "check", "report"):
        return
    if args.command == "check":
        _check_names(args)
    if args.command == "report" or args.command == "check" and args.names:
        _selected(args.names)
    elif not getattr(args, "all", False):
        args.experiment = experiments.get(args.name)
        args.overrides = dict(parse_assignment(text) for text in args.assignments)
        args.config = args.experiment.configure(args.overrides, quick=args.quick)
    if args.command == "check":
        _looks(args)
    if args.command == "show":
        return
    from workbench.run.runner import MAX_SEED

    args.seed = integer("--seed", args.seed, minimum=0, maximum=MAX_SEED)
    if getattr(args, "experiment", None) is not None and hasattr(args.experiment, "check_code"):
        from workbench.studies.user_code import require_allowed

        require_allowed(args.experiment.name, args.name, args.config, args.allow_code)
        args.experiment.check_code(args.config, args.seed)
    args.executor = check_options(args.processes, args.scheduler, args.dask_local,
                                  args.connect_timeout, args.memory_budget)
    args.out = require_writable("--out", args.out)
    _size_plans(args)


def _check_names(args: argparse.Namespace) -> None:
    """``check``'s names: one (``args.name``, ``args.names`` empty), several (``args.names``,
    ``args.name`` None: checked together as ``--all`` checks every one) or none with
    ``--all``; refuses a name with ``--all``, a name twice, a study file among several, and
    ``--set`` with several."""
    names = list(args.name)
    if args.once and args.until_decided:
        raise InvalidParameter("--once", True, "judges one look; leave out --until-decided")
    if args.all and names:
        raise InvalidParameter("name", " ".join(names), "must be left out with --all")
    if not args.all and not names:
        raise InvalidParameter("name", None, "name an experiment or pass --all")
    if len(set(names)) < len(names):
        raise InvalidParameter("name", " ".join(names), "names an experiment twice")
    args.name, args.names = (names[0], []) if len(names) == 1 else (None, names)
    if len(names) > 1 and any(str(name).endswith(".toml") for name in names):
        raise InvalidParameter("name", " ".join(names), "check a study file on its own")
    if (args.all or args.names) and args.assignments:
        raise InvalidParameter("--set", args.assignments,
                               "applies to one experiment; use it with one name")


def _looks(args: argparse.Namespace) -> None:
    """Whether ``check`` judges look after look, and within what budget: with
    ``--until-decided``, or where the one experiment it checks asks for looks (a study's
    ``[study] until_decided``, its budget the default) unless ``--once``; ``--budget`` applies
    to looks only."""
    asked = None if args.all or args.names or args.once else args.experiment.until_decided
    args.until_decided = args.until_decided or asked is not None
    if args.budget is not None and not args.until_decided:
        raise InvalidParameter("--budget", args.budget, "applies to looks only: pass "
                               "--until-decided, or check a study with until_decided")
    if args.until_decided:
        args.budget = duration("--budget", args.budget if args.budget is not None
                               else asked if asked is not None else DEFAULT_BUDGET)


def _size_plans(args: argparse.Namespace) -> None:
    """Size the plan of every experiment the command runs before any of them starts, refusing
    one beyond the limits (:mod:`workbench.run.plan`); a large accepted plan says its size."""
    from workbench.run.plan import size_plan

    integer("--max-points", args.max_points, minimum=1)
    if not args.max_work >= 1:
        raise InvalidParameter("--max-work", args.max_work, "must be at least 1")
    several = args.command == "report" or getattr(args, "all", False) or bool(
        getattr(args, "names", None))
    if several:
        runs = [(e, None) for e in _selected(getattr(args, "names", []))]
    else:
        runs = [(args.experiment, args.config)]
    for experiment, config in runs:
        try:
            plan = size_plan(experiment, config or experiment.configure(quick=args.quick))
        except InvalidParameter:
            raise
        except Exception:  # the run reports it as the experiment's error row
            if not several:
                raise
            continue
        if plan.large and not args.quiet:
            print(plan.describe(), file=sys.stderr, flush=True)


def _workers(args):
    from workbench.run.main_job import SWEEP_MODULES

    return open_workers(**args.executor, preload=SWEEP_MODULES)


def _run(args, stream):
    from workbench.run.main_job import run_one

    experiment, config = args.experiment, args.config
    with _workers(args) as workers:
        outcome = run_one(experiment, config, args.seed, args.out, workers,
                          recompute=args.recompute, show_progress=not args.quiet,
                          judge=args.command == "check", figures=_draws_figures(args))
    print(f"{experiment.name}: {outcome.sweep.describe()}", file=sys.stderr)
    for path in outcome.paths:
        print(f"wrote {path}", file=stream)
    return outcome


def _draws_figures(args) -> bool:
    """run and report draw figures; check only when asked (--figures)."""
    return args.command != "check" or args.figures


def _selected(names: list[str]) -> list[experiments.Experiment]:
    return [experiments.get(n) for n in names] if names else list(experiments.EXPERIMENTS.values())


def _run_all(args, names: list[str]):
    from workbench.run.main_job import run_all

    with _workers(args) as workers:
        return run_all(_selected(names), args.quick, args.seed, args.out, workers,
                       recompute=args.recompute, show_progress=not args.quiet,
                       figures=_draws_figures(args))


def _check_until_decided(args) -> int:
    """``check [NAME ... | --all] --until-decided``: the looks of
    :mod:`workbench.run.until_decided`, then the usual summary and, for every check still
    undecided, why."""
    from workbench.run.until_decided import until_decided

    if args.all or args.names:
        selected = _selected(args.names)
        overrides = [{} for _ in selected]
    else:
        selected, overrides = [args.experiment], [args.overrides]
    with _workers(args) as workers:
        outcomes, undecided = until_decided(
            selected, overrides, args.seed, args.out, workers, args.budget, quick=args.quick,
            recompute=args.recompute, show_progress=not args.quiet, figures=args.figures)
    lines = ([f"  {name} {v.check}: {why}" for name, v, why in undecided] if undecided
             else ["  none"])
    return _check_all(args, outcomes, ["", "Undecided when the looks stopped, and why:",
                                       *lines])


def _check_all(args, outcomes=None, epilogue: Sequence[str] = ()) -> int:
    from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
    from workbench.run.main_job import summary_lines, verdict_counts, verdict_table

    outcomes = _run_all(args, args.names) if outcomes is None else outcomes
    verdicts = [v for o in outcomes for v in o.verdicts]
    if args.json:
        print(json.dumps([{"experiment": o.experiment.name, **v.to_dict()}
                          for o in outcomes for v in o.verdicts], indent=2, ensure_ascii=False))
    elif args.verbose:
        print(verdict_table(outcomes))
    else:
        print("\n".join(summary_lines(outcomes, None if epilogue else {
            o.experiment.name: _verbose_command(args, o.experiment.name) for o in outcomes})))
    if epilogue and not args.json:
        print("\n".join(epilogue))
    counts = verdict_counts(verdicts)
    failed = [o.experiment.name for o in outcomes if o.error]
    summary = (f"{len(outcomes)} experiment(s), {len(verdicts)} checks: {counts[HOLDS]} holds, "
               f"{counts[VIOLATED]} violated, {counts[INCONCLUSIVE]} inconclusive")
    findings = []
    for o in outcomes if args.verbose else ():  # the summary's table already counts them
        mine = verdict_counts(o.verdicts)
        if mine[VIOLATED] or mine[INCONCLUSIVE]:
            findings.append(f"{o.experiment.name} {mine[VIOLATED]} violated, "
                            f"{mine[INCONCLUSIVE]} inconclusive")
    if findings:
        summary += " (findings: " + "; ".join(findings) + ")"
    if failed:
        summary += f"; failed to run: {', '.join(failed)}"
    status = EXIT_FAILED if failed else EXIT_VIOLATED if counts[VIOLATED] else 0
    print(f"{summary}; {_exit_meaning(status, args.verbose)}",
          file=sys.stdout if not args.json else sys.stderr)
    return status


def _exit_meaning(status: int, verbose: bool) -> str:
    where = "see 'Why' above" if verbose else "listed above"
    return {0: "exit status 0",
            EXIT_VIOLATED: f"exit status 1: some claims are violated by the runs (a finding, "
                           f"not a failure of the run; {where})",
            EXIT_FAILED: "exit status 3: an experiment failed to run"}[status]


def _verbose_command(args: argparse.Namespace, target: str) -> str:
    """The command that prints every verdict of ``target`` (an experiment name or a study
    file) as this run judged it: its points come from the store, so it reruns nothing."""
    options = (" --quick" if args.quick else "") + (
        f" --out {args.out}" if Path(args.out) != Path(DEFAULT_OUT) else "") + (
        f" --seed {args.seed}" if args.seed != DEFAULT_SEED else "") + "".join(
        f" --set {assignment}" for assignment in getattr(args, "assignments", [])) + (
        " --allow-code" if getattr(args, "allow_code", False) else "") + (
        " --once" if getattr(args, "once", False) else "")
    return f"workbench check {target}{options} --verbose"


def _report(args) -> int:
    from workbench.report import write_report

    outcomes = _run_all(args, args.names)
    command = "workbench " + " ".join(sys.argv[1:]) if sys.argv[1:] else "workbench report"
    path = write_report(outcomes, Path(args.out) / "report.html", command)
    print(f"wrote {path}")
    return EXIT_FAILED if any(o.error for o in outcomes) else 0


#: check kinds whose explanation is worth reading even when they hold: a bound's fitted
#: envelope and its rate at the optimal step
EXPLAINED_WHEN_HOLDING = ("envelope", "rate")


def _format_verdict(v: Verdict) -> str:
    return (f"{v.verdict:<12} {v.check}  [{v.kind}]\n"
            f"             observed {v.observed:.6g}  expected {v.expected:.6g}  "
            f"difference {v.difference:+.3g} ± {v.mc_error:.3g} ({v.scale})  margin "
            f"{v.margin:.3g}  (z = {v.z_threshold:.2f}, false-failure rate "
            f"{v.false_failure_rate:.2g})")


def _reported_lines(outcome) -> list[list[str]]:
    """The tables of numbers the paper reports (``[[paper]]`` entries with ``reported`` rows),
    each row beside the workbench's value, as lines, one list per table; none for a study
    without them."""
    from workbench.explore.paper_view import measured_value, reported_value

    if outcome.dataset is None:
        return []
    tables = []
    for entry in (e for e in outcome.experiment.paper if e.reported):
        width = max(len(row.label) for row in entry.reported)
        paper = [reported_value(row) for row in entry.reported]
        column = max(len("paper"), *map(len, paper))
        lines = [f"{entry.section}: {entry.claim}",
                 f"  {'':{width}}  {'paper':>{column}}  workbench ({entry.variable})"]
        for row, reported in zip(entry.reported, paper, strict=True):
            try:
                ours = measured_value(outcome.dataset, entry, row)
            except KeyError as error:
                ours = f"not in this result: {error.args[0]}"
            lines.append(f"  {row.label:{width}}  {reported:>{column}}  {ours}")
        tables.append(lines)
    return tables


def _print_verdicts(verdicts: list[Verdict], as_json: bool) -> None:
    from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
    from workbench.run.main_job import verdict_counts

    if as_json:
        print(json.dumps([v.to_dict() for v in verdicts], indent=2, ensure_ascii=False))
        return
    for v in verdicts:
        print(_format_verdict(v))
        if v.detail and (v.verdict != HOLDS or v.kind in EXPLAINED_WHEN_HOLDING):
            print(f"             {v.detail}")
    counts = verdict_counts(verdicts)
    print(f"{counts[HOLDS]} holds, {counts[VIOLATED]} violated, "
          f"{counts[INCONCLUSIVE]} inconclusive")


def run_command(args: argparse.Namespace) -> int:
    """Do what the checked ``args`` ask; returns the exit status."""
    if args.command == "list":
        if args.markdown:
            print(experiments.markdown_table(), end="")
            return 0
        rows = experiments.summaries()
        width = max(len(name) for name, _ in rows)
        for name, summary in rows:
            print(f"{name:<{width}}  {summary}")
        return 0
    if args.command == "show":
        experiment = args.experiment
        print(f"# {experiment.name}: {experiment.summary}\n# source: {experiment.source}\n")
        print(to_toml(args.config, experiment.parameters), end="")
        return 0
    if args.command == "bounds":
        return cli_bounds.main(args)
    if args.command == "dashboard":
        return cli_dashboard.main(args)
    if args.command == "store":
        return cli_store.main(args)
    if args.command == "run":
        _run(args, sys.stdout)
        return 0
    if args.command == "report":
        return _report(args)
    if args.until_decided:
        return _check_until_decided(args)
    if args.all or args.names:
        return _check_all(args)
    # check: results (and, with --figures, figures) are written as by `run`; verdicts go to
    # stdout.
    from bounds.verdict import VIOLATED

    outcome = _run(args, sys.stderr)
    # each reported table and a blank line: before the verdicts, or after the summary
    reported = [] if args.json else [line for table in _reported_lines(outcome)
                                     for line in (*table, "")]
    if args.json or args.verbose:
        print(*reported, sep="\n", end="\n" if reported else "")
        _print_verdicts(outcome.verdicts, args.json)
    else:
        from workbench.run.main_job import summary_lines, verdict_counts

        print("\n".join(summary_lines([outcome], {
            outcome.experiment.name: _verbose_command(args, args.name)})))
        print(*([""] + reported if reported else []), sep="\n", end="\n" if reported else "")
        counts = verdict_counts(outcome.verdicts)
        status = EXIT_VIOLATED if counts["violated"] else 0
        print(f"{counts['holds']} holds, {counts['violated']} violated, "
              f"{counts['inconclusive']} inconclusive; {_exit_meaning(status, False)}")
    return EXIT_VIOLATED if any(v.verdict == VIOLATED for v in outcome.verdicts) else 0


def _run_failures() -> tuple[type[Exception], ...]:
    """PointsLost, if the runner (which alone raises it) was imported: evaluated only once an
    exception is being matched, so `main` never imports the runner itself."""
    runner = sys.modules.get("workbench.run.runner")
    return (runner.PointsLost,) if runner is not None else ()


def execute(args: argparse.Namespace) -> int:
    """:func:`check_arguments` then :func:`run_command`, under the plan limits the arguments
    set (``--max-points``, ``--max-work``; :mod:`workbench.run.plan`)."""
    budget = getattr(args, "memory_budget", None)
    limits = Limits(getattr(args, "max_points", MAX_POINTS), getattr(args, "max_work", MAX_WORK),
                    None if budget is None else byte_size("memory_budget", budget))
    with plan_limits(limits):
        check_arguments(args)
        return run_command(args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return execute(args)
    except (InvalidParameter, StudyError, CodeNotAllowed) as error:
        print(f"workbench: error: {error}", file=sys.stderr)
        return EXIT_INVALID
    except (WriteFailed, *_run_failures()) as error:
        print(f"workbench: error: {error} (the run failed; rerun to resume)", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # nobody reads what is left: point stdout at devnull so that Python's flush at exit
        # does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except Exception as error:  # the top-level rule: a failed run, never 1 (a finding)
        from workbench.cli import failure

        return failure.report(error, args, argv)


if __name__ == "__main__":
    sys.exit(main())
