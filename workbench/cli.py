"""The ``workbench`` command line: list, show, run and check experiments; browse the bounds
(``workbench bounds``, :mod:`workbench.cli_bounds`); start the dashboard (``workbench
dashboard``, :mod:`workbench.cli_dashboard`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bounds.verdict import HOLDS, INCONCLUSIVE, VERDICTS, VIOLATED, Verdict
from simulators.validation import InvalidParameter
from workbench import cli_bounds, cli_dashboard, experiments
from workbench.config import parse_assignment, to_toml
from workbench.results import write_netcdf
from workbench.runner import run_experiment

DEFAULT_SEED = 2016
DEFAULT_OUT = Path("results")


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="experiment name (see `workbench list`)")
    parser.add_argument("--quick", action="store_true", help="the small, fast configuration")
    parser.add_argument("--set", dest="assignments", action="append", default=[],
                        metavar="KEY=VALUE", help="override a parameter (TOML value)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"directory for results and figures (default {DEFAULT_OUT}/)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"root seed (default {DEFAULT_SEED})")
    parser.add_argument("--processes", type=int, default=1,
                        help="worker processes for the sweep points (default 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Distributed and stale-gradient SG-MCMC: run experiments and check them "
                    "against exact oracles and the papers' claims.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments, one line each")
    show = sub.add_parser("show", help="an experiment's parameters and defaults, as TOML")
    show.add_argument("name")
    show.add_argument("--quick", action="store_true", help="show the quick configuration")
    show.add_argument("--set", dest="assignments", action="append", default=[],
                      metavar="KEY=VALUE")
    run = sub.add_parser("run", help="run an experiment; write its Dataset and figures")
    _add_run_options(run)
    check = sub.add_parser("check", help="run an experiment and print one verdict per check")
    _add_run_options(check)
    check.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    cli_bounds.add_parser(sub)
    cli_dashboard.add_parser(sub)
    return parser


def _configure(args) -> tuple[experiments.Experiment, dict]:
    experiment = experiments.get(args.name)
    overrides = dict(parse_assignment(text) for text in args.assignments)
    return experiment, experiment.configure(overrides, quick=args.quick)


def _run(args, stream) -> tuple[experiments.Experiment, object, list[Path]]:
    experiment, config = _configure(args)
    progress = not args.quiet and sys.stderr.isatty()
    dataset = run_experiment(experiment, config, args.seed, processes=args.processes,
                             progress=progress)
    out = Path(args.out)
    paths = [write_netcdf(dataset, out / f"{experiment.name}.nc")]
    paths += experiment.figures(dataset, out)
    for path in paths:
        print(f"wrote {path}", file=stream)
    return experiment, dataset, paths


def _format_verdict(v: Verdict) -> str:
    return (f"{v.verdict:<12} {v.check}\n"
            f"             observed {v.observed:.6g}  expected {v.expected:.6g}  "
            f"MC error {v.mc_error:.3g}  margin {v.margin:.3g}  (z = {v.z_threshold:.2f}, "
            f"false-failure rate {v.false_failure_rate:.2g})")


def _print_verdicts(verdicts: list[Verdict], as_json: bool) -> None:
    if as_json:
        print(json.dumps([v.to_dict() for v in verdicts], indent=2, ensure_ascii=False))
        return
    for v in verdicts:
        print(_format_verdict(v))
        if v.verdict != HOLDS and v.detail:
            print(f"             {v.detail}")
    counts = {name: sum(v.verdict == name for v in verdicts) for name in VERDICTS}
    print(f"{counts[HOLDS]} holds, {counts[VIOLATED]} violated, "
          f"{counts[INCONCLUSIVE]} inconclusive")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            for experiment in experiments.EXPERIMENTS.values():
                print(f"{experiment.name:<20} {experiment.summary}")
            return 0
        if args.command == "show":
            experiment, config = _configure(args)
            print(f"# {experiment.name}: {experiment.summary}\n# source: {experiment.source}\n")
            print(to_toml(config, experiment.parameters), end="")
            return 0
        if args.command == "bounds":
            return cli_bounds.main(args)
        if args.command == "dashboard":
            return cli_dashboard.main(args)
        if args.command == "run":
            _run(args, sys.stdout)
            return 0
        # check: results and figures are written as by `run`; verdicts go to stdout.
        experiment, dataset, _ = _run(args, sys.stderr)
        verdicts = experiment.checks(dataset)
        _print_verdicts(verdicts, args.json)
        return 1 if any(v.verdict == VIOLATED for v in verdicts) else 0
    except InvalidParameter as error:
        print(f"workbench: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
