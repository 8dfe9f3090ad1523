"""The figure of ``stale-nn-workers`` (seed 001 §5.2, Figure 3).

The experiment is the shipped study file ``workbench/studies/library/stale-nn-workers.toml``:
stale SGHMC on the digits networks (``[model] kind = "network"``, both swept) in the
single-server asynchronous system with P = 1, 2, 4, 6, 9 workers at a common budget of
gradients per worker, judged by the study's ``ordering`` check (the held-out cross-entropy
falls with P, and where it stops). Its ``[study] figure`` is :mod:`.figures`'s: the loss
against iterations per worker, one panel per network.
"""
