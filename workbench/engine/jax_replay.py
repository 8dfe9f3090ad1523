"""The engine on JAX: a replay of a staleness schedule compiled by XLA, for a GPU (optional).

``[run] backend = "jax"`` runs a Gaussian-mean study's points here instead of in
:func:`workbench.engine.replay.replay`: the same update as the numpy engine and its compiled
path (seed 001 §3.1: update l reads the gradient point of version ``l - τ_l`` from a ring buffer
of the last ``τ_max + 1`` versions, draws a minibatch, evaluates ∇Ũ(θ) = k θ - (a + c x̄_B) and
lets the sampler step), written as one ``lax.scan`` over the updates with every array
``(replicate, d)``, so that XLA fuses each update into a few kernels and runs the replicates in
parallel on whatever device JAX has (the CPU here; a GPU where ``jax[cuda]`` is installed). The
samplers are those of :class:`~workbench.core.specs.SamplerSpec` (SGLD, SGHMC with the Euler or
the splitting integrator) and the gradient :class:`~workbench.core.specs.LinearMeanSpec`, both
read from the objects' ``kernel_spec()``, so the formulas are written once per backend.

What it keeps is the numpy engine's :class:`~workbench.engine.replay_setup.Replay`: φ̂_L of θ and
θ² at the checkpoints (running sums in update order, divided by the sample count), the sample
count at which a replicate first left ``[-divergence_threshold, divergence_threshold]`` (its
averages from there on NaN), the thinned draws and the final positions.

Randomness: JAX's counter-based generator (threefry) instead of numpy's streams, so the bits
differ from the numpy engine's and agree with it in distribution only: the Gaussian noise and
the minibatch of update l of replicate r come from the key ``fold_in(fold_in(K, r), l)``, K
derived from the point's seed. A replicate's path therefore depends on the seed and its own
index alone: the first R replicates of a larger run, any split into blocks or groups, and any
device give the same numbers. Floating-point results can differ from the numpy engine's in the
last bits (XLA may fuse and reorder), so the tests compare the two to 1e-12 with the noise off
and by the exact oracle with it on.

Memory: the replicates run in groups whose working arrays (ring buffer, gathered minibatch,
kept averages and draws) fit the memory budget in force
(:func:`workbench.core.memory_budget.memory_budget_in_force`), one compiled scan per group size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import numpy as np

from simulators import validation
from simulators.schedule import Schedule
from simulators.seeding import SeedLike, seed_sequence
from workbench.core.memory_budget import memory_budget_in_force
from workbench.core.phi import THETA, THETA_SQUARED, TestFunction
from workbench.core.specs import SAMPLER_KINDS, LinearMeanSpec, spec_of
from workbench.engine.replay_setup import (
    GroupProgress,
    Replay,
    block_rows,
    kept_updates,
    masked_after_divergence,
)

#: the value of ``[run] backend`` that runs here
BACKEND = "jax"
#: the attribute of a point's dataset naming the JAX and the device that computed it
DEVICE_ATTR = "jax_device"
_INSTALL = "pip install 'sgmcmc-workbench[jax]' (jax[cuda12] for an NVIDIA GPU)"


def require() -> None:
    """Refuse, naming ``backend``, where JAX is not installed."""
    try:
        import jax  # noqa: F401
    except ImportError:
        raise validation.InvalidParameter("backend", BACKEND, f"needs JAX: {_INSTALL}") \
            from None


def replay(
    schedule: Schedule,
    sampler,
    gradient,
    *,
    n_updates: int,
    n_replicates: int,
    initial_position,
    seed: SeedLike,
    batch_size: int,
    replacement: bool = True,
    test_functions: Sequence[TestFunction] = (THETA, THETA_SQUARED),
    checkpoints: Sequence[int] | None = None,
    thin: int | Sequence[int] = 0,
    replicate_block: int = 50,
    blocks: Sequence[int] | None = None,
    divergence_threshold: float = 1e100,
    progress: Callable[[int], None] | None = None,
    memory_budget: int | None = None,
) -> Replay:
    """:func:`workbench.engine.replay.replay`'s arguments and result, on JAX (module docstring);
    a single-server schedule, a sampler and an estimator that describe themselves
    (``kernel_spec()``) and the test functions θ and θ²."""
    require()
    n_updates = validation.integer("n_updates", n_updates, minimum=1)
    if schedule.attrs.get("protocol") is not None or schedule.n_servers != 1:
        raise validation.InvalidParameter("backend", BACKEND, "replays a single-server "
                                          "staleness schedule: use backend = \"numpy\"")
    sampler_spec = _sampler_spec(sampler)
    gradient_spec = spec_of(gradient)
    if sampler_spec is None or sampler_spec.kind not in SAMPLER_KINDS or \
            not isinstance(gradient_spec, LinearMeanSpec):
        raise validation.InvalidParameter(
            "backend", BACKEND, "runs SGLD and SGHMC on the Gaussian mean: use backend = "
            "\"numpy\"")
    if [f.name for f in test_functions] != [THETA.name, THETA_SQUARED.name]:
        raise validation.InvalidParameter("backend", BACKEND, "keeps φ̂ of θ and θ² alone")
    replicates = block_rows(n_replicates, replicate_block, blocks)
    checkpoints = np.asarray([n_updates] if checkpoints is None else checkpoints, np.int64)
    kept = kept_updates(thin, n_updates)
    staleness = schedule.update_staleness(n_updates)[:, 0].astype(np.int64)
    data = np.ascontiguousarray(gradient_spec.data, dtype=np.float64)
    dim = data.shape[1]
    start = np.broadcast_to(np.asarray(initial_position, dtype=float), (dim,))
    ring_size = int(staleness.max()) + 1
    budget = memory_budget_in_force() if memory_budget is None else memory_budget
    per_replicate = 8 * dim * (ring_size + batch_size + 8 + 2 * checkpoints.size + kept.size)
    group = max(1, min(replicates.size, budget // per_replicate))
    events = _events(n_updates, checkpoints, kept)
    constants = np.array([sampler_spec.step_size, sampler_spec.noise_scale,
                          sampler_spec.momentum_factor, gradient_spec.precision,
                          gradient_spec.offset, gradient_spec.scale, divergence_threshold])
    shared = GroupProgress(progress, replicates.size)
    parts = []
    for first in range(0, replicates.size, group):
        rows = replicates[first:first + group]
        parts.append(_run_group(SAMPLER_KINDS[sampler_spec.kind], ring_size, batch_size,
                                bool(replacement), checkpoints.size, kept.size,
                                _key_words(seed), rows, start, data, staleness, events,
                                constants))
        report = shared.for_rows(rows.size)
        if report is not None:
            report(n_updates)
    averages, draws, diverged, final = (np.concatenate(arrays, axis=axis) for arrays, axis in
                                        zip(zip(*parts, strict=True), (2, 1, 0, 0),
                                            strict=True))
    diverged = diverged[:, None]  # (replicate, server)
    values = {name: masked_after_divergence(averages[k][:, :, None, :], checkpoints, diverged)
              for k, name in enumerate((THETA.name, THETA_SQUARED.name))}
    return Replay(
        checkpoints=checkpoints,
        averages=values,
        diverged_at=diverged,
        draws=draws.transpose(1, 0, 2)[:, None] if kept.size else None,
        draw_iterations=kept if kept.size else None,
        final_position=final[:, None],
    )


def device() -> str:
    """JAX's version and the device it computes on, as a point records them: "jax 0.10.2 on
    cpu (cpu)", "jax 0.10.2 on NVIDIA H200 (gpu)"."""
    import jax

    return f"jax {jax.__version__} on {jax.devices()[0].device_kind} ({jax.default_backend()})"


