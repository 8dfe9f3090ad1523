"""The engine: a schedule replayed over many replicates at once.

- :mod:`~workbench.engine.replay`: the replay of a schedule (one Python loop over updates,
  vectorised over replicates), its replicate groups under the memory budget, and the
  accumulator of φ̂;
- :mod:`~workbench.engine.compiled`: the same replay, one chunk at a time in numba, for the
  samplers and gradients that describe themselves (:mod:`workbench.core.specs`);
- :mod:`~workbench.engine.jax_replay`: the replay of a single-server schedule on the Gaussian
  mean as one XLA scan on JAX's device (``[run] backend = "jax"``; an optional extra);
- :mod:`~workbench.engine.protocols`: downpour pushes and elastic couplings;
- :mod:`~workbench.engine.running_sums`: the accumulator's compiled passes;
- :mod:`~workbench.engine.local_samples`: plain SGLD on one shard's likelihood (the samples a
  surrogate is fitted to).

Inputs: a :class:`simulators.schedule.Schedule`, a sampler (:mod:`workbench.samplers`), a
gradient estimator (:mod:`workbench.models`, :mod:`workbench.gradients`). Output: a
:class:`~workbench.engine.replay_setup.Replay` that :mod:`workbench.stats` turns into numbers.
"""
