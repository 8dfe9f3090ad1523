"""``[[paper]]``: what a seed paper states, read by one function for both kinds of study file
(a whole study through :func:`workbench.studies.files.loads`, a shipped file's header through
:func:`workbench.studies.library.header`, which ``workbench list`` reads alone), refused naming
the key; every experiment carries its file's entries."""

from __future__ import annotations

import pytest

from workbench import experiments
from workbench.core.paper import PaperEntry, PaperError, Reported, entries
from workbench.studies import library
from workbench.studies.document import StudyError
from workbench.studies.files import built_in, loads

CLAIM = {"section": "seed 001 §5.1", "claim": "the variance drops faster", "checks": ["a/*"]}
# a made-up table (not a seed's numbers)
TABLE = {"section": "a paper §4, Table 1", "claim": "Perplexity on NIPS", "checks": [],
         "variable": "perplexity", "select": {"dataset": "nips"},
         "reported": [{"label": "D-SGLD", "value": 1652, "sd": 12.5,
                       "select": {"method": "dsgld"}},
                      {"label": "AD-LDA", "value": 1700.0}]}


def test_a_claim_and_a_table_of_reported_numbers_are_read():
    claim = PaperEntry.from_table(CLAIM)
    assert claim == PaperEntry("seed 001 §5.1", "the variance drops faster", ("a/*",))
    table = PaperEntry.from_table(TABLE)
    assert table.variable == "perplexity" and table.select == {"dataset": "nips"}
    assert table.reported == (Reported("D-SGLD", 1652.0, 12.5, {"method": "dsgld"}),
                              Reported("AD-LDA", 1700.0))
    assert entries([CLAIM, TABLE]) == (claim, table)
    assert entries([]) == ()


@pytest.mark.parametrize(("change", "key"), [
    ({"section": None}, "section"),
    ({"section": "  "}, "section"),
    ({"claim": None}, "claim"),
    ({"checks": None}, "checks"),
    ({"checks": "a/*"}, "checks"),
    ({"checks": [1]}, "checks"),
    ({"figure": "2a"}, "figure"),
    ({"paraphrase": "yes"}, "paraphrase"),
    ({"note": 3}, "note"),
    ({"variable": "x"}, "reported"),
    ({"select": {"a": 1}}, "select"),
    ({"reported": [{"label": "x", "value": 1.0}]}, "variable"),
])
def test_a_bad_entry_is_refused_naming_the_key(change, key):
    table = {k: v for k, v in {**CLAIM, **change}.items() if v is not None}
    with pytest.raises(PaperError) as error:
        PaperEntry.from_table(table)
    assert error.value.path == (key,)
    # the same entry, second in a list, is refused with its index
    with pytest.raises(PaperError, match=rf"^\[\[paper\]\] #2 {key}: "):
        entries([CLAIM, table])


@pytest.mark.parametrize(("row", "path"), [
    ({"value": 1.0}, ("reported", 0, "label")),
    ({"label": "x"}, ("reported", 0, "value")),
    ({"label": "x", "value": True}, ("reported", 0, "value")),
    ({"label": "x", "value": float("nan")}, ("reported", 0, "value")),
    ({"label": "x", "value": 1.0, "sd": -1.0}, ("reported", 0, "sd")),
    ({"label": "x", "value": 1.0, "error": 1.0}, ("reported", 0, "error")),
    ({"label": "x", "value": 1.0, "select": {"m": [1]}}, ("reported", 0, "select")),
    ("x", ("reported", 0)),
])
def test_a_bad_reported_row_is_refused_naming_it(row, path):
    with pytest.raises(PaperError) as error:
        PaperEntry.from_table({**TABLE, "reported": [row]})
    assert error.value.path == path


def test_paper_must_be_an_array_of_tables():
    with pytest.raises(PaperError, match="as \\[\\[paper\\]\\] tables"):
        entries({"section": "x"})
    with pytest.raises(PaperError, match=r"^\[\[paper\]\] #1: must be a table"):
        entries(["x"])


