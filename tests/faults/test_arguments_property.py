"""No traceback on any input: generated argument lists and ``--set`` values are accepted up to
where a run would start, or refused with exit status 2 and a message.

:func:`workbench.cli.main.run_command` (what starts the work) is replaced by a stub that records
the checked arguments, so everything before it — argparse,
:func:`workbench.cli.main.check_arguments` with the experiment's configuration, the seed, the
executor options, the --out probe — runs for real. The runs are derandomized (the same examples on
every run) and write under a temporary working directory; generated paths contain no ``/``.
"""

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import experiments
from workbench.cli import main as cli
from workbench.core.parameters import to_toml

EXAMPLES = 500
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
PARAMETERS = [p.name for p in experiments.get("stale-gaussian").parameters]
WORDS = ["run", "check", "show", "report", "list", "store", "verify", "dashboard", "bounds",
         "stale-gaussian", "dsgld-imbalance", "no-such-experiment", "--all", "--quick",
         "--json", "--recompute", "--quiet", "--repair", "--seed", "--processes",
         "--scheduler", "--dask-local", "--connect-timeout", "--out", "--set", "--port",
         "--address", "--results", "-h", "=", "--"]
ODD = ["nan", "inf", "-inf", "-1", "0", "1e309", "99999999999999999999999999", "1.5",
       "localhost:8786", "tcp://[::1]:1", "host:", ":80", "tcp://x:99999", "tcp://", "0.0.0.0",
       "::1", "", " ", "\x00", "é", "..", "."]
TEXT = st.text(alphabet=st.characters(blacklist_characters="/", blacklist_categories=("Cs",)),
               max_size=12)
TOKENS = st.one_of(st.sampled_from(WORDS), st.sampled_from(ODD), TEXT,
                   st.integers(-2**70, 2**70).map(str),
                   st.builds(lambda k, v: f"{k}={v}", st.sampled_from(PARAMETERS), TEXT))
VALUED = ["--seed", "--processes", "--scheduler", "--dask-local", "--connect-timeout",
          "--out", "--set", "--port", "--address", "--results"]
# an option followed by a value more often than chance would put one there
PAIRS = st.tuples(st.sampled_from(VALUED), st.one_of(st.sampled_from(ODD), TEXT)).map(list)
COMMANDS = st.sampled_from(["run", "check", "show", "report", "store", "dashboard", "list"])
ARGUMENT_LISTS = st.builds(
    lambda command, rest: [command, *(t for part in rest for t in part)], COMMANDS,
    st.lists(st.one_of(TOKENS.map(lambda t: [t]), PAIRS), max_size=6))


def _toml_list(values):
    return "[" + ", ".join(values) + "]"


NUMBERS = st.one_of(st.integers(-2**80, 2**80).map(str),
                    st.floats(allow_nan=True, allow_infinity=True).map(
                        lambda x: repr(x).replace("inf", "inf").replace("nan", "nan")))
VALUES = st.one_of(
    NUMBERS,
    st.lists(NUMBERS, max_size=4).map(_toml_list),
    st.booleans().map(lambda b: str(b).lower()),
    st.sampled_from(['"text"', "[1, -1]", "{a = 1}", "[[1]]", "1979-05-27", "0x10", "[]",
                     "[1.5, nan]", "'single'", '"""', "[true]", "1_000", "+inf", "-0"]),
    st.text(alphabet=string.printable, max_size=20),
)
KEYS = st.one_of(st.sampled_from(PARAMETERS), st.text(max_size=10))


@pytest.fixture
def accepted(monkeypatch, tmp_path):
    """Where run_command's checked arguments land instead of a run."""
    monkeypatch.chdir(tmp_path)
    seen = []
    monkeypatch.setattr(cli, "run_command", lambda args: seen.append(args) or 0)
    return seen


def _status(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exit_:  # argparse: usage errors exit 2, --help exits 0
        return 0 if exit_.code is None else exit_.code


@SETTINGS
@given(argv=ARGUMENT_LISTS)
def test_generated_argument_lists_are_accepted_or_refused_with_a_message(argv, accepted,
                                                                         capsys):
    status = _status(argv)
    err = capsys.readouterr().err
    assert status in (0, 2), (argv, status, err)
    if status == 2:
        assert err.strip(), argv
        assert "Traceback" not in err


@SETTINGS
@given(key=KEYS, value=VALUES)
def test_generated_set_values_are_accepted_or_refused_with_a_message(key, value, accepted,
                                                                     capsys):
    status = _status(["run", "stale-gaussian", "--quick", f"--set={key}={value}"])
    err = capsys.readouterr().err
    assert status in (0, 2), (key, value, status, err)
    if status == 2:
        assert err.startswith("workbench: error: ") and len(err.strip().splitlines()) == 1
    else:
        # what a run stores in every result file must render
        to_toml(accepted[-1].config)
