"""Nothing a study file says, and no link inside ``--out``, makes a run write outside ``--out``.

A study's name names ``<out>/<name>.nc`` and ``<out>/store/<name>/``: a name with ``..``, a
path separator or an absolute path is refused when the study is read (exit 2, one line naming
``[study] name`` and its line), and nothing is written anywhere. Beneath that, every file a run
writes is resolved and checked to lie inside ``--out`` first
(:func:`workbench.store.atomic.under`): a ``store`` folder inside ``--out`` that is a link to
another place is refused with exit 3 before a point is written there. Negative control: the
same study with a plain name runs and writes inside ``--out``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.cli.main import main
from workbench.store.atomic import WriteFailed, under

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my-staleness-bound.toml"
SMALL = ["--quick", "--quiet", "--set", "n_replicates=4", "--set", "staleness=[1]",
         "--set", "n_iterations=[40]"]


def study_named(tmp_path: Path, name: str) -> Path:
    text = re.sub(r'(?m)^name = ".*"$', f"name = {name!r}".replace("'", '"'),
                  EXAMPLE.read_text(), count=1)
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def files_under(path: Path) -> set[Path]:
    return {p for p in path.rglob("*") if p.is_file()} if path.exists() else set()


@pytest.mark.parametrize("name", ["../../../elsewhere/x", "/elsewhere/x", "a/b", "..", ".hidden",
                                  "x" * 65, "semi;colon"])
def test_a_study_name_that_is_not_an_identifier_is_refused_before_any_write(tmp_path, capsys,
                                                                            name):
    study = study_named(tmp_path, name)
    out = tmp_path / "deep" / "er" / "out"
    before = files_under(tmp_path)
    assert main(["check", str(study), "--out", str(out), *SMALL]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "study.toml:22: [study] name:" in err[0], err
    assert files_under(tmp_path) == before  # nothing written, inside --out or outside it


def test_a_link_inside_out_to_another_place_is_refused(tmp_path, capsys):
    study = study_named(tmp_path, "linked")
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "store").symlink_to(elsewhere, target_is_directory=True)
    assert main(["check", str(study), "--out", str(out), *SMALL]) == 3
    err = capsys.readouterr().err
    assert "outside" in err and "--out" in err, err
    assert files_under(elsewhere) == set()


def test_under_accepts_inside_and_refuses_parents_absolute_paths_and_links(tmp_path):
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "link").symlink_to(tmp_path, target_is_directory=True)
    assert under(out, out / "sub" / "x.nc") == out / "sub" / "x.nc"
    for outside in (out / ".." / "x.nc", Path("/elsewhere/x.nc"), out / "link" / "x.nc"):
        with pytest.raises(WriteFailed, match="outside"):
            under(out, outside)


def test_negative_control_a_plain_name_runs_and_writes_inside_out(tmp_path):
    study = study_named(tmp_path, "plain-name_1.0")
    out = tmp_path / "out"
    assert main(["check", str(study), "--out", str(out), *SMALL]) in (0, 1)
    assert (out / "plain-name_1.0.nc").is_file()
    assert files_under(tmp_path) - files_under(out) == {study}
