"""Figures are drawn once per content (workbench.store.figure_cache)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench.cli.main import main
from workbench.store import figure_cache


def _dataset(value: float) -> xr.Dataset:
    return xr.Dataset({"mse": ("staleness", np.array([value, 2.0]))},
                      coords={"staleness": [1, 2]}, attrs={"experiment": "toy"})


class Drawer:
    def __init__(self):
        self.calls = 0

    def __call__(self, dataset, out):
        self.calls += 1
        path = out / "toy.png"
        path.write_bytes(f"figure of {float(dataset.mse[0])}".encode())
        return [path]


def test_the_same_content_is_drawn_once_and_a_change_draws_again(tmp_path):
    draw = Drawer()
    first = figure_cache.figures_once("toy", _dataset(1.0), tmp_path, draw)
    again = figure_cache.figures_once("toy", _dataset(1.0), tmp_path, draw)
    assert draw.calls == 1 and again == first == [tmp_path / "toy.png"]
    figure_cache.figures_once("toy", _dataset(1.5), tmp_path, draw)  # other numbers
    assert draw.calls == 2
    assert (tmp_path / "toy.png").read_bytes() == b"figure of 1.5"
    (tmp_path / "toy.png").write_bytes(b"damaged")  # a figure changed by hand: redrawn
    figure_cache.figures_once("toy", _dataset(1.5), tmp_path, draw)
    assert draw.calls == 3
    (tmp_path / "toy.png").unlink()  # a figure deleted: redrawn
    figure_cache.figures_once("toy", _dataset(1.5), tmp_path, draw)
    assert draw.calls == 4 and (tmp_path / "toy.png").exists()
    (tmp_path / figure_cache.RECORD_DIR / "toy.json").write_text("{not json")  # record garbled
    figure_cache.figures_once("toy", _dataset(1.5), tmp_path, draw)
    assert draw.calls == 5


def test_figures_of_other_content_are_discarded_and_nothing_else(tmp_path):
    draw = Drawer()
    figure_cache.figures_once("toy", _dataset(1.0), tmp_path, draw)
    mine = tmp_path / "notes.png"  # not drawn by the workbench: never touched
    mine.write_bytes(b"the user's own")
    record = tmp_path / figure_cache.RECORD_DIR / "toy.json"
    assert figure_cache.discard_stale("toy", _dataset(1.0), tmp_path) == []  # same content
    assert (tmp_path / "toy.png").exists() and record.exists()
    removed = figure_cache.discard_stale("toy", _dataset(1.5), tmp_path)  # other numbers
    assert removed == [tmp_path / "toy.png"]
    assert not (tmp_path / "toy.png").exists() and not record.exists()
    assert mine.read_bytes() == b"the user's own"
    assert figure_cache.discard_stale("toy", _dataset(1.5), tmp_path) == []  # nothing recorded
    figure_cache.figures_once("toy", _dataset(1.0), tmp_path, draw)
    (tmp_path / "toy.png").unlink()  # already gone: skipped, the record still dropped
    assert figure_cache.discard_stale("toy", _dataset(2.0), tmp_path) == []
    assert not record.exists()
    figure_cache.figures_once("toy", _dataset(1.0), tmp_path, draw)
    record.write_text("{not json")  # garbled record: dropped, no file guessed at
    assert figure_cache.discard_stale("toy", _dataset(1.0), tmp_path) == []
    assert not record.exists() and (tmp_path / "toy.png").exists()


def test_other_attributes_or_code_make_another_key(monkeypatch):
    base = figure_cache.content_key("toy", _dataset(1.0))
    other = _dataset(1.0)
    other.attrs["experiment"] = "renamed"
    assert figure_cache.content_key("toy", other) != base
    assert figure_cache.content_key("other", _dataset(1.0)) != base
    monkeypatch.setattr(figure_cache, "code_fingerprint", lambda: "edited figure code")
    assert figure_cache.content_key("toy", _dataset(1.0)) != base


def test_a_rerun_from_the_store_reuses_the_figures(tmp_path, monkeypatch):
    from workbench import experiments

    argv = ["run", "stale-gaussian", "--quick", "--processes", "1", "--quiet",
            "--set", "staleness=[1, 2]", "--set", "n_replicates=20", "--out", str(tmp_path)]
    assert main(argv) == 0
    figure = tmp_path / "stale-gaussian.png"
    drawn = figure.stat().st_mtime_ns
    experiment = experiments.get("stale-gaussian")
    calls = []
    original = type(experiment).figures
    monkeypatch.setattr(type(experiment), "figures",
                        lambda self, *a: calls.append(1) or original(self, *a))
    assert main(argv) == 0  # every point from the store, same dataset: no drawing
    assert calls == [] and figure.stat().st_mtime_ns == drawn
    assert main([*argv, "--seed", "7"]) == 0  # other numbers: drawn again
    assert calls == [1]
