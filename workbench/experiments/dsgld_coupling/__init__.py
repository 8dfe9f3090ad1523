"""The figure of ``dsgld-coupling`` (seed 004 §3.2.3, Eq. 6).

The experiment is the shipped study file ``workbench/studies/library/dsgld-coupling.toml``:
sharded Gaussian data, traveling chains coupled in groups of R (``[sampler] kind =
"coupled-sgld"``, R swept), judged by the gradient-noise, oracle and posterior check kinds
(:mod:`workbench.studies.sharded_judgements`). Its ``[study] figure`` is :mod:`.figures`'s,
drawn instead of the default ones.
"""
