"""Hostile inputs (issue 36): each is refused or fails with ONE line on stderr, never a
traceback, and never with exit status 1, which scripts accept as a finding
(``workbench check ... || [ $? -eq 1 ]``).

Every case runs ``workbench`` in a forked child (as :mod:`tests.faults.conftest` does, but with
stdout and stderr apart) under a time limit: a case that starts real work instead of being
refused is killed, not left to hang the suite. The first six are refused by plan sizing
before any work (:mod:`workbench.run.plan`).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import resource
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import bounds.parse  # noqa: F401 - sympy imported once here, not in every child
from workbench.cli import main as cli
from workbench.studies.document import StudyError
from workbench.studies.files import loads

from .conftest import QUICK

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SIZING_SECONDS = 2.0  # a plan is refused within this, before any work
HANG_SECONDS = 60.0  # a case still running after this started real work: killed


@dataclass
class Outcome:
    status: int
    out: str
    err: str
    seconds: float  # how long main() took in the child

    @property
    def lines(self) -> list[str]:
        return self.err.splitlines()


def _child(argv: list[str], directory: Path, before: Callable[[], None] | None) -> None:
    streams = []
    for number, name in ((1, "stdout"), (2, "stderr")):
        descriptor = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(descriptor, number)
        streams.append(open(descriptor, "w", buffering=1))  # noqa: SIM115 - until exit
    sys.stdout, sys.stderr = streams
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    if before is not None:
        before()
    started = time.monotonic()
    status = cli.main(argv)
    (directory / "seconds").write_text(repr(time.monotonic() - started))
    for stream in streams:
        stream.flush()
    os._exit(status)


def workbench(argv: list[str], directory: Path, *, timeout: float = HANG_SECONDS,
              before: Callable[[], None] | None = None) -> Outcome:
    """``workbench ARGV`` in a forked child, killed (and the test failed) after ``timeout``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    process = multiprocessing.get_context("fork").Process(target=_child,
                                                          args=(argv, directory, before))
    process.start()
    process.join(timeout)
    if process.exitcode is None:
        process.kill()
        process.join()
        pytest.fail(f"workbench {' '.join(argv)[:200]} still running after {timeout:g} s: it "
                    f"started real work\n{(directory / 'stderr').read_text()[-2000:]}")
    seconds = directory / "seconds"
    return Outcome(process.exitcode, (directory / "stdout").read_text(),
                   (directory / "stderr").read_text(),
                   float(seconds.read_text()) if seconds.exists() else float("nan"))


def _one_line(outcome: Outcome, status: int) -> str:
    """The single line on stderr of a refusal or failure with ``status``."""
    assert outcome.status == status, outcome.err
    assert "Traceback" not in outcome.err + outcome.out, outcome.err
    [line] = outcome.lines
    assert line.startswith("workbench: error: "), line
    return line


def _limit_memory() -> None:
    """A child that starts real work instead of refusing must not exhaust the machine."""
    size = int(re.search(r"VmSize:\s+(\d+) kB", Path("/proc/self/status").read_text())[1])
    limit = size * 1024 + 4 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


# ----------------------------------------------------------------------- plan sizing (six)
STALENESS = "[" + ",".join(str(t) for t in range(1, 20001)) + "]"
SIZING = {
    "staleness=[1..20000]": f"staleness={STALENESS}",
    "n_replicates=10**9": "n_replicates=1000000000",
    "dim=10**8": "dim=100000000",
    "base_iterations=10**12": "base_iterations=1000000000000",
    "n_checkpoints=10**8": "n_checkpoints=100000000",
    "n_draws=10**9": "n_draws=1000000000",
}


@pytest.mark.parametrize("assignment", list(SIZING.values()), ids=list(SIZING))
def test_a_plan_too_large_is_refused_within_two_seconds(assignment, tmp_path):
    """A sweep too long or a point too large: exit 2 before any work, saying what the plan
    would need (stale-gaussian has every one of these settings)."""
    argv = ["run", "stale-gaussian", "--quick", "--quiet", "--processes", "1",
            "--out", str(tmp_path / "out"), "--set", assignment]
    outcome = workbench(argv, tmp_path / "child", timeout=SIZING_SECONDS + 5,
                        before=_limit_memory)
    _one_line(outcome, 2)
    assert outcome.seconds < SIZING_SECONDS
    assert not (tmp_path / "out" / "store" / "stale-gaussian").exists()  # nothing ran


# ----------------------------------------------------------------------- bound expressions
EXPRESSIONS = {
    "power-tower": ("C1*h**h**h**h**h**h**h**h", "a power tower"),
    "exp-tower": ("exp(exp(exp(exp(1000))))", "a number beyond 10^1000"),
    "complex-infinity": ("log(0) + sqrt(-1)", "complex infinity"),
    "imaginary": ("C1/(L*h) + sqrt(-1)*h", "evaluates to I"),
    "not-a-sum-of-powers": ("C1*h**h", "cannot be analysed"),
}


@pytest.mark.parametrize("expression,reason", list(EXPRESSIONS.values()), ids=list(EXPRESSIONS))
def test_a_hostile_bound_expression_is_refused_naming_the_option(expression, reason, tmp_path):
    outcome = workbench(["bounds", "show", "--expression", expression], tmp_path)
    line = _one_line(outcome, 2)
    assert line.startswith("workbench: error: --expression: ") and reason in line
    assert outcome.out == ""


