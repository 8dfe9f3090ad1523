"""The top-level rule of the command line: an exception nothing else handled is a failed run.

Exit status 1 means a violated check (a finding, which scripts accept with ``|| [ $? -eq 1
]``), so an unexpected exception must never end with Python's own status 1 and a traceback.
:func:`report` writes the full traceback to ``<out>/workbench-error.log`` when the command has
an ``--out`` directory that can be written (``run``, ``check``, ``report``, ``store``), else to
a new file in the system temp dir, prints ONE line on stderr naming the command, the error,
the innermost frame and the log, and returns exit status 3. A :class:`MemoryError` says the
run ran out of memory and names the settings that size it (``--set``, ``--memory-budget``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import traceback
from pathlib import Path

ERROR_LOG = "workbench-error.log"
EXIT_FAILED = 3
_LONGEST = 300  # characters of an error message kept on the one line


def _one_line(text: str, longest: int = _LONGEST) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= longest else text[:longest - 1] + "…"


def _command(args: argparse.Namespace | None) -> str:
    if args is None:
        return "workbench"
    words = [str(getattr(args, "command", "") or "")]
    for attribute in ("bounds_command", "store_command", "name"):
        value = getattr(args, attribute, None)
        if isinstance(value, str) and value:
            words.append(value)
    if getattr(args, "command", None) == "check":  # its several names (report's are not shown)
        words.extend(str(name) for name in getattr(args, "names", None) or ())
    if getattr(args, "all", False):
        words.append("--all")
    return " ".join(w for w in words if w)


def _where(error: BaseException) -> str:
    """The innermost frame, as ``package/module.py:LINE in function``."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "an unknown place"
    frame = frames[-1]
    path = Path(frame.filename)
    parts = path.parts
    if "site-packages" in parts:  # a library's frame: numpy/..., xarray/...
        return f"{Path(*parts[parts.index('site-packages') + 1:])}:{frame.lineno} in {frame.name}"
    root = Path(__file__).resolve().parents[2]  # the directory holding workbench/
    try:
        shown = str(path.resolve().relative_to(root))
    except (ValueError, OSError):
        shown = str(path)
    return f"{shown}:{frame.lineno} in {frame.name}"


def _log_text(error: BaseException, argv: list[str] | None) -> str:
    words = sys.argv[1:] if argv is None else list(argv)
    return (f"workbench {' '.join(words)}\n"
            f"failed at {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}"
            f" (Python {platform.python_version()}, {platform.platform()}, pid {os.getpid()})\n\n"
            + "".join(traceback.format_exception(error)))


def write_log(error: BaseException, args: argparse.Namespace | None,
              argv: list[str] | None = None) -> str:
    """Write the traceback; returns where, in words (``/path/to/log`` and, for the temp dir,
    saying so), or why it could not be written."""
    text = _log_text(error, argv)
    out = getattr(args, "out", None)
    if isinstance(out, str | os.PathLike) and Path(out).is_dir():
        path = Path(out) / ERROR_LOG
        try:
            path.write_text(text, encoding="utf-8")
            return str(path)
        except (OSError, MemoryError):
            pass
    try:
        handle, name = tempfile.mkstemp(prefix="workbench-error-", suffix=".log")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        return f"{name} (in the system temp dir)"
    except (OSError, MemoryError) as failure:
        return f"nowhere: the traceback could not be written ({_one_line(failure, 80)})"


def _sizing(args: argparse.Namespace | None) -> str:
    """The settings of the command line that size the run, as ``--set KEY=VALUE, ...``."""
    settings = [f"--set {_one_line(text, 40)}" for text in getattr(args, "assignments", None)
                or ()]
    if getattr(args, "memory_budget", None):
        settings.append(f"--memory-budget {args.memory_budget}")
    return "; the settings that size it: " + ", ".join(settings) if settings else ""


def report(error: Exception, args: argparse.Namespace | None,
           argv: list[str] | None = None) -> int:
    """Handle an unexpected exception (module docstring): one line on stderr, exit status 3."""
    log = write_log(error, args, argv)
    command = _command(args)
    if isinstance(error, MemoryError):
        detail = f" ({_one_line(error)})" if str(error) else ""
        line = (f"{command} ran out of memory{detail} at {_where(error)}{_sizing(args)}; the "
                f"run failed; traceback in {log}")
    else:
        message = f"{type(error).__name__}: {_one_line(error)}" if str(error) else \
            type(error).__name__
        line = (f"{command} failed: {message} at {_where(error)}; this is a failure of the "
                f"run, not a finding; traceback in {log}")
    print(f"workbench: error: {line}", file=sys.stderr, flush=True)
    return EXIT_FAILED
