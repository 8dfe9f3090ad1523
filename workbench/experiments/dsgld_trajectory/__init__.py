"""The figure of ``dsgld-trajectory`` (seed 004 §3.2.1 and §4.1, Figure 2(c)-(d)).

The experiment is the shipped study file ``workbench/studies/library/dsgld-trajectory.toml``:
sharded Gaussian data, D-SGLD on traveling chains with the same trajectory length τ on every
worker, τ swept; its checks are the exact oracle given each chain's schedule and the ordering
of the samples' distances to the SGLD posterior and to the mixture of local posteriors
(:mod:`workbench.studies.sharded_judgements`). Its ``[study] figure`` is :mod:`.figures`'s: the
seed's figure with the references and the exact distances drawn in.
"""
