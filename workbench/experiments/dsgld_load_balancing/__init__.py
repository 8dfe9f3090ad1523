"""The figures of ``dsgld-load-balancing`` (seed 004 §3.2.2, Figures 1 and 7).

The experiment is the shipped study file ``workbench/studies/library/dsgld-load-balancing.toml``:
traveling chains with slow workers (``n_slow_workers``, ``slowdown`` swept), fixed against
adaptive trajectory lengths (``balancing`` swept, the arms paired on common random numbers),
judged by the oracle and time-to-target check kinds (:mod:`workbench.studies.time_to_target`).
Its ``[study] figure`` is :mod:`.figures`'s: the error against simulated time and a Gantt chart
of the first rounds.
"""
