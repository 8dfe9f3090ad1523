"""The main job's loop (workbench.run.main_job.run_all): with worker processes, an experiment's
combined file, figures and checks overlap the next sweep; the outcomes, their order, their
files and the error rows are those of running the experiments one after the other."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import xarray as xr

from bounds.verdict import HOLDS, Verdict
from workbench.run.executors import open_workers
from workbench.run.experiment import Experiment
from workbench.run.main_job import run_all
from workbench.store.netcdf import read_netcdf


class Toy(Experiment):
    name = "toy"
    sweep_dims = ("x",)

    def points(self, config):
        return [{"x": x} for x in (1, 2, 3)]

    def run_point(self, config, point, seed):
        value = np.random.default_rng([seed, point["x"]]).standard_normal()
        return xr.Dataset({"y": ("x", [value])}, coords={"x": [point["x"]]})

    def checks(self, dataset):
        return [Verdict(check=f"{self.name}/finite", kind="oracle", verdict=HOLDS,
                        observed=float(dataset.y.sum()), expected=0.0, mc_error=1.0,
                        margin=1.0, z_threshold=3.0, false_failure_rate=0.001)]

    def figures(self, dataset, out_dir):
        self.drawn_in = threading.current_thread().name
        path = out_dir / f"{self.name}.png"
        path.write_bytes(b"figure")
        return [path]


class OtherToy(Toy):
    name = "other-toy"


class FiguresFail(Toy):
    name = "figures-fail"

    def figures(self, dataset, out_dir):
        raise RuntimeError("no ink today")


@pytest.mark.parametrize("processes", [1, 2])
def test_outcomes_are_those_of_one_experiment_after_the_other(tmp_path, processes, capsys):
    selected = [Toy(), FiguresFail(), OtherToy()]
    with open_workers(processes=processes) as workers:
        outcomes = run_all(selected, quick=False, seed=5, out=tmp_path, workers=workers)
    assert [o.experiment.name for o in outcomes] == ["toy", "figures-fail", "other-toy"]
    assert "no ink today" in outcomes[1].error and not outcomes[1].verdicts
    for outcome in (outcomes[0], outcomes[2]):
        assert not outcome.error and [v.verdict for v in outcome.verdicts] == [HOLDS]
        stored = read_netcdf(tmp_path / f"{outcome.experiment.name}.nc")
        assert stored.y.size == 3 and outcome.verdicts[0].observed == float(stored.y.sum())
    in_thread = selected[0].drawn_in != threading.main_thread().name
    assert in_thread == (processes > 1)  # overlapped only where tasks run elsewhere
    err = capsys.readouterr().err
    assert "workbench: figures-fail failed" in err and "other-toy: 3 points" in err


def test_figures_are_drawn_only_when_asked(tmp_path):
    selected = [Toy(), OtherToy()]
    with open_workers(processes=2) as workers:
        outcomes = run_all(selected, quick=False, seed=5, out=tmp_path, workers=workers,
                           figures=False)
    assert all(not o.error and not o.figures for o in outcomes)
    assert not any(hasattr(toy, "drawn_in") for toy in selected)
    assert not list(tmp_path.glob("*.png"))
