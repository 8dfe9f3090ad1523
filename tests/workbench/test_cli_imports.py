"""`workbench --help`, `list`, `show NAME` and argument errors import nothing heavy (issue 15).

Behaviour, not timing: a fresh interpreter runs the command and reports which of the heavy
modules ended up in ``sys.modules``. ``show`` and a bad ``--set`` are run for every built-in
experiment (each loads and configures its experiment, which must not import the code that runs
points, checks them or draws figures). The negative controls run the same probe after an eager
import of an experiment's checks or figures module, as a package ``__init__`` that imported them
at module level would, and must see the heavy modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from workbench.studies.library import ORDER

HEAVY = ("scipy.stats", "sympy", "xarray", "matplotlib", "pandas", "numba", "arviz_stats",
         "netCDF4", "dask")
NAMES = list(ORDER)

PROBE = f"""
import contextlib, importlib, io, json, os, sys
for module in filter(None, os.environ.get("PROBE_PRELOAD", "").split(",")):
    importlib.import_module(module)
from workbench.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        status = main(sys.argv[1:])
    except SystemExit as exit:
        status = exit.code
print(json.dumps({{"status": status,
                  "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def _imported(*argv: str, preload: tuple[str, ...] = ()) -> dict:
    env = {**os.environ, "PROBE_PRELOAD": ",".join(preload)}
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                          text=True, check=True, timeout=120, env=env)
    return json.loads(done.stdout)


@pytest.mark.parametrize("argv", [
    ("--help",), ("list",), ("run", "--help"), ("bounds", "--help"), ("store", "--help"),
    ("show", "no-such-experiment"), ("run", "stale-gaussian", "--seed", "-1", "--bogus"),
])
def test_light_commands_import_nothing_heavy(argv):
    result = _imported(*argv)
    assert result["status"] in (0, 2)
    assert result["heavy"] == []


@pytest.mark.parametrize("name", NAMES)
def test_show_imports_nothing_heavy(name):
    result = _imported("show", name)
    assert result["status"] == 0
    assert result["heavy"] == []


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_set_is_refused_without_heavy_imports(name):
    # configure() runs in check_arguments: an unknown key is refused naming it (status 2)
    for command in ("run", "check"):
        result = _imported(command, name, "--set", "no_such_parameter=1")
        assert result["status"] == 2
        assert result["heavy"] == []


def test_a_bad_value_is_refused_without_heavy_imports():
    result = _imported("run", "dsgld-imbalance", "--set", "burn_in=-1", "--quick")
    assert result["status"] == 2
    assert result["heavy"] == []


@pytest.mark.parametrize("module, expected", [
    ("workbench.studies.limit_judgements", {"sympy", "scipy.stats", "xarray"}),
    ("workbench.experiments.dsgld_imbalance", {"matplotlib"}),
    ("workbench.studies.phase_space_judgements", {"sympy", "xarray"}),
])
def test_probe_sees_an_eager_import(module, expected):
    # negative control: an experiment package that imported its checks or figures at module
    # level would make `show` import these, and the probe reports them
    result = _imported("show", "dsgld-imbalance", preload=(module,))
    assert result["status"] == 0
    assert expected <= set(result["heavy"])


POINTS_PROBE = """
import json, sys
from workbench.experiments import get
experiment = get(sys.argv[1])
experiment.points(experiment.configure(quick=True))
print(json.dumps("matplotlib" in sys.modules))
"""


def _points_import_matplotlib(name: str, preload: str = "") -> bool:
    code = (f"import {preload}\n" if preload else "") + POINTS_PROBE
    done = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", NAMES)
def test_planning_a_sweep_imports_no_plotting(name):
    # `check` draws nothing unless asked: the main thread plans every sweep, and the pool
    # workers fork from it, so matplotlib imported there would cost every process its import
    assert _points_import_matplotlib(name) is False


def test_the_points_probe_sees_plotting_imported():
    # negative control: a module importing the plots at module level, as fsgld-gaussian's
    # bound grid did, is seen
    assert _points_import_matplotlib(
        "fsgld-gaussian", preload="workbench.systems.distributed.plots") is True


def test_check_without_figures_never_imports_matplotlib(tmp_path):
    code = ("import sys\nfrom workbench.cli.main import main\n"
            "status = main(sys.argv[1:])\n"
            "print('matplotlib' in sys.modules, file=sys.stderr)\n")
    argv = ["check", "stale-gaussian", "--quick", "--processes", "1", "--quiet",
            "--out", str(tmp_path), "--set", "staleness=[1, 2]", "--set", "n_replicates=20"]
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "False"
    with_figures = subprocess.run([sys.executable, "-c", code, *argv, "--figures"],
                                  capture_output=True, text=True, timeout=600)
    assert with_figures.stderr.strip().splitlines()[-1] == "True"  # the control
