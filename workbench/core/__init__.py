"""The vocabulary every layer of the workbench shares, and nothing else of it imports.

- :mod:`~workbench.core.parameters`: an experiment's parameters, declared once (default, help,
  validation), and their TOML form;
- :mod:`~workbench.core.validators`: the checks those declarations use;
- :mod:`~workbench.core.phi`: the test functions φ whose sample averages φ̂ the engine
  accumulates;
- :mod:`~workbench.core.phi_expressions`: test functions a study writes in θ's components
  (``"theta[0]*theta[1]"``), parsed through the bound whitelist, never executed;
- :mod:`~workbench.core.specs`: how a model, gradient estimator or sampler describes itself to
  the engine's compiled path (plain records; importing them pulls in no engine).
"""
