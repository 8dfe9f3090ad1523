"""The figure of ``dsgld-imbalance`` (seed 004 §4.1, Figure 2(a)-(b)).

The experiment is the shipped study file ``workbench/studies/library/dsgld-imbalance.toml``:
imbalanced shards visited unevenly on traveling chains (``trajectory_lengths`` per shard), the
N_s/(N q_s) correction swept as two arms on one schedule, judged by the oracle, posterior and
limit check kinds (:mod:`workbench.studies.sharded_judgements`,
:mod:`workbench.studies.limit_judgements`). Its ``[study] figure`` is :mod:`.figures`'s.
"""
