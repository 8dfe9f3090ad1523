"""The figure of ``elastic-vs-downpour`` (seed 003, Algorithm 1 and Appendix B).

The experiment is the shipped study file ``workbench/studies/library/elastic-vs-downpour.toml``:
downpour and elastic SGLD (``[system] kind = "protocol"``, ``protocol`` swept) on the Gaussian
mean at one communication budget, judged by the study's ``oracle`` check against the exact
protocol oracle, point by point and for the difference of the two protocols' MSE. Its
``[study] figure`` is :mod:`.figures`'s: MSE against messages exchanged.
"""
