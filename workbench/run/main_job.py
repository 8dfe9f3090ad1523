"""The main job: run experiments through the store, write their results, judge their checks.

The combined ``<out>/<name>.nc`` is always rebuilt from the (verified) store, so a corrupt one
is replaced, said to have been, and kept beside as ``<name>.nc.corrupt`` (a fresh name,
``<name>.nc.1.corrupt`` and so on, if one is there); the message says how the new one was
built: from stored points, or from points computed now (with ``--seed`` omitted the seed is the
default one, which finds nothing in a store written with another seed: the message names the
seeds the store holds); temporary files crashed writers left in ``<out>`` are removed first.

Figures are drawn only when asked (``run``, ``report``, the dashboard, ``check --figures``:
issue 15, they were about an eighth of the main job's CPU time), and then again only when
the dataset or the code changed (:mod:`workbench.store.figure_cache`). A run that does not draw
them removes the figures it had drawn from other results (:func:`discard_stale`), so a
figure beside ``<name>.nc`` always shows that file's numbers.

:func:`run_one` is what ``workbench run`` and ``workbench check`` do for one experiment;
:func:`run_all` does it for several (``workbench check --all``, ``workbench report``) and
keeps going when one of them fails, so a broken experiment shows up as an error row instead of
hiding the verdicts of the others. :func:`verdict_table` is the summary table ``check --all``
prints.
"""

from __future__ import annotations

import sys
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import xarray as xr

from bounds.verdict import HOLDS, INCONCLUSIVE, VERDICTS, VIOLATED, Verdict
from simulators.validation import InvalidParameter
from workbench.run.executors import Workers
from workbench.run.experiment import Experiment
from workbench.run.runner import PointsLost, SweepRequest, SweepResult, run_sweep, run_sweeps
from workbench.store.atomic import WriteFailed, move_aside, remove_orphaned_temporaries, under
from workbench.store.figure_cache import discard_stale, figures_once
from workbench.store.netcdf import CorruptResult, read_netcdf, write_netcdf
from workbench.store.result_store import STORE_DIR, ResultStore, manifest_entries

SWEEP_MODULES = ("bounds.registry", "workbench.stats.diagnostics",
                 "workbench.studies.gaussian_point", "distributed")
"""What the sweeps of the built-in experiments import beyond this module, and the checks too:
sympy (the bound registry), arviz-stats (run diagnostics), the Gaussian-mean point, and Dask's
``distributed``, which xarray's netCDF writer imports to ask for the scheduler. The command
line imports them before a process pool starts (:func:`workbench.run.executors.open_workers`)."""


@dataclass
class Outcome:
    """One experiment's run: its configuration, Dataset, files, verdicts, or its error."""

    experiment: Experiment
    config: dict
    seed: int
    dataset: xr.Dataset | None = None
    sweep: SweepResult | None = None
    paths: list[Path] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    @property
    def figures(self) -> list[Path]:
        return [p for p in self.paths if p.suffix in (".png", ".svg")]


def run_one(experiment: Experiment, config: dict, seed: int, out: Path, workers: Workers, *,
            recompute: bool = False, show_progress: bool = False,
            judge: bool = False, figures: bool = True, on_point=None) -> Outcome:
    """Sweep (resuming from ``out/store``), write ``out/<name>.nc`` and (if asked) the
    figures, check (if asked)."""
    outcome = _sweep(experiment, config, seed, out, workers, recompute=recompute,
                     show_progress=show_progress, on_point=on_point)
    return _finish(outcome, out, judge, figures)


def _sweep(experiment: Experiment, config: dict, seed: int, out: Path, workers: Workers, *,
           recompute: bool, show_progress: bool, on_point=None) -> Outcome:
    """The sweep part of :func:`run_one`: every point computed or read from the store."""
    out = Path(out)
    remove_orphaned_temporaries(out)
    store = ResultStore(under(out, out / STORE_DIR), experiment.name)
    sweep = run_sweep(experiment, config, seed, workers=workers, store=store,
                      recompute=recompute, show_progress=show_progress, on_point=on_point)
    return Outcome(experiment, config, seed, sweep.dataset, sweep, seconds=sweep.seconds)


def _finish(outcome: Outcome, out: Path, judge: bool, figures: bool,
            write: bool = True) -> Outcome:
    """The rest of :func:`run_one`: the combined file (unless not ``write``), the figures
    and the checks (each if asked)."""
    started = time.perf_counter()
    out = Path(out)
    experiment, dataset = outcome.experiment, outcome.dataset
    if write:
        combined = under(out, out / f"{experiment.name}.nc")
        _report_corrupt(combined, outcome, out)
        outcome.paths = [write_netcdf(dataset, combined)]
        if figures:
            outcome.paths += figures_once(experiment.name, dataset, out, experiment.figures)
        else:
            discard_stale(experiment.name, dataset, out)
    if judge:
        outcome.verdicts = experiment.checks(dataset)
    outcome.seconds += time.perf_counter() - started
    return outcome