def _sampler_spec(sampler):
    """The sampler's step as it describes it (:func:`~workbench.core.specs.spec_of`)."""
    return spec_of(sampler, "step")


def _key_words(seed: SeedLike) -> np.ndarray:
    """Two 32-bit words of the point's seed: the threefry key K of the module docstring."""
    return seed_sequence(seed).generate_state(2, dtype=np.uint32)


def _events(n_updates: int, checkpoints: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Per update (sample count l + 1): the checkpoint slot it fills or -1, and the draw slot
    it fills or -1, as an ``(update, 2)`` array the scan reads."""
    events = np.full((n_updates, 2), -1, dtype=np.int64)
    events[checkpoints - 1, 0] = np.arange(checkpoints.size)
    events[kept - 1, 1] = np.arange(kept.size)
    return events


def _run_group(kind, ring_size, batch_size, replacement, n_checkpoints, n_kept, words, rows,
               start, data, staleness, events, constants):
    """One group of replicates through every update: (averages (test function, checkpoint,
    replicate, d), draws (draw, replicate, d), diverged_at (replicate,), final (replicate,
    d)) as numpy arrays."""
    import jax

    out = _compiled(kind, ring_size, batch_size, replacement, n_checkpoints, n_kept)(
        np.asarray(words), np.asarray(rows, dtype=np.uint32), start, data,
        staleness, events, constants)
    return tuple(np.array(a) for a in jax.device_get(out))  # writable copies


@cache
def _compiled(kind: int, ring_size: int, batch_size: int, replacement: bool,
              n_checkpoints: int, n_kept: int):
    """The jitted scan for one sampler kind and the sizes XLA needs fixed (module docstring)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # float64, as the numpy engine and the oracle

    def run(words, rows, start, data, staleness, events, constants):
        h, noise_scale, factor, precision, offset, scale, threshold = constants
        n_rows, dim = rows.size, start.size
        base = jax.random.wrap_key_data(words, impl="threefry2x32")
        replicate_keys = jax.vmap(lambda r: jax.random.fold_in(base, r))(rows)

        def draws_of(key, update):
            noise_key, batch_key = jax.random.split(jax.random.fold_in(key, update))
            noise = jax.random.normal(noise_key, (dim,), dtype=jnp.float64)
            if replacement:
                batch = jax.random.randint(batch_key, (batch_size,), 0, data.shape[0])
            else:
                batch = jax.random.choice(batch_key, data.shape[0], (batch_size,),
                                          replace=False)
            return noise, data[batch].sum(axis=0)

        def gradient_point(theta, momentum):
            return theta + (0.5 * h) * momentum if kind == 2 else theta

        def step(carry, inputs):
            ring, theta, momentum, sums, averages, kept, diverged = carry
            update, tau, (checkpoint, draw) = inputs
            noise, batch_sums = jax.vmap(draws_of, (0, None))(replicate_keys, update)
            point = ring[(update - tau) % ring_size]
            grad = precision * point - (offset + scale * (batch_sums / batch_size))
            if kind == 0:  # SGLD: θ ← (θ - h∇) + sξ
                theta = (theta - h * grad) + noise_scale * noise
            elif kind == 1:  # SGHMC, Euler: p ← (1 - Dh) p - h∇ + sξ; θ ← θ + h p
                momentum = factor * momentum - h * grad + noise_scale * noise
                theta = theta + h * momentum
            else:  # SGHMC, splitting (A-B-O-B-A): half drift, kick, decay, half drift
                theta = theta + (0.5 * h) * momentum
                momentum = factor * (factor * momentum - h * grad + noise_scale * noise)
                theta = theta + (0.5 * h) * momentum
            ring = ring.at[(update + 1) % ring_size].set(gradient_point(theta, momentum))
            sums = sums + jnp.stack([theta, theta * theta])
            count = update + 1
            averages = averages.at[:, jnp.maximum(checkpoint, 0)].set(jnp.where(
                checkpoint >= 0, sums / count, averages[:, jnp.maximum(checkpoint, 0)]))
            kept = kept.at[jnp.maximum(draw, 0)].set(jnp.where(
                draw >= 0, theta, kept[jnp.maximum(draw, 0)]))
            outside = ~jnp.all(jnp.abs(theta) <= threshold, axis=-1)
            diverged = jnp.where((diverged < 0) & outside, count, diverged)
            return (ring, theta, momentum, sums, averages, kept, diverged), None

        theta = jnp.broadcast_to(start, (n_rows, dim))
        momentum = jnp.zeros((n_rows, dim))
        ring = jnp.broadcast_to(gradient_point(theta, momentum), (ring_size, n_rows, dim))
        carry = (ring, theta, momentum, jnp.zeros((2, n_rows, dim)),
                 jnp.full((2, max(n_checkpoints, 1), n_rows, dim), jnp.nan),
                 jnp.full((max(n_kept, 1), n_rows, dim), jnp.nan),
                 jnp.full(n_rows, -1, dtype=jnp.int64))
        updates = jnp.arange(staleness.size, dtype=jnp.int64)
        carry, _ = jax.lax.scan(step, carry, (updates, staleness, events))
        _, theta, _, _, averages, kept, diverged = carry
        return averages[:, :n_checkpoints], kept[:n_kept], diverged, theta

    return jax.jit(run)
