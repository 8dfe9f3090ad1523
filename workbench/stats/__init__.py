"""From replicates to numbers: bias, MSE and variance of φ̂ with calibrated intervals
(:mod:`~workbench.stats.estimators`) and convergence diagnostics of thinned draws — ESS, split
R-hat, MCSE, kernel Stein discrepancy (:mod:`~workbench.stats.diagnostics`)."""
