"""Studies: an experiment declared in one TOML file (model, system, sampler, run, sweep,
checks and the user's own bounds), run by the same engine, store, checks and dashboard as the
built-in experiments. See :mod:`workbench.studies.study` for the file, and ``examples/``."""
