"""FederatedRounds.simulate (events on a (round, slot) grid per chain, one running sum per chain,
a stable merge by time) against the per-chain formulation it replaced, kept here: every column
bit for bit, ties included."""

import numpy as np
import pytest

from simulators.federated import FederatedRounds
from simulators.latency import LatencyModel, LatencyStreams, WorkerTiming
from simulators.schedule import GRADIENT, HOP, ROW_FIELDS, Schedule


def _replaced_chain(system, chain, n_rounds, seed):
    local, n_clients = system.local_updates, system.n_clients
    clients = system.client_sequence(chain, n_rounds, seed)
    streams = LatencyStreams(system.timing, [(chain, s) for s in range(n_clients)], seed)
    update_client = np.repeat(clients, local)
    latency = np.empty(update_client.size)
    for s in range(n_clients):
        where = np.flatnonzero(update_client == s)
        latency[where] = streams.take(s, where.size)
    rounds_at = np.arange(n_rounds) * local
    increments = np.insert(latency, rounds_at, system.hop_time)
    times = np.cumsum(np.concatenate(([0.0], increments)))
    is_hop = np.zeros(increments.size, dtype=bool)
    is_hop[rounds_at + np.arange(n_rounds)] = True
    begin, end = times[:-1], times[1:]
    start, finish = begin[~is_hop], end[~is_hop]
    departure, arrival = begin[is_hop], end[is_hop]
    n = update_client.size
    gradient_rows = {
        "kind": np.full(n, GRADIENT), "worker": update_client, "version_read": np.arange(n),
        "applied": np.ones(n, dtype=bool), "start_time": start, "finish_time": finish,
        "time": finish,
    }
    hop_rows = {
        "kind": np.full(n_rounds, HOP), "worker": clients,
        "version_read": np.arange(n_rounds) * local, "applied": np.zeros(n_rounds, bool),
        "start_time": departure, "finish_time": departure, "time": arrival,
    }
    columns = {name: np.insert(gradient_rows[name], rounds_at, hop_rows[name])
               for name in gradient_rows}
    total = n + n_rounds
    columns.update({
        "server": np.full(total, chain), "shard": columns["worker"],
        "staleness": np.zeros(total, dtype=np.int64),
        "shard_frequency": np.asarray(system.client_probabilities)[columns["worker"]],
    })
    return columns


def _replaced_simulate(system, n_updates, seed):
    n_rounds = -(-n_updates // system.local_updates)
    pieces = [_replaced_chain(system, c, n_rounds, seed) for c in range(system.n_chains)]
    columns = {name: np.concatenate([p[name] for p in pieces]) for name in pieces[0]}
    order = np.lexsort((columns["server"], columns["time"]))
    return Schedule(**{name: values[order] for name, values in columns.items()},
                    attrs=system.describe())


SYSTEMS = {
    # constant delays and no hop time: many ties within and across chains
    "ties": FederatedRounds((0.25,) * 4, 1, 6),
    "stragglers-hops": FederatedRounds(
        (0.5, 0.3, 0.2), 7, 3,
        WorkerTiming(LatencyModel("exponential", 2.0), (1.0, 0.5, 2.0), 0.1, 3.0), 0.5),
    "gamma": FederatedRounds((0.7, 0.3), 3, 5, WorkerTiming(LatencyModel("gamma", 1.0, 0.5))),
    "one-client": FederatedRounds((1.0,), 10, 2, WorkerTiming(LatencyModel("lognormal", 1.0, 0.7)),
                                  hop_time=2.0),
}


def _same(a, b):
    return all(getattr(a, f).dtype == getattr(b, f).dtype
               and getattr(a, f).tobytes() == getattr(b, f).tobytes() for f in ROW_FIELDS)


@pytest.mark.parametrize("name", sorted(SYSTEMS))
@pytest.mark.parametrize("n_updates", [1, 5, 1003])
def test_simulate_equals_the_replaced_formulation_bit_for_bit(name, n_updates):
    system = SYSTEMS[name]
    new, old = system.simulate(n_updates, 11), _replaced_simulate(system, n_updates, 11)
    assert _same(new, old) and new.attrs == old.attrs


def test_negative_control_an_unstable_merge_or_another_seed_differs():
    system = SYSTEMS["ties"]
    new = system.simulate(50, 11)
    assert not _same(new, system.simulate(50, 12))
    # ties broken by anything but chain order (here: the latest chain first) change the rows
    columns = {f: getattr(new, f) for f in ROW_FIELDS}
    flipped = np.lexsort((-columns["server"], columns["time"]))
    shuffled = Schedule(**{f: v[flipped] for f, v in columns.items()}, attrs=new.attrs)
    assert not _same(new, shuffled)
