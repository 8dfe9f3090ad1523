"""The figure of ``protocols-networks`` (seed 003 Appendix C, Figures 1-3): its study file is
``workbench/studies/library/protocols-networks.toml``."""
