"""`workbench --help`, `list` and argument errors import nothing heavy (issue 15).

Behaviour, not timing: a fresh interpreter runs the command and reports which of the heavy
modules ended up in ``sys.modules``. The negative control runs a command that needs an
experiment (``show stale-gaussian``) through the same probe and must see them imported.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy.stats", "sympy", "xarray", "matplotlib", "pandas", "numba")

PROBE = f"""
import contextlib, io, json, sys
from workbench.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        status = main(sys.argv[1:])
    except SystemExit as exit:
        status = exit.code
print(json.dumps({{"status": status,
                  "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def _imported(*argv: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                          text=True, check=True, timeout=120)
    return json.loads(done.stdout)


@pytest.mark.parametrize("argv", [
    ("--help",), ("list",), ("run", "--help"), ("bounds", "--help"), ("store", "--help"),
    ("show", "no-such-experiment"), ("run", "stale-gaussian", "--seed", "-1", "--bogus"),
])
def test_light_commands_import_nothing_heavy(argv):
    result = _imported(*argv)
    assert result["status"] in (0, 2)
    assert result["heavy"] == []


def test_probe_sees_the_heavy_imports_of_a_command_that_loads_an_experiment():
    # negative control: the probe would catch an eager import
    result = _imported("show", "stale-gaussian")
    assert result["status"] == 0
    assert {"xarray", "sympy", "scipy.stats"} <= set(result["heavy"])
