"""The figure of ``multi-server`` (seed 001 §3.3, Figure 4, Theorems 6-7).

The experiment is the shipped study file ``workbench/studies/library/multi-server.toml``, a
study of two parts on the shared sweep dim ``servers`` (:mod:`workbench.studies.parts`): the
Gaussian mean with S servers pooled, judged against its exact pooled oracle
(:mod:`workbench.studies.pooled_point`), and Bayesian logistic regression on the same
asynchronous servers, judged on its held-out loss (Chen, Ding, Carin et al. 2016, "Stochastic
gradient MCMC with stale gradients"). Its ``[study] figure`` is :mod:`.figures`'s.
"""
