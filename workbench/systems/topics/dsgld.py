"""D-SGLD and SGRLD for LDA on a simulated cluster (seed 004 §4.2, Figures 6–7).

SGRLD (:func:`run_sgrld`, Patterson & Teh 2013) is one chain per replicate on one machine
holding every training document; D-SGLD (:func:`run_dsgld`, seed 004 §3.2) runs S chains per
replicate traveling over S workers. Both make the expanded-mean SGRLD update of
:mod:`workbench.models.lda`; D-SGLD scales the minibatch gradient of shard s by N_s/(q_s n)
(N_s the shard's documents, q_s = τ_s/Σ_z τ_z its selection frequency, n the minibatch),
which is SGRLD's N/n times seed 004's bias correction N_s/(N q_s).

Rounds (seed 004 Algorithm 1 with cyclic rotation): in round r chain c visits worker
(c + r) mod S and makes a trajectory of τ_s steps there on minibatches of that worker's shard
(drawn uniformly without replacement). The chains of each group (``groups``: sizes adding up
to S, consecutive chains; (S,) is D-CC, (1,)*S D-CI, (4,)*5 D-Hybrid of seed 004) then
replace their states by the group's average — at the END of each trajectory, with no extra
noise (seed 004 §4.2: "we did not inject any additional noise") — and hop to their next
worker.

Time (cost model :class:`~workbench.systems.topics.cost.CostModel`): a step on worker s takes
``cost.sgrld_step(tokens of its minibatch, n_sweeps, K, W) / speed_factors[s]``; a chain
starts on a worker at the later of its arrival and the departure of the worker's previous
chain (block by the slowest), and its steps follow one another (running sums from the start);
a group of more than one chain averages when its last member has finished, which takes two
messages ``2 · cost.message(K, W)`` (every member sends its K × W state to one member, at the
same time, then that member sends the average back to all, at the same time), and every
member leaves its worker when the average is back; a hop to another worker takes one message
``cost.message(K, W)`` (a chain that stays on its worker, S = 1, sends nothing).

Why not :mod:`simulators.traveling_chains`: its coupled groups exchange states after every
update and start their trajectories together, and its delays come from latency streams,
while here a group averages once at the end of its trajectories and a step's time depends on
the tokens of its minibatch; the rounds are simulated below instead, with the same cyclic
rotation, block-by-the-slowest rule and balanced plans (:mod:`simulators.load_balancing`).

Adaptive balancing (seed 004 §3.2.2): τ_s = q_s τ̄ S (rounded, at least 1) with
q_s ∝ 1/d_s, d_s the worker's response delay. With this deterministic cost model a worker's
delay per step is its cost over its speed factor, so the measured delays are known in advance
(exactly when documents have equal lengths) and the plan is made once from 1/speed_factors.

Recorded state: a replicate's topics are those of chain ``recorded_chain`` (0 by default); a
chain outside that chain's group never changes it (only its timing matters: its minibatches
are drawn, its steps are not computed). The trace holds, at each evaluation time, the state
after every event of the recorded chain (a step, or its group's averaging) finished at or
before it; the run stops once every replicate's recorded chain has an event after the last
evaluation time, and ``finished`` is the latest of those events. ``updates`` counts the
recorded chain's steps in replicate 0 (replicates draw their own minibatches, so with
documents of unequal lengths their times differ).

Streams (``simulators.seeding.generator(seed, …)``), per replicate r and chain c: minibatches
``("minibatches", r, c)`` (a trajectory's τ minibatches at once: τ rows of one uniform key a
shard document, each row's ``batch_documents`` smallest keys; the same numbers as τ draws of
one row), Gibbs uniforms ``("gibbs", r, c)`` and noise ``("noise", r, c)`` (a step at a time)
and the initial state ``("initial_theta", r, c)``. So replicate r does not depend on how many
run, and SGRLD (chain 0 of one worker holding all documents, its trajectories blocks of
``SGRLD_BLOCK`` steps that change nothing but how many minibatches are drawn at once) is
D-SGLD with S = 1 and τ = 1, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simulators import validation
from simulators.load_balancing import balanced_plan
from simulators.seeding import SeedLike, generator
from workbench.data.corpus import Corpus
from workbench.models import lda
from workbench.systems.topics.arguments import RunArguments, checked_speed_factors
from workbench.systems.topics.cost import CostModel
from workbench.systems.topics.trace import TopicTrace

BALANCING = ("fixed", "adaptive")
SGRLD_BLOCK = 10  # SGRLD's steps drawn at a time (any block gives the same numbers)


def trajectory_plan(speed_factors, trajectory_length: int, balancing: str) -> np.ndarray:
    """τ_s of each worker: ``trajectory_length`` everywhere (``fixed``, an integer), or the
    balanced plan τ_s = round(q_s τ̄ S), q_s ∝ speed factor, with τ̄ = ``trajectory_length``
    (``adaptive``, module docstring; τ̄ may be fractional)."""
    factors = checked_speed_factors(speed_factors)
    if validation.one_of("balancing", balancing, BALANCING) == "fixed":
        length = validation.integer("trajectory_length", trajectory_length, minimum=1)
        return np.full(factors.size, length, dtype=np.int64)
    return balanced_plan(1.0 / factors, validation.positive("trajectory_length",
                                                            trajectory_length))


def run_sgrld(training: Corpus, shards: Sequence[np.ndarray], *, n_topics: int, alpha: float,
              beta: float, cost: CostModel, speed_factors: np.ndarray,
              evaluation_times: np.ndarray, n_replicates: int, seed: SeedLike,
              batch_documents: int = 50, n_sweeps: int = 100, step_a: float,
              step_b: float = 1000.0, step_c: float = 0.6) -> TopicTrace:
    """SGRLD (Patterson & Teh 2013) on one machine: worker 0 (its speed factor) holding every
    training document (the shards concatenated, in order), gradient scale N/n (module
    docstring)."""
    run = RunArguments.check(training, shards, n_topics, alpha, beta, cost, speed_factors,
                             evaluation_times, n_replicates)
    return _simulate(training, [np.concatenate(run.shards)], run.speed_factors[:1],
                     np.array([SGRLD_BLOCK]), (1,), 0, run, cost=cost, seed=seed,
                     batch_documents=batch_documents, n_sweeps=n_sweeps, step_a=step_a,
                     step_b=step_b, step_c=step_c)


def run_dsgld(training: Corpus, shards: Sequence[np.ndarray], *, n_topics: int, alpha: float,
              beta: float, cost: CostModel, speed_factors: np.ndarray,
              evaluation_times: np.ndarray, n_replicates: int, seed: SeedLike,
              batch_documents: int = 50, n_sweeps: int = 100, step_a: float,
              step_b: float = 1000.0, step_c: float = 0.6, trajectory_length: int = 10,
              groups: Sequence[int] | None = None, balancing: str = "fixed",
              recorded_chain: int = 0) -> TopicTrace:
    """D-SGLD for LDA (seed 004 §3.2, §4.2): S chains traveling over S workers by cyclic
    rotation, averaged within groups at the end of each trajectory (module docstring).
    ``groups`` defaults to (S,), D-CC."""
    run = RunArguments.check(training, shards, n_topics, alpha, beta, cost, speed_factors,
                             evaluation_times, n_replicates)
    shards = list(run.shards)
    plan = trajectory_plan(run.speed_factors, trajectory_length, balancing)
    groups = tuple(validation.sizes("groups", (len(shards),) if groups is None else groups,
                                    total=len(shards)))
    recorded = validation.integer("recorded_chain", recorded_chain, minimum=0,
                                  maximum=len(shards) - 1)
    return _simulate(training, shards, run.speed_factors, plan, groups, recorded, run,
                     cost=cost, seed=seed, batch_documents=batch_documents, n_sweeps=n_sweeps,
                     step_a=step_a, step_b=step_b, step_c=step_c)


def _simulate(training: Corpus, shards: list[np.ndarray], factors: np.ndarray, plan: np.ndarray,
              groups: tuple[int, ...], recorded: int, run: RunArguments, *, cost, seed,
              batch_documents, n_sweeps, step_a, step_b, step_c) -> TopicTrace:
    """The rounds of the module docstring; ``plan`` gives τ_s a worker, ``run`` the checked
    common arguments (:class:`~.arguments.RunArguments`)."""
    n_topics, alpha, beta = run.n_topics, run.alpha, run.beta
    times, n_replicates = run.evaluation_times, run.n_replicates
    sizes = np.array([s.size for s in shards])
    batch = validation.integer("batch_documents", batch_documents, minimum=1,
                               maximum=int(sizes.min()))
    n_sweeps = validation.integer("n_sweeps", n_sweeps, minimum=1)
    step_a = validation.positive("step_a", step_a)
    step_b = validation.positive("step_b", step_b)
    step_c = validation.non_negative("step_c", step_c)

    n_workers, size = len(shards), training.vocabulary_size
    lengths = np.diff(training.offsets)
    scales = sizes / (plan / plan.sum() * batch)  # N_s / (q_s n)
    message = cost.message(n_topics, size)
    bounds = np.cumsum((0,) + groups)
    group_of = np.searchsorted(bounds, np.arange(n_workers), side="right") - 1
    computed = np.arange(bounds[group_of[recorded]], bounds[group_of[recorded] + 1])
    mine = int(np.flatnonzero(computed == recorded)[0])  # the recorded chain among them
    R, G = n_replicates, computed.size
    batches = [[generator(seed, "minibatches", r, c) for c in range(n_workers)]
               for r in range(R)]
    uniform_rngs = [[generator(seed, "gibbs", r, int(c)) for c in computed] for r in range(R)]
    noise_rngs = [[generator(seed, "noise", r, int(c)) for c in computed] for r in range(R)]
    theta = np.stack([lda.initial_theta(R, n_topics, size, seed, chain=int(c))
                      for c in computed], axis=1)  # (R, G, K, W)
    steps = np.zeros(G, dtype=np.int64)

    n_times = times.size
    topics = np.empty((n_times, R, n_topics, size))
    updates = np.zeros(n_times, dtype=np.int64)
    recorded_up_to = np.zeros(R, dtype=np.int64)  # evaluations recorded so far
    completed = np.zeros(R)  # the event after which a replicate's last evaluation was known

    def record(event_times: np.ndarray) -> bool:
        """Record the recorded chain's current state at the evaluation times before each
        replicate's next event; True once every replicate is complete."""
        upto = np.searchsorted(times, event_times, side="left")
        for r in np.flatnonzero(upto > recorded_up_to):
            topics[recorded_up_to[r]:upto[r], r] = lda.topics_of(theta[r, mine])
            if r == 0:
                updates[recorded_up_to[0]:upto[0]] = steps[mine]
            if upto[r] == n_times:
                completed[r] = event_times[r]
        recorded_up_to[:] = np.maximum(recorded_up_to, upto)
        return bool((recorded_up_to == n_times).all())

    arrival, worker_free = np.zeros((R, n_workers)), np.zeros((R, n_workers))
    chains = np.arange(n_workers)
    round_index = 0
    while True:
        workers = (chains + round_index) % n_workers
        taus = plan[workers]
        documents, finish_times = [], []
        start = np.maximum(arrival, worker_free[:, workers])
        for r in range(R):
            documents.append([])
            finish_times.append([])
            for c in chains:
                shard = shards[workers[c]]
                keys = batches[r][c].random((taus[c], shard.size))
                drawn = shard[np.argsort(keys, axis=1, kind="stable")[:, :batch]]
                documents[r].append(drawn)
                durations = cost.sgrld_step(lengths[drawn].sum(axis=1), n_sweeps, n_topics,
                                            size) / factors[workers[c]]
                finish_times[r].append(np.cumsum(np.concatenate(([start[r, c]], durations)))[1:])
        finish = np.array([[f[-1] for f in row] for row in finish_times])
        departure = finish.copy()
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            if b - a > 1:
                departure[:, a:b] = finish[:, a:b].max(axis=1, keepdims=True) + 2.0 * message
        if _trajectories(theta, steps, computed, mine, taus, documents, finish_times, record,
                         uniform_rngs, noise_rngs, scales[workers], training, alpha, beta,
                         n_sweeps, step_a, step_b, step_c):
            break
        if G > 1:
            if record(departure[:, recorded]):
                break
            theta[:] = theta.mean(axis=1, keepdims=True)
        worker_free[:, workers] = departure
        hops = np.where((chains + round_index + 1) % n_workers != workers, message, 0.0)
        arrival = departure + hops
        round_index += 1
    return TopicTrace(times=times, topics=topics, updates=updates, finished=float(completed.max()))


