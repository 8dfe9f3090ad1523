"""Gradient estimators and the minibatches they read.

- :mod:`~workbench.gradients.minibatch`: minibatch index draws, vectorised over replicates,
  with :mod:`~workbench.gradients.bounded_draws` (numpy's bounded integers, faster) and
  :mod:`~workbench.gradients.gathered_sums` (compiled sums over gathered rows in numpy's order);
- :mod:`~workbench.gradients.minibatch_moments`: the law of the gradient noise (cumulants of a
  minibatch sum from a finite data set);
- :mod:`~workbench.gradients.sharded`: D-SGLD's shard scaling and FSGLD's conducive gradients,
  with the Gaussian surrogates they need (:mod:`~workbench.gradients.surrogates`).
"""
