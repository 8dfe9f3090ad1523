"""The shipped study files: the built-in experiments that are declarations."""

from __future__ import annotations

from pathlib import Path

from workbench.studies.study import Study
from workbench.studies.study import load as load_file

DIRECTORY = Path(__file__).parent


def path(name: str) -> Path:
    return DIRECTORY / f"{name}.toml"


def load(name: str) -> Study:
    return load_file(path(name))
