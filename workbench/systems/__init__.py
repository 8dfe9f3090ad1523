"""System set-ups shared by several experiments: asynchronous servers and their staleness
(:mod:`~workbench.systems.asynchronous`), sharded and federated data with traveling chains
(:mod:`~workbench.systems.distributed`), and the downpour and elastic protocols
(:mod:`~workbench.systems.protocols`)."""
