"""Target models: data, exact posteriors where they exist, and stochastic-gradient estimators."""
