"""What seed 001's experiments on real models share (§5.1-§5.2, Figures 2-4).

- :mod:`.system`: the asynchronous parameter-server system of Appendix A (one or several
  servers, each with its workers) built from an experiment's latency parameters, and the time
  speed-up its latencies predict;
- :mod:`.models`: Bayesian logistic regression on a9a-shaped (or LIBSVM) data and the digits
  networks, each with a held-out set;
- :mod:`.run`: a model replayed under a simulated schedule over replicates and servers, scored
  by held-out test functions on thinned draws; servers averaged at test time (§3.3);
- :mod:`.summaries`: mean and variance of the held-out φ̂ over replicates, with errors;
- :mod:`.speedup`: iteration and time speed-ups, the fitted speed-up slope and the bend.
"""
