"""The figure of ``downpour-period`` (seed 003, Li et al. 2019, Algorithm 1 and its MSE bound
C₁(E₁ + E₂ + E₃)).

The experiment is the shipped study file ``workbench/studies/library/downpour-period.toml``, a
study of two parts sharing every sweep point (π, P) (:mod:`workbench.studies.parts`, ``points =
"shared"``): downpour SGLD on the Gaussian mean, judged against its exact protocol oracle and
E₃'s envelope and rate (:mod:`workbench.studies.protocol_judgements`), and on Bayesian logistic
regression from shared Laplace starts, judged against a reference posterior
(:mod:`workbench.studies.paired_protocol_point`,
:mod:`workbench.studies.paired_protocol_judgements`). Its ``[study] figure`` is :mod:`.figures`'s.
"""
