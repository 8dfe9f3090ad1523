"""The figure of ``real-vs-simulated`` (seed 001, Appendix A; issue 17).

The experiment is the shipped study file ``workbench/studies/library/real-vs-simulated.toml``:
seed 001's asynchronous server run for real (``[system] kind = "real-processes"``, the worker
counts swept and run as one point, P after P), judged by the study's ``real-vs-simulated``
check against the simulator calibrated on each run. Its ``[study] figure`` is
:mod:`.figures`'s: both time speed-ups against P, and both staleness histograms for every P.
"""