@pytest.mark.parametrize("expression,reason", [v for k, v in EXPRESSIONS.items()
                                               if k != "not-a-sum-of-powers"],
                         ids=[k for k in EXPRESSIONS if k != "not-a-sum-of-powers"])
def test_a_hostile_bound_in_a_study_is_refused_when_read(expression, reason):
    """The same strings as a study's [[bound]] expression: refused when the study is read,
    naming the key and its line, not when a check needs the bound's rate."""
    text = (EXAMPLES / "my-staleness-bound.toml").read_text()
    line = next(n for n, s in enumerate(text.splitlines(), 1) if s.startswith("expression ="))
    text = re.sub(r'(?m)^expression = ".*"$', f'expression = "{expression}"', text)
    text = text[:text.index("[[check]]")]  # no check asks for the bound's rate
    with pytest.raises(StudyError) as refused:
        loads(text, "study.toml")
    message = str(refused.value)
    assert message.startswith(f"study.toml:{line}: [[bound]] #1 expression: "), message
    assert reason in message


# ----------------------------------------------------------------------- study files (six)
def _binary(path: Path) -> None:
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16)


def _not_utf8(path: Path) -> None:
    """A valid study but for one Latin-1 byte (é as 0xE9) in its summary."""
    text = (EXAMPLES / "my-staleness-bound.toml").read_bytes()
    path.write_bytes(text.replace(b"A user's", b"Caf\xe9: a user's", 1))


def _nested(path: Path) -> None:
    path.write_text('[study]\nname = "deep"\n\n[run]\nn_replicates = '
                    + "[" * 3000 + "]" * 3000 + "\n")


STUDY_FILES = {"binary": (_binary, "a binary file"), "not-utf8": (_not_utf8, "not UTF-8 text"),
               "nested-3000": (_nested, "nested too deeply")}


@pytest.mark.parametrize("command", ["show", "check"])
@pytest.mark.parametrize("kind", list(STUDY_FILES))
def test_a_study_file_that_cannot_be_read_is_refused_naming_the_file(kind, command,
                                                                    tmp_path):
    write, reason = STUDY_FILES[kind]
    path = tmp_path / f"{kind}.toml"
    write(path)
    argv = [command, str(path), "--quick"]
    if command == "check":
        argv += ["--quiet", "--processes", "1", "--out", str(tmp_path / "out")]
    outcome = workbench(argv, tmp_path / "child")
    line = _one_line(outcome, 2)
    assert line.startswith(f"workbench: error: {path}") and reason in line
    assert outcome.out == ""


# ----------------------------------------------------------------------- the top-level rule
RUN = ["run", "stale-gaussian", *QUICK, "--processes", "1"]


def _raise_deep(error: BaseException) -> Callable[[], None]:
    """Patch the replay of a stale-gaussian point (deep in the sweep) to raise ``error``."""
    def before():
        def replay(*args, **kwargs):
            raise error

        import workbench.studies.gaussian_point as point

        point.replay = replay
    return before


def _log_named(line: str) -> Path:
    match = re.search(r"traceback in (\S+)", line)
    assert match, line
    return Path(match[1])


def test_an_unexpected_exception_is_a_failed_run_with_its_traceback_in_out(tmp_path):
    out = tmp_path / "out"
    outcome = workbench([*RUN, "--out", str(out)], tmp_path / "child",
                        before=_raise_deep(RuntimeError("injected deep failure")))
    line = _one_line(outcome, 3)  # not 1: a failure is not a finding
    assert "run stale-gaussian failed: RuntimeError: injected deep failure" in line
    assert "in replay" in line  # where it was raised
    log = _log_named(line)
    assert log == out / "workbench-error.log"
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert "RuntimeError: injected deep failure" in text and "gaussian_point" in text


def test_without_an_out_the_traceback_goes_to_the_temp_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # tempfile reads it on first use in the child

    def before():
        import tempfile

        import workbench.cli.bounds as cli_bounds

        tempfile.tempdir = None
        cli_bounds._list = lambda: {}["injected"]

    outcome = workbench(["bounds", "list"], tmp_path / "child", before=before)
    line = _one_line(outcome, 3)
    assert "bounds list failed: KeyError: 'injected'" in line
    assert "(in the system temp dir)" in line
    log = _log_named(line)
    assert log.parent == tmp_path and log.name.startswith("workbench-error-")
    assert "KeyError: 'injected'" in log.read_text()


def test_running_out_of_memory_says_so_and_names_the_settings_that_size_it(tmp_path):
    out = tmp_path / "out"
    outcome = workbench([*RUN, "--out", str(out)], tmp_path / "child",
                        before=_raise_deep(MemoryError("Unable to allocate 7.45 TiB")))
    line = _one_line(outcome, 3)
    assert "ran out of memory (Unable to allocate 7.45 TiB)" in line
    assert "--set n_replicates=20" in line and "--set base_iterations=50" in line
    assert "MemoryError" in _log_named(line).read_text()


def test_a_violated_check_still_exits_1(tmp_path):
    """Negative control: a finding is not a failure. Step ×4 diverges at every τ."""
    outcome = workbench(["check", "stale-gaussian", *QUICK, "--processes", "1",
                         "--set", "step_size_constant=0.02", "--out", str(tmp_path / "out")],
                        tmp_path / "child")
    assert outcome.status == 1, outcome.err
    assert "violated" in outcome.out and "Traceback" not in outcome.err
    assert not (tmp_path / "out" / "workbench-error.log").exists()
