"""What happens: models, data, samplers, engine, oracles, estimators, experiments and CLI."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sgmcmc-workbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
