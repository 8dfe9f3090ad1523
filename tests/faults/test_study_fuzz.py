"""Generated study files: whatever a study document says, the workbench refuses it in its own
words or plans it within its limits, and a small accepted plan runs to the end inside --out.

Hypothesis writes valid TOML documents from a small valid study by changing, adding and
removing keys in known and unknown sections, with values of every TOML type and of any size
(huge integers, infinities, long lists, nested tables, random text, expressions, names with
path characters), plus raw bytes that are not TOML at all. Each goes through what ``workbench
check`` does before any work — reading (:func:`workbench.studies.files.loads`), validation
(``configure``) and planning (:func:`workbench.run.plan.size_plan`) — in this process. The
properties:

- nothing raises but the workbench's own refusal (``InvalidParameter`` or ``StudyError``);
- an accepted plan lies within the limits (points, replicate-updates, the memory budget);
- an accepted plan small enough to run here runs to the end (exit 0 or 1) and writes nothing
  outside ``--out`` (numba's and matplotlib's caches aside).

The examples are derandomised (a fixed sequence, no seed hunting); the run takes about a
minute. The base study is checked to be accepted and to run (the negative control of the
refusal property: a fuzzer that only produced refusals would test nothing).
"""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulators.validation import InvalidParameter
from workbench.cli.main import main
from workbench.run.plan import Limits, limits_in_force, plan_limits, size_plan
from workbench.studies.document import StudyError
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import loads
from workbench.studies.schema import FIELD_SECTIONS, OTHER_SECTIONS, fields
from workbench.studies.schema import SECTIONS as SECTIONS_OF

BASE = """
[study]
name = "fuzzed"
summary = "a small stale-SGLD study the fuzzer changes"

[model]
kind = "gaussian-mean"
n_data = 200
dim = 1

[system]
kind = "constant"

[sampler]
kind = "sgld"
step_size = "step_constant * staleness**(-2/3) * n_iterations**(-1/3)"

[run]
n_replicates = 4
n_checkpoints = 4
batch_size = 10

[constants]
step_constant = 0.003

[sweep]
staleness = [1, 2]
n_iterations = [40, 80]

[[check]]
kind = "oracle"
"""
RUN_WORK = 20_000  # accepted plans of at most this many replicate-updates are run
SECTIONS = list(FIELD_SECTIONS) + list(OTHER_SECTIONS)
KEYS = sorted(fields()) + ["name", "summary", "source", "symbols", "kind", "expression",
                           "bound", "over", "quantity", "split", "zip", "python"]
EXPRESSIONS = ["staleness * 2", "1/0", "log(0) + sqrt(-1)", "exp(exp(exp(exp(1000))))",
               "C1*h**h**h**h", "n_iterations**(-1/3)", "__import__('os')", "x" * 300,
               "step_constant", "-1", "1e308 * 1e308", "sqrt(staleness)"]
NAMES = ["../../x", "/abs/x", "a/b", "..", "ok-name", "x" * 80, "semi;colon", "", " ",
         "名前", "fuzzed.v2"]

#: keys a section knows, and values of the field's own kind near its default: most edits are
#: ones a user could make, so that many documents are accepted and get planned (and run)
SECTION_FIELDS = {section: list(group) for section, group in SECTIONS_OF.items()}


def near_default(field):
    default, choices = field.parameter.default, field.parameter.choices
    if choices:
        return st.sampled_from(list(choices))
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, int):
        return st.integers(min_value=max(0, default // 4), max_value=2 * default + 2)
    if isinstance(default, float):
        return st.floats(min_value=default / 4, max_value=2 * default + 1e-9)
    return st.just(default)


scalars = st.one_of(
    st.integers(min_value=-2**70, max_value=2**70),
    st.sampled_from([0, 1, 2, 10**9, 10**12, -1, 2**63 - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=40),
    st.sampled_from(EXPRESSIONS + NAMES),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=6),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
    max_leaves=12,
) | st.lists(st.integers(min_value=1, max_value=10**6), min_size=1, max_size=2000)


@st.composite
def documents(draw) -> str:
    data = tomllib.loads(BASE)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        action = draw(st.sampled_from(["set"] * 6 + ["drop", "section"]))
        section = draw(st.sampled_from(SECTIONS + ["bogus"]))
        if section in ("check", "bound"):
            if not isinstance(data.get(section), list) or not data[section] or not all(
                    isinstance(entry, dict) for entry in data[section]):
                data[section] = [{}]
            entries = data[section]
            table = entries[draw(st.integers(min_value=0, max_value=len(entries) - 1))]
        else:
            if not isinstance(data.get(section), dict):
                data[section] = {}
            table = data[section]
        known = SECTION_FIELDS.get(section, [])
        if action == "set" and known and draw(st.integers(min_value=0, max_value=3)):
            field = draw(st.sampled_from(known))
            table[field.key] = draw(near_default(field))
            continue
        if action == "drop" and table:
            table.pop(draw(st.sampled_from(sorted(table))), None)
        elif action == "section":
            data[section] = draw(values) if section not in ("check", "bound") else \
                [draw(st.dictionaries(st.sampled_from(KEYS), scalars, max_size=4))]
        else:
            table[draw(st.sampled_from(KEYS + ["bogus_key"]))] = draw(values)
    try:
        return tomli_w.dumps(data)
    except (TypeError, ValueError):  # a value TOML cannot write (a table inside an array of
        return BASE                  # mixed types): fall back to the base document


def files_outside(root: Path, out: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() and not p.is_relative_to(out)}


def judge(text: str, workdir: Path) -> str:
    """Read, validate and plan ``text``; run it when small. Returns what happened."""
    try:
        experiment = StudyExperiment(loads(text, "<fuzzed>"))
        config = experiment.configure(quick=False)
        plan = size_plan(experiment, config)
    except (InvalidParameter, StudyError):
        return "refused"
    limits = limits_in_force()
    assert plan.points <= limits.max_points and plan.work <= limits.max_work
    assert plan.largest_point_bytes <= (1 << 30)
    if not 0 < plan.work <= RUN_WORK:
        return "planned"
    study = workdir / "study.toml"
    study.write_text(text)
    out = workdir / "out"
    before = files_outside(workdir, out)
    status = main(["check", str(study), "--out", str(out), "--processes", "1", "--quiet"])
    assert status in (0, 1), (status, text)
    assert files_outside(workdir, out) == before
    return "ran"


def test_the_base_study_is_accepted_and_runs(tmp_path):
    assert judge(BASE, tmp_path) == "ran"


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents())
def test_every_generated_study_is_refused_or_planned_within_limits(text):
    with tempfile.TemporaryDirectory() as workdir, plan_limits(Limits()):
        judge(text, Path(workdir))


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.binary(max_size=400))
def test_bytes_that_are_not_a_study_are_refused_in_words(blob):
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "study.toml"
        path.write_bytes(blob)
        from workbench.studies.files import load

        with pytest.raises((InvalidParameter, StudyError)):
            load(path)
