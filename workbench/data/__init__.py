"""Data sets for the models, never downloaded: user files, packages that ship data, generators."""
