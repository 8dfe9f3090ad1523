"""The registered bounds, one module per source (seed 001, Chen et al. 2015, seeds 002 and 003,
exact Gaussian results); :mod:`bounds.registry` collects them in a stable order."""
