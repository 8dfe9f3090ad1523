"""Real asynchronous runs: a parameter server whose workers are real processes (issue 17).

- :mod:`~workbench.realtime.streams`: the random numbers a real run draws, exactly those the
  engine's replay of its schedule draws;
- :mod:`~workbench.realtime.sequencer`: a gradient's slot in the application order, fixed when
  it arrives; drops beyond the staleness bound; slots of dead workers put back;
- :mod:`~workbench.realtime.server`: settings, the apply loop and the recorded
  :class:`~simulators.schedule.Schedule`; :func:`~workbench.realtime.server.replay_run`;
- :mod:`~workbench.realtime.processes`: the one-machine server (forked workers, shared memory);
- :mod:`~workbench.realtime.dask_cluster`: the same with Dask workers, the server in the client;
- :mod:`~workbench.realtime.calibration`: the simulator's latency model fitted to a recorded run,
  and real against simulated staleness and speed-ups.
"""
