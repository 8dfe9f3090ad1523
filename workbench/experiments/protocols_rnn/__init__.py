"""The figure of ``protocols-rnn`` (seed 003 Appendix C, Table 1): its study file is
``workbench/studies/library/protocols-rnn.toml``."""
