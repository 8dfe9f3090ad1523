"""``workbench store verify --out DIR [--repair]``: every file's state, bad ones moved aside.

Prints one line per file (:mod:`workbench.store.audit` lists the states) and a summary; exit
status 0 when nothing is bad, 1 when something is (as ``check`` exits 1 on a violated check),
2 for invalid input. ``--repair`` moves the bad files aside (never deleting them) and says
where each went; a ``workbench run`` afterwards recomputes what is missing.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from simulators.validation import InvalidParameter


def add_parser(sub) -> None:
    store = sub.add_parser("store", help="inspect and repair a result store")
    actions = store.add_subparsers(dest="store_command", required=True)
    verify = actions.add_parser("verify", help="list every file under --out with its state")
    verify.add_argument("--out", type=Path, default=Path("results"),
                        help="the directory `workbench run --out` wrote (default results/)")
    verify.add_argument("--repair", action="store_true",
                        help="move corrupt files, orphaned temporaries and duplicate manifest "
                             "lines aside (nothing is deleted)")


def check_arguments(args: argparse.Namespace) -> None:
    if not Path(args.out).is_dir():
        raise InvalidParameter("--out", str(args.out), "must be an existing directory")


def main(args: argparse.Namespace) -> int:
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
    if not bad:
        return 0
    if not args.repair:
        print(f"{bad} bad; `workbench store verify --out {args.out} --repair` moves them "
              "aside and a rerun recomputes them")
        return 1
    for finding, target in store_audit.repair(findings):
        print(f"repaired {finding.state}: {finding.path} -> {target}")
    return 0