def _report_corrupt(path: Path, outcome: Outcome, out: Path) -> None:
    """Say so if the combined file about to be rebuilt was corrupt, which is then kept beside
    as ``.corrupt``, or of another version (overwritten: its points are still in the store),
    and how the new one was built."""
    try:
        read_netcdf(path)
    except FileNotFoundError:
        return
    except CorruptResult as error:
        kept = "" if error.stale else move_aside(path, ".corrupt")
        print(f"workbench: {error}" + (f"; kept as {kept}" if kept else "")
              + f"; {_rebuilt(outcome, out)}", file=sys.stderr)


def _rebuilt(outcome: Outcome, out: Path) -> str:
    """How the combined file is rebuilt: from the store, or from points computed now."""
    sweep = outcome.sweep
    if sweep is None:
        return "rebuilt"
    loaded, computed = len(sweep.loaded), len(sweep.computed)
    if sweep.ignored_store:
        return f"rebuilt from {computed} points computed now (--recompute)"
    if not computed:
        return f"rebuilt from the store ({loaded} stored points)"
    if loaded:
        return f"rebuilt from {loaded} stored points and {computed} computed now"
    store = ResultStore(out / STORE_DIR, outcome.experiment.name)
    seeds = sorted({entry["seed"] for entry in manifest_entries(store.manifest_lines()).values()}
                   - {outcome.seed})
    return (f"rebuilt from {computed} points computed now: the store held none for seed "
            f"{outcome.seed} and this configuration"
            + (f" (its points were written with seed {', '.join(map(str, seeds[:5]))}"
               f"{', ...' if len(seeds) > 5 else ''}; --seed selects the seed)" if seeds else ""))


def run_all(selected: list[Experiment], quick: bool, seed: int, out: Path, workers: Workers,
            *, recompute: bool = False, show_progress: bool = False, figures: bool = True,
            log=None, configs: list[dict] | None = None, judge: bool = True,
            keep_blocks: bool = False, written: list[bool] | None = None) -> list[Outcome]:
    """:func:`run_one` with checks (unless ``judge`` is false; and figures, if asked) for each
    experiment: its quick configuration if asked, or the given ``configs``; ``keep_blocks``:
    keep the replicate blocks that a run with more replicates would reuse (the sequential
    checks' looks, :mod:`workbench.run.runner`); ``written``: false for an experiment whose
    result is not to be written as ``<out>/<name>.nc`` (a sequential look at some of its
    points only, :mod:`workbench.run.narrowing`; no figures are drawn or discarded either).

    With worker processes or a cluster, the sweeps overlap (:func:`workbench.run.runner.run_sweeps`:
    the next one starts once the last tasks of the one before are handed out), and an
    experiment's combined file, figures and checks are done in a second thread of this
    process while the next sweeps keep the workers busy (one experiment's figures at a time,
    as matplotlib's pyplot is not thread-safe). In one process the experiments run one after
    the other: a task limits BLAS to one thread while it runs
    (:func:`workbench.run.pool.one_blas_thread`), which a check running beside it would share.
    """
    log = sys.stderr if log is None else log
    out = Path(out)
    remove_orphaned_temporaries(out)
    if configs is None:
        configs = [experiment.configure(quick=quick) for experiment in selected]
    requests = [SweepRequest(experiment, config, seed, ResultStore(under(out, out / STORE_DIR),
                                                                   experiment.name),
                             recompute=recompute, show_progress=show_progress,
                             keep_blocks=keep_blocks)
                for experiment, config in zip(selected, configs, strict=True)]
    written = [True] * len(selected) if written is None else written
    finishing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-checks")
    overlap = workers.kind != "serial"
    pending: list[Future] = []
    try:
        swept = run_sweeps(requests, workers, overlap=overlap)
        for experiment, config, sweep, write in zip(selected, configs, swept, written,
                                                    strict=True):
            if isinstance(sweep, Exception):
                pending.append(_done(_failed(experiment, config, seed, sweep, log)))
                continue
            outcome = Outcome(experiment, config, seed, sweep.dataset, sweep,
                              seconds=sweep.seconds)
            if overlap:
                pending.append(finishing.submit(_finish_logged, outcome, out, figures, log,
                                                judge, write))
            else:
                pending.append(_done(_finish_logged(outcome, out, figures, log, judge, write)))
        return [future.result() for future in pending]
    finally:
        finishing.shutdown(wait=True, cancel_futures=True)


