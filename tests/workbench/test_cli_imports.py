"""`workbench --help`, `list`, `show NAME` and argument errors import nothing heavy (issue 15).

Behaviour, not timing: a fresh interpreter runs the command and reports which of the heavy
modules ended up in ``sys.modules``. ``show`` and a bad ``--set`` are run for every built-in
experiment (each loads and configures its experiment, which must not import the code that runs
points, checks them or draws figures). The negative controls run the same probe after an eager
import of an experiment's checks or figures module, as a package ``__init__`` that imported them
at module level would, and must see the heavy modules.

The fresh interpreters are forks of one probe process (:data:`PROBE`) that has imported only
what every probe imports first, ``workbench.cli.main`` (light, as the first tests here show):
a fork holds the same modules as an interpreter started anew at that line, without paying for
the start-up and that import again in each of the hundred probes (the file took 107 s with an
interpreter each, 65 s with forks, on a 2-core AMD EPYC).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.studies.library import ORDER

HEAVY = ("scipy.stats", "sympy", "xarray", "matplotlib", "pandas", "numba", "arviz_stats",
         "netCDF4", "dask")
NAMES = list(ORDER)

PROBE = f"""
import contextlib, importlib, io, json, os, sys
from workbench.cli.main import main

def answer(request):
    for module in request["preload"]:
        importlib.import_module(module)
    if request["kind"] == "points":  # plan a sweep: the points of the quick configuration
        from workbench.experiments import get
        experiment = get(request["argv"][0])
        experiment.points(experiment.configure(quick=True))
        return {{"matplotlib": "matplotlib" in sys.modules}}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            status = main(request["argv"])
        except SystemExit as exit:
            status = exit.code
    return {{"status": status, "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}

for line in sys.stdin:  # one request a line, answered by a fork of this process
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            reply = answer(json.loads(line))
        except BaseException as error:
            reply = {{"error": repr(error)}}
        os.write(write, json.dumps(reply).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        reply = pipe.read()
    os.waitpid(pid, 0)
    print(reply, flush=True)
"""


@pytest.fixture(scope="module")
def probe():
    process = subprocess.Popen([sys.executable, "-c", PROBE], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    yield process
    process.stdin.close()
    process.wait(timeout=60)


def _ask(probe, kind: str, argv: tuple[str, ...], preload: tuple[str, ...] = ()) -> dict:
    probe.stdin.write(json.dumps({"kind": kind, "argv": list(argv),
                                  "preload": list(preload)}) + "\n")
    probe.stdin.flush()
    reply = json.loads(probe.stdout.readline())
    assert "error" not in reply, reply["error"]
    return reply


def _imported(probe, *argv: str, preload: tuple[str, ...] = ()) -> dict:
    return _ask(probe, "cli", argv, preload)


@pytest.mark.parametrize("argv", [
    ("--help",), ("list",), ("run", "--help"), ("bounds", "--help"), ("store", "--help"),
    ("show", "no-such-experiment"), ("run", "stale-gaussian", "--seed", "-1", "--bogus"),
])
def test_light_commands_import_nothing_heavy(probe, argv):
    result = _imported(probe, *argv)
    assert result["status"] in (0, 2)
    assert result["heavy"] == []


@pytest.mark.parametrize("name", NAMES)
def test_show_imports_nothing_heavy(probe, name):
    result = _imported(probe, "show", name)
    assert result["status"] == 0
    assert result["heavy"] == []


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_set_is_refused_without_heavy_imports(probe, name):
    # configure() runs in check_arguments: an unknown key is refused naming it (status 2)
    for command in ("run", "check"):
        result = _imported(probe, command, name, "--set", "no_such_parameter=1")
        assert result["status"] == 2
        assert result["heavy"] == []


def test_a_bad_value_is_refused_without_heavy_imports(probe):
    result = _imported(probe, "run", "dsgld-imbalance", "--set", "burn_in=-1", "--quick")
    assert result["status"] == 2
    assert result["heavy"] == []


@pytest.mark.parametrize("module, expected", [
    ("workbench.studies.limit_judgements", {"sympy", "scipy.stats", "xarray"}),
    ("workbench.experiments.dsgld_imbalance", {"matplotlib"}),
    ("workbench.studies.phase_space_judgements", {"sympy", "xarray"}),
])
def test_probe_sees_an_eager_import(probe, module, expected):
    # negative control: an experiment package that imported its checks or figures at module
    # level would make `show` import these, and the probe reports them
    result = _imported(probe, "show", "dsgld-imbalance", preload=(module,))
    assert result["status"] == 0
    assert expected <= set(result["heavy"])


def _points_import_matplotlib(probe, name: str, preload: str = "") -> bool:
    return _ask(probe, "points", (name,), (preload,) if preload else ())["matplotlib"]


@pytest.mark.parametrize("name", NAMES)
def test_planning_a_sweep_imports_no_plotting(probe, name):
    # `check` draws nothing unless asked: the main thread plans every sweep, and the pool
    # workers fork from it, so matplotlib imported there would cost every process its import
    assert _points_import_matplotlib(probe, name) is False


def test_the_points_probe_sees_plotting_imported(probe):
    # negative control: a module importing the plots at module level, as fsgld-gaussian's
    # bound grid did, is seen
    assert _points_import_matplotlib(
        probe, "fsgld-gaussian", preload="workbench.systems.distributed.plots") is True


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
