"""Shared layer of the protocol experiments (seed 003): one protocol run on the Gaussian mean,
judged against its exact oracle (:mod:`.run`), and the checks every such run gets
(:mod:`.checks`)."""