def _trajectories(theta, steps, computed, mine, taus, documents, finish_times, record,
                  uniform_rngs, noise_rngs, scales, training, alpha, beta, n_sweeps, step_a,
                  step_b, step_c) -> bool:
    """The computed chains' trajectories of one round, step by step in lockstep (a chain
    whose trajectory is shorter sits out its last steps); True once the trace is complete."""
    R, _, n_topics, size = theta.shape
    lengths = np.diff(training.offsets)
    recorded_tau = taus[computed[mine]]
    for j in range(int(taus[computed].max())):
        if j < recorded_tau and record(np.array([finish_times[r][computed[mine]][j]
                                                 for r in range(R)])):
            return True
        active = np.flatnonzero(taus[computed] > j)
        rows = [(r, g) for r in range(R) for g in active]
        drawn = np.array([documents[r][computed[g]][j] for r, g in rows])
        tokens = lengths[drawn].sum(axis=1)
        state = theta[:, active].reshape(-1, n_topics, size)
        expected = lda.expected_counts(
            lda.topics_of(state), training, drawn, alpha=alpha, n_sweeps=n_sweeps,
            uniforms=[uniform_rngs[r][g].random((n_sweeps + 1, t))
                      for (r, g), t in zip(rows, tokens, strict=True)])
        normals = np.stack([noise_rngs[r][g].standard_normal((n_topics, size)) for r, g in rows])
        row_steps = np.tile(steps[active], R)
        theta[:, active] = lda.sgrld_step(
            state, expected, np.tile(scales[computed[active]], R),
            lda.step_size(row_steps, step_a, step_b, step_c), beta,
            normals).reshape(R, active.size, n_topics, size)
        steps[active] += 1
    return False