# ----------------------------------------------------------------------- a whole study file
STUDY = library.path("stale-gaussian").read_text(encoding="utf-8").replace(
    'figure = "stale_gaussian.figures:figures"', "")


def _study(paper: str):
    head, _, _ = STUDY.partition("\n[[paper]]")  # the study without its shipped entries
    return loads(head + "\n" + paper, "my-study.toml")


def test_a_study_reads_its_paper_entries():
    study = _study('[[paper]]\nsection = "seed 001 §5.1"\nclaim = "same MSE"\n'
                   'checks = ["invariance/mse/*"]\n')
    assert study.paper == (PaperEntry("seed 001 §5.1", "same MSE", ("invariance/mse/*",)),)
    assert _study("").paper == ()


@pytest.mark.parametrize(("paper", "where"), [
    ('[[paper]]\nclaim = "c"\nchecks = []\n', r"\[\[paper\]\] #1 section"),
    ('[[paper]]\nsection = "s"\nclaim = "c"\nchecks = []\nfigure = 2\n',
     r"\[\[paper\]\] #1 figure"),
    ('[[paper]]\nsection = "s"\nclaim = "c"\nchecks = "oracle/*"\n', r"\[\[paper\]\] #1 checks"),
    ('[[paper]]\nsection = "s"\nclaim = "c"\nchecks = []\n'
     '[[paper]]\nsection = "s"\nclaim = "c"\nchecks = []\nvariable = "mse"\n'
     'reported = [{ label = "x" }]\n', r"\[\[paper\]\] #2 reported.0.value"),
    ('[paper]\nsection = "s"\n', r"\[paper\]"),
])
def test_a_study_refuses_a_bad_entry_naming_key_and_line(paper, where):
    with pytest.raises(StudyError, match=rf"my-study.toml:\d+: {where}: "):
        _study(paper)


# ------------------------------------------------------------------- a shipped file's header
HEADER = '[study]\nname = "stale-blr-speedup"\nsummary = "s"\nsource = "seed 001"\n'


def test_a_header_reads_its_paper_entries_and_refuses_bad_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(library, "DIRECTORY", tmp_path)
    file = tmp_path / "stale-blr-speedup.toml"
    file.write_text(HEADER + '[[paper]]\nsection = "seed 001 §5.1"\nclaim = "c"\n'
                    'checks = ["speed-up/*"]\n', encoding="utf-8")
    assert library.header("stale-blr-speedup").paper == \
        (PaperEntry("seed 001 §5.1", "c", ("speed-up/*",)),)
    file.write_text(HEADER, encoding="utf-8")
    assert library.header("stale-blr-speedup").paper == ()
    for bad, key in (('claim = "c"\nchecks = []\n', "section"),
                     ('section = "s"\nclaim = "c"\nchecks = []\nwhere = 1\n', "where"),
                     ('section = "s"\nclaim = "c"\nchecks = "speed-up/*"\n', "checks")):
        file.write_text(HEADER + "[[paper]]\n" + bad, encoding="utf-8")
        with pytest.raises(PaperError, match=rf"^\[\[paper\]\] #1 {key}: "):
            library.header("stale-blr-speedup")


# ----------------------------------------------------------------------- the shipped files
CITED = {"stale-gaussian": "seed 001 §5.1", "stale-blr-speedup": "seed 001 §5.1",
         "stale-nn-workers": "seed 001 §5.2", "dsgld-imbalance": "seed 004 §4.1",
         "dsgld-trajectory": "seed 004 §4.1"}


def test_every_experiment_carries_its_files_paper_entries():
    for name in library.ORDER:
        head = library.header(name)
        assert experiments.EXPERIMENTS[name].paper == head.paper
        assert built_in(name).paper == head.paper  # the study file reads them too
    for name, section in CITED.items():
        paper = library.header(name).paper
        assert paper and all(e.section.startswith(section) for e in paper), name
        # an entry that no check compares says so with an empty list, never a made-up name
        assert all(isinstance(e.checks, tuple) for e in paper)
