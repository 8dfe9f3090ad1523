"""A reference posterior computed once per model, data and settings, and kept in the result
store like a sweep point (docs/architecture.md).

The point's identity (:func:`reference_identity`) is what determines the numbers: the model
and its data as the caller describes them (``model_identity``, e.g. the model's name, its
hyperparameters and :func:`array_digest` of its data), the test functions by name, the
:class:`~workbench.reference.settings.ReferenceSettings`, the seed, and the code versions the
store adds (:func:`workbench.store.result_store.point_identity`) plus arviz-stats, which computes
the ESS and R-hat. Its key addresses the stored Dataset, so a rerun loads it, an interrupted run
(which stored nothing) recomputes it, and a file found corrupt is set aside and recomputed, as in
:func:`workbench.run.runner.run_sweep`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import arviz_stats
import numpy as np
import xarray as xr
from tqdm import tqdm

from simulators import validation
from workbench.core.phi import THETA, THETA_SQUARED, TestFunction
from workbench.reference.chain import run_chains
from workbench.reference.mala import PotentialModel
from workbench.reference.settings import ReferenceSettings
from workbench.reference.summary import summarise
from workbench.run.progress import wanted
from workbench.store.result_store import (
    CorruptPoint,
    ResultStore,
    canonical_json,
    point_identity,
    store_key,
)

REFERENCE_EXPERIMENT = "reference"
"""The store's experiment name for reference posteriors: ``ResultStore(root, "reference")``."""


@dataclass(frozen=True)
class _ReferencePoints:
    """The experiment-like view :func:`workbench.store.result_store.point_identity` takes: the whole
    configuration (model, data, test functions) identifies a reference point."""

    name: str = REFERENCE_EXPERIMENT

    def point_identity(self, config: dict, point: dict[str, Any]) -> dict[str, Any]:
        return config


def array_digest(array: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes: the data's part of ``model_identity``."""
    array = np.ascontiguousarray(array)
    digest = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())
    return digest.hexdigest()


def reference_identity(model_identity: dict[str, Any], test_functions: Sequence[TestFunction],
                       settings: ReferenceSettings, seed: int) -> dict[str, Any]:
    """Everything the stored reference's key is computed from (module docstring)."""
    if not isinstance(model_identity, dict) or not model_identity:
        raise validation.InvalidParameter("model_identity", model_identity,
                                          "must be a non-empty dict describing model and data")
    try:
        canonical_json(model_identity)
    except (TypeError, ValueError) as error:
        raise validation.InvalidParameter("model_identity", model_identity,
                                          f"must be JSON-serialisable ({error})") from None
    config = {"model": model_identity,
              "test_functions": [f.name for f in test_functions],
              "arviz_stats": arviz_stats.__version__}
    return point_identity(_ReferencePoints(), config, settings.to_dict(), seed)


def compute_reference(model: PotentialModel, test_functions: Sequence[TestFunction],
                      settings: ReferenceSettings, seed: int,
                      progress: Callable[[int], None] | None = None) -> xr.Dataset:
    """Run the chains and summarise them (no store)."""
    run = run_chains(model, test_functions, settings, seed, progress=progress)
    dataset = summarise(run, settings)
    dataset.attrs["seed"] = int(seed)
    return dataset


def reference_posterior(model: PotentialModel, model_identity: dict[str, Any],
                        settings: ReferenceSettings, seed: int,
                        test_functions: Sequence[TestFunction] = (THETA, THETA_SQUARED), *,
                        store: ResultStore | None = None, recompute: bool = False,
                        show_progress: bool = False) -> xr.Dataset:
    """The reference Dataset (:mod:`workbench.reference.summary`) for ``model``: loaded from
    ``store`` when it holds this identity, else computed and saved there.

    model_identity: a JSON-serialisable dict that determines the potential (model name,
        hyperparameters, :func:`array_digest` of the data); two models with the same identity
        share a stored reference, so it must change whenever U does.
    recompute: ignore what the store holds (and replace it).
    show_progress: a bar over chain-steps while computing (on a terminal only).
    """
    seed = validation.integer("seed", seed, minimum=0)
    identity = reference_identity(model_identity, test_functions, settings, seed)
    key = store_key(identity)
    if store is not None and not recompute:
        try:
            stored = store.load(key)
        except CorruptPoint as error:
            moved = store.quarantine(key)
            print(f"workbench: stored reference {key} is corrupt ({error}); recomputing it"
                  + (f" (the file is kept as {moved})" if moved else ""), file=sys.stderr)
        else:
            if stored is not None:
                return stored
    started = time.perf_counter()
    total = settings.chains * (settings.warmup + settings.draws * settings.thin)
    with tqdm(total=total, desc="reference chain-steps", unit="", unit_scale=True,
              disable=not wanted(show_progress), file=sys.stderr, dynamic_ncols=True) as bar:
        dataset = compute_reference(model, test_functions, settings, seed, progress=bar.update)
    dataset.attrs["model_identity"] = json.dumps(model_identity, sort_keys=True)
    if store is None:
        return dataset
    return store.save(key, identity, dataset, time.perf_counter() - started)
