"""A test experiment and a sequential run's track for the tests of the looks
(``test_until_decided.py``, ``test_compile_time.py``)."""

import math

import numpy as np
import xarray as xr

from bounds.checks import oracle_check
from bounds.verdict import z_for_family
from workbench.core.parameters import Parameter
from workbench.run.experiment import Experiment


class Coin(Experiment):
    """R replicates of N(0, 1) (each seeded by its own index, so the first R of a larger run
    are the same numbers), one point; ``mean`` is judged against 0 within ``margin`` (needs
    about 160 replicates to hold), ``sure`` within 10 (holds at once)."""

    name = "coin"
    parameters = (Parameter("n_replicates", 10, "replicates R"),
                  Parameter("margin", 0.25, "margin of the mean check"))
    sweep_dims = ("point",)

    def points(self, config):
        return [{"point": 0}]

    def run_point(self, config, point, seed):
        draws = [np.random.default_rng([seed, i]).standard_normal()
                 for i in range(config["n_replicates"])]
        return xr.Dataset({"x": (("point", "replicate"), [draws])}, coords={"point": [0]})

    def checks(self, dataset):
        x = dataset["x"].values[0]
        n, z = x.size, z_for_family(0.05, 2)
        error = x.std(ddof=1) / math.sqrt(n)
        return [oracle_check("sure", x.mean(), error, 0.0, z, margin=10.0, n_replicates=n),
                oracle_check("mean", x.mean(), error, 0.0, z,
                             margin=dataset.attrs.get("margin", 0.25), n_replicates=n)]


def wanting_track(seconds: float, factor: float, checks: int = 1):
    """A track at look 1 whose ``checks`` undecided checks each ask for ``factor`` times its
    replicates, its look having computed for ``seconds`` in one process."""
    from dataclasses import replace as replaced

    from workbench.run.main_job import Outcome
    from workbench.run.until_decided import LookCost, Track

    cost = LookCost(work=seconds, computed=seconds)
    track = Track(Coin(), {}, Coin().configure(), False, look=1, cost=cost, ran=cost)
    track.outcome = Outcome(Coin(), Coin().configure(), 7)
    undecided = oracle_check("mean", 0.1, 0.1, 0.0, 3.0, margin=0.25)
    names = ["mean", *(f"mean{k}" for k in range(1, checks))]
    track.undecided = {name: replaced(undecided, check=name, replicate_factor=factor)
                       for name in names}
    return track
