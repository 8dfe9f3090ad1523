"""Topic models on simulated distributed systems (seed 004 §4.2): D-SGLD for LDA on traveling
chains, SGRLD on one machine, and the count-based baselines AD-LDA and Async-LDA, all timed by
one declared cost model (:mod:`.cost`)."""
