"""The figure of ``integrator-order`` (Chen, Ding & Carin 2015; docs/math.md §3, §15).

The experiment is the shipped study file ``workbench/studies/library/integrator-order.toml``:
SGHMC with the Euler integrator (K = 1) against symmetric splitting (K = 2), full gradients on
the Gaussian mean, each at its optimal step h*(L) (``step_size = "optimal"``), recording (θ, p)
(``phase_space``); its ``oracle`` and ``rate`` checks judge the MSE of φ̂_L(p²) against the
exact oracle and the registry bounds ``chen2015-mse-fixed-k1``/``-k2``, with Euler against
L^(−4/5) as the negative control. Its ``[study] figure`` is :mod:`.figures`'s: the MSE of
φ̂_L(p²) at the optimal step against L for both integrators, and h*(L).
"""
