"""``workbench store verify --out DIR [--repair]``: every file's state, bad ones moved aside;
``workbench store drop-blocks --out DIR [--experiment NAME]``: the kept replicate blocks
removed (:mod:`workbench.store.kept_blocks`).

Prints one line per file (:mod:`workbench.store.audit` lists the states) and a summary; exit
status 0 when nothing is bad, 1 when something is (as ``check`` exits 1 on a violated check),
2 for invalid input. ``--repair`` moves the bad files aside (never deleting them) and says
where each went; a ``workbench run`` afterwards recomputes what is missing. A file that cannot
be moved (immutable, on a read-only file system) is one line naming it and the reason, after
the other repairs, and exit status 3.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from simulators.validation import InvalidParameter
from workbench.core.validators import EXPERIMENT_NAME

EXIT_FAILED = 3  # as workbench.cli.main's: the command could not do what it was asked


def add_parser(sub) -> None:
    store = sub.add_parser("store", help="inspect and repair a result store")
    actions = store.add_subparsers(dest="store_command", required=True)
    verify = actions.add_parser("verify", help="list every file under --out with its state")
    verify.add_argument("--out", type=Path, default=Path("results"),
                        help="the directory `workbench run --out` wrote (default results/)")
    verify.add_argument("--repair", action="store_true",
                        help="move corrupt files, orphaned temporaries and duplicate, torn or "
                             "malformed manifest lines aside (nothing is deleted)")
    drop = actions.add_parser("drop-blocks",
                              help="remove the replicate blocks that sequential checks kept "
                                   "(a cache: later looks compute their replicates whole)")
    drop.add_argument("--out", type=Path, default=Path("results"),
                      help="the directory `workbench check --out` wrote (default results/)")
    drop.add_argument("--experiment", metavar="NAME",
                      help="only this experiment's kept blocks (default: every experiment's)")


def check_arguments(args: argparse.Namespace) -> None:
    if not Path(args.out).is_dir():
        raise InvalidParameter("--out", str(args.out), "must be an existing directory")
    name = getattr(args, "experiment", None)
    if name is not None and not EXPERIMENT_NAME.fullmatch(name):
        raise InvalidParameter("--experiment", name, "must be an experiment's name (letters, "
                                                     "digits, '_', '.' or '-', no path)")


def main(args: argparse.Namespace) -> int:
    if args.store_command == "drop-blocks":
        return drop_blocks(args)
    from workbench.store import (
        audit as store_audit,  # reads netCDF (xarray): not imported for --help
    )

    findings = store_audit.verify(args.out)
    for finding in findings:
        print(finding.describe())
    counts = Counter(f.state for f in findings)
    bad = sum(counts[state] for state in store_audit.BAD)
    print(f"{len(findings)} file(s) or manifest line(s): "
          + (", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "none")
          + ("" if bad else "; nothing to repair"))
    if not args.repair:
        if bad:
            print(f"{bad} bad; `workbench store verify --out {args.out} --repair` moves them "
                  "aside and a rerun recomputes them")
        return 1 if bad else 0
    from workbench.store.atomic import WriteFailed

    try:
        repaired = store_audit.repair(findings)
    except WriteFailed as error:
        for failure in getattr(error, "failures", [error]):
            print(f"workbench: error: cannot move {failure.path} aside: {failure.reason}",
                  file=sys.stderr)
        return EXIT_FAILED
    for finding, target in repaired:
        if finding.state == store_audit.LOCK:
            print(f"removed a lock file no process holds: {finding.path}")
            continue
        detail = f" ({finding.detail})" if finding.state in store_audit.MANIFEST_LINES else ""
        print(f"repaired {finding.state}{detail}: {finding.path} -> {target}")
    return 0


def drop_blocks(args: argparse.Namespace) -> int:
    """One line per experiment's kept blocks, removed or left with the reason, and the bytes
    freed; exit status 3 where some were left (a run holds their lock)."""
    from workbench.store import kept_blocks

    dropped = kept_blocks.drop(args.out, args.experiment)
    for entry in dropped:
        if entry.left:
            print(f"left {entry.path} ({_megabytes(entry.size)}): {entry.left}; drop its "
                  "blocks when no run writes to this --out")
        else:
            print(f"removed {entry.path} ({_megabytes(entry.size)})")
    freed = sum(entry.size for entry in dropped if not entry.left)
    whose = f"{args.experiment}'s" if args.experiment else "no"
    print(f"{_megabytes(freed)} freed" if dropped else
          f"{whose} kept blocks under {args.out}: nothing to drop")
    return EXIT_FAILED if any(entry.left for entry in dropped) else 0


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"
