"""Experiment ``fsgld-gaussian``: seed 002 (el Mekkaoui et al. 2021) §5.1, Figures 2, 3 and 4.

The study is the shipped file ``workbench/studies/library/fsgld-gaussian.toml``, its step grid
and Theorems 1-2 envelope checks included (:mod:`workbench.studies.step_grid_point`,
:mod:`workbench.studies.step_envelope_judgements`); what stays here is the seed's figures
(:mod:`.figures`, ``[study] figure``).
"""
