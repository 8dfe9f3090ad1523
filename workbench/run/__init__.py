"""Running experiments: the :class:`~workbench.run.experiment.Experiment` protocol every
experiment implements, the runner that computes its sweep points through the result store
(:mod:`~workbench.run.runner`, :mod:`~workbench.run.sweep_tasks`), where the tasks run
(:mod:`~workbench.run.executors`, :mod:`~workbench.run.pool`), progress bars
(:mod:`~workbench.run.progress`), and the main job that runs, stores and judges experiments
(:mod:`~workbench.run.main_job`)."""
