"""Experiment ``stale-gaussian``: seed 001 §5.1, Figure 1, and Theorems 3–4 as bounds.

Everything it runs and judges is its shipped study file
``workbench/studies/library/stale-gaussian.toml``: the seed design (L = L0·τ at
h = C τ^(-2/3) L^(-1/3)) and two ``[[design]]`` tables for seed 001's Theorems 3 and 4, a rate
design and an envelope grid (:mod:`workbench.studies.designs`). What stays here is seed 001's
own: its figures (:mod:`.figures`, :mod:`.bound_figures`, named by ``[study] figure``) and the
Bounds explorer's pairing of its registered bounds with the stored measurements
(:mod:`.overlays`).
"""