def _finish_logged(outcome: Outcome, out: Path, figures: bool, log,
                   judge: bool = True, write: bool = True) -> Outcome:
    """:func:`_finish` (with checks, if ``judge``), its errors made an error row, and its line
    in ``log``."""
    swept = outcome.seconds
    try:
        outcome = _finish(outcome, out, judge=judge, figures=figures, write=write)
    except Exception as error:  # noqa: BLE001 - reported as an error row; the others still run
        return _failed(outcome.experiment, outcome.config, outcome.seed, error, log)
    done = " and ".join(part for part, asked in (("checks", judge), ("figures", figures))
                        if asked) or "written"
    print(f"{outcome.experiment.name}: {outcome.sweep.describe()}; {done} "
          f"{outcome.seconds - swept:.1f} s", file=log)
    return outcome


def _failed(experiment: Experiment, config: dict, seed: int, error: Exception,
            log) -> Outcome:
    """The error row of an experiment that failed: one line for the failures that say it all
    (a file that cannot be written, lost points, a configuration a point refused, such as one
    beyond the memory budget), the traceback for anything else."""
    if isinstance(error, (WriteFailed, PointsLost, InvalidParameter)):
        outcome = Outcome(experiment, config, seed, error=str(error))
        print(f"workbench: {experiment.name} failed: {error}", file=log)
    else:
        outcome = Outcome(experiment, config, seed, error="".join(
            traceback.format_exception(type(error), error, error.__traceback__)))
        print(f"workbench: {experiment.name} failed:\n{outcome.error}", file=log)
    return outcome


def _done(outcome: Outcome) -> Future:
    future: Future = Future()
    future.set_result(outcome)
    return future


def verdict_counts(verdicts: list[Verdict]) -> dict[str, int]:
    return {name: sum(v.verdict == name for v in verdicts) for name in VERDICTS}


def verdict_table(outcomes: list[Outcome], details: bool = True) -> str:
    """Experiment, check, verdict and margin, one row per check (margin > 0: inside)."""
    rows = [("experiment", "check", "verdict", "margin")]
    for o in outcomes:
        if o.error:
            rows.append((o.experiment.name, "(run failed)", "error", ""))
        rows += [(o.experiment.name, v.check, v.verdict, f"{v.margin:.3g}") for v in o.verdicts]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
             + "  " + row[3] for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    if details:
        notes = [(o.experiment.name, v) for o in outcomes for v in o.verdicts
                 if v.verdict in (VIOLATED, INCONCLUSIVE) and v.detail]
        if notes:
            lines.append("")
            lines.append("Why (violated and inconclusive checks):")
            for name, v in notes:
                lines.append(f"  {name} {v.check}: observed {v.observed:.4g}, expected "
                             f"{v.expected:.4g}, MC error {v.mc_error:.3g}. {v.detail}")
    return "\n".join(lines)


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows with the first column left-aligned and the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [row[0].ljust(widths[0]) + "  " + "  ".join(
        cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))
            for row in rows]


def summary_lines(outcomes: list[Outcome], verbose_command: dict[str, str] | None) -> list[str]:
    """The first screen of ``workbench check`` (issue 34): one row per experiment (checks,
    holds, violated, inconclusive, seconds); every violated check on one line with its
    difference, error and margin; the inconclusive ones counted per experiment with the
    command that lists them (``verbose_command``: experiment name → that command; None leaves
    them to the caller, as ``--until-decided`` lists each one with why); and each experiment
    that failed to run with its error."""
    rows = [("experiment", "checks", HOLDS, VIOLATED, INCONCLUSIVE, "seconds")]
    for o in outcomes:
        counts = verdict_counts(o.verdicts)
        rows.append((o.experiment.name, "failed" if o.error else str(len(o.verdicts)),
                     str(counts[HOLDS]), str(counts[VIOLATED]), str(counts[INCONCLUSIVE]),
                     f"{o.seconds:.1f}"))
    lines = _aligned(rows)
    lines.insert(1, "-" * len(lines[0]))
    violated = [(o.experiment.name, v) for o in outcomes for v in o.verdicts
                if v.verdict == VIOLATED]
    if violated:
        lines += ["", "Violated (findings about the claims, not failures of the runs):"]
        lines += [f"  {name} {v.check}: difference {v.difference:+.3g} ± {v.mc_error:.3g} "
                  f"({v.scale}), beyond the margin {v.margin:.3g}" for name, v in violated]
    undecided = [(o.experiment.name, verdict_counts(o.verdicts)[INCONCLUSIVE])
                 for o in outcomes]
    undecided = [(name, count) for name, count in undecided if count]
    if undecided and verbose_command is not None:
        lines += ["", "Inconclusive (the data cannot tell yet; each verdict names the replicates "
                      "that would decide it):"]
        lines += [f"  {name} {count}: {verbose_command[name]}" for name, count in undecided]
    failed = [o for o in outcomes if o.error]
    if failed:
        lines += ["", "Failed to run:"]
        lines += [f"  {o.experiment.name}: {o.error.strip().splitlines()[-1]}" for o in failed]
    return lines

