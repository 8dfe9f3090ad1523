"""A reference is computed once per model, data, settings and seed, then read from the store."""

import numpy as np
import pytest

from simulators.seeding import generator
from workbench.core.phi import THETA, THETA_SQUARED
from workbench.models.gaussian import GaussianMeanModel
from workbench.reference import (
    REFERENCE_EXPERIMENT,
    ReferenceSettings,
    array_digest,
    reference_identity,
    reference_posterior,
)
from workbench.reference import stored as stored_module
from workbench.store.result_store import ResultStore, store_key

SETTINGS = ReferenceSettings(chains=2, draws=200, warmup=50)


@pytest.fixture
def model():
    return GaussianMeanModel.generate(generator(41, "test-data"), 50, dim=2, true_mean=0.5)


@pytest.fixture
def identity(model):
    return {"model": "gaussian-mean", "data": array_digest(model.data), "noise_scale": 1.0,
            "prior_scale": 1.0, "prior_mean": 0.0}


@pytest.fixture
def runs(monkeypatch):
    """Counts the chain runs (the expensive part) behind reference_posterior."""
    calls = []
    real = stored_module.run_chains

    def counted(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(stored_module, "run_chains", counted)
    return calls


def test_second_call_reads_the_store(tmp_path, model, identity, runs):
    store = ResultStore(tmp_path, REFERENCE_EXPERIMENT)
    first = reference_posterior(model, identity, SETTINGS, 5, store=store)
    second = reference_posterior(model, identity, SETTINGS, 5, store=store)
    assert len(runs) == 1
    assert second.identical(first)
    key = store_key(reference_identity(identity, [THETA, THETA_SQUARED], SETTINGS, 5))
    assert second.attrs["store_key"] == key and store.path(key).exists()
    reference_posterior(model, identity, SETTINGS, 5, store=store, recompute=True)
    assert len(runs) == 2


@pytest.mark.parametrize("change", ["seed", "settings", "data", "test_functions"])
def test_anything_that_changes_the_numbers_changes_the_key(tmp_path, model, identity, runs,
                                                          change):
    store = ResultStore(tmp_path, REFERENCE_EXPERIMENT)
    reference_posterior(model, identity, SETTINGS, 5, store=store)
    seed, settings, functions = 5, SETTINGS, (THETA, THETA_SQUARED)
    if change == "seed":
        seed = 6
    elif change == "settings":
        settings = ReferenceSettings(chains=2, draws=201, warmup=50)
    elif change == "data":
        identity = dict(identity, data=array_digest(np.asarray(model.data) + 1.0))
    else:
        functions = (THETA,)
    reference_posterior(model, identity, settings, seed, functions, store=store)
    assert len(runs) == 2


def test_an_interrupted_run_stores_nothing_and_is_recomputed(tmp_path, model, identity,
                                                             monkeypatch):
    store = ResultStore(tmp_path, REFERENCE_EXPERIMENT)
    real = stored_module.run_chains

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(stored_module, "run_chains", interrupted)
    with pytest.raises(KeyboardInterrupt):
        reference_posterior(model, identity, SETTINGS, 5, store=store)
    assert store.manifest() == {}
    monkeypatch.setattr(stored_module, "run_chains", real)
    assert reference_posterior(model, identity, SETTINGS, 5, store=store)["mean"].notnull().any()
    assert len(store.manifest()) == 1


def test_a_corrupt_stored_reference_is_set_aside_and_recomputed(tmp_path, model, identity,
                                                                runs, capsys):
    store = ResultStore(tmp_path, REFERENCE_EXPERIMENT)
    first = reference_posterior(model, identity, SETTINGS, 5, store=store)
    path = store.path(first.attrs["store_key"])
    path.write_bytes(path.read_bytes()[:100])
    again = reference_posterior(model, identity, SETTINGS, 5, store=store)
    assert len(runs) == 2
    assert "corrupt" in capsys.readouterr().err
    assert path.with_name(path.name + ".corrupt").exists()
    np.testing.assert_array_equal(again["mean"], first["mean"])
