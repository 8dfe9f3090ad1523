"""The traveling-chain round loop, compiled (issue 15; the system is seed 004 §3.2, Algorithm 1,
described in :mod:`simulators.traveling_chains`).

:func:`advance` runs rounds (fixed plan: a round's groups in index order; adaptive plan: a
round's trajectories in order of their starts, then chain) until every chain has made the
updates asked for, or until it needs something only Python can give: the next permutation
candidate assignments (permutations drawn by numpy's ``Generator.permutation``; a round takes
the first candidate that leaves no chain on the worker it just left), a latency refill (drawn by
:class:`~simulators.latency.LatencyTable` with the sizes it always draws), more room for
events, or a measured delay that validation rejects. It then returns a request code; the
caller serves the request and calls again, and the kernel resumes where it stopped (a fixed
round is done whole or not started; an adaptive round keeps its place, and re-planning at a
start is idempotent, so a trajectory interrupted before its latencies resumes unchanged).

Every number is the one the per-trajectory formulation gives, to the bit, without fastmath:

- a group starts at the latest of its members' hop arrivals (departure + hop time) and of
  their workers' free times;
- update u of a group starts at t_u; member m's duration is its latency times the product, in
  order, of its worker's delay-change factors with change time <= t_u (no product without
  changes); t_{u+1} = t_u + max_m duration (+ the exchange time for a coupled group), one
  addition per update in update order (``np.cumsum`` along a row adds the same way); member m
  finishes at t_u + its duration;
- the delay measured on an adaptive trajectory is ``np.mean`` of (finish - start) over its
  updates: numpy's pairwise summation (:func:`pairwise_sum`) divided by the count; the delay
  monitor (:class:`simulators.load_balancing.DelayMonitor`) is replayed with the same sums,
  divisions and rounding (``_replan``).

Events are written in the order they happen, each with its chain and its row among that
chain's events (a chain at version v in round r: its hop is row v + r - 1, update u is row
v + r + u); :func:`columns` places them chain after chain and sorts them stably by time.
"""

from __future__ import annotations

import numba
import numpy as np

from simulators.schedule import GRADIENT, HOP

DONE, NEED_CANDIDATES, NEED_LATENCIES, NEED_ROOM, BAD_DELAY = range(5)

# state slots
ROUND, POSITION, N_REPLANS, N_PENDING, CANDIDATE, ASSIGNED = range(6)


@numba.njit(cache=True)
def _block_sum(values, start, count):  # pragma: no cover - compiled
    """numpy's pairwise_sum for count <= 128: a running sum below 8 terms, else 8 interleaved
    partial sums combined as a tree, then the tail in sequence. Callers pass ``start`` and
    ``count`` as int64, never a literal: numba compiles a helper called with a literal 0 once
    more for it (seconds of a cold start)."""
    if count < 8:
        total = 0.0
        for k in range(start, start + count):
            total += values[k]
        return total
    p0, p1, p2, p3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    p4, p5, p6, p7 = values[start + 4], values[start + 5], values[start + 6], values[start + 7]
    tail = count - count % 8
    for k in range(start + 8, start + tail, 8):
        p0 += values[k]
        p1 += values[k + 1]
        p2 += values[k + 2]
        p3 += values[k + 3]
        p4 += values[k + 4]
        p5 += values[k + 5]
        p6 += values[k + 6]
        p7 += values[k + 7]
    total = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))
    for k in range(start + tail, start + count):
        total += values[k]
    return total


@numba.njit(cache=True)
def pairwise_sum(values, count):  # pragma: no cover - compiled
    """``np.sum(values[:count])`` to the bit: above 128 terms numpy adds the sums of two halves
    (the first rounded down to a multiple of 8); the recursion is walked with an explicit stack
    (numba's cache does not take recursive functions), and IEEE addition is commutative, so
    the order in which the halves' sums meet does not matter."""
    if count <= 128:
        return _block_sum(values, np.int64(0), count)  # not a literal (_block_sum)
    starts = np.empty(192, np.int64)
    counts = np.empty(192, np.int64)  # -1: add the two sums on top of the value stack
    sums = np.empty(96)
    starts[0], counts[0] = 0, count
    top, n_sums = 1, 0
    while top > 0:
        top -= 1
        first, size = starts[top], counts[top]
        if size < 0:
            n_sums -= 1
            sums[n_sums - 1] = sums[n_sums - 1] + sums[n_sums]
        elif size <= 128:
            sums[n_sums] = _block_sum(values, first, size)
            n_sums += 1
        else:
            half = size // 2
            half -= half % 8
            counts[top] = -1
            starts[top + 1], counts[top + 1] = first + half, size - half
            starts[top + 2], counts[top + 2] = first, half
            top += 3
    return sums[0]


@numba.njit(cache=True)
def _factor(worker, time, change_times, change_factors, change_counts):  # pragma: no cover
    """The product, in order, of the worker's delay factors changed at or before ``time``."""
    factor = 1.0
    for k in range(change_counts[worker]):
        if change_times[worker, k] <= time:
            factor *= change_factors[worker, k]
    return factor


@numba.njit(cache=True)
def _replan(measured, planned_with, plan, frequencies, mean_length, threshold,
            scratch):  # pragma: no cover - compiled
    """``DelayMonitor.update`` and, when it re-plans, ``plan_frequencies``; True on a re-plan.
    ``scratch``: three arrays of n_workers floats."""
    n = measured.size
    known, delays, speeds = scratch[0], scratch[1], scratch[2]
    n_known = np.int64(0)  # not a literal (_block_sum)
    for w in range(n):
        if np.isfinite(measured[w]):
            known[n_known] = measured[w]
            n_known += 1
    fill = pairwise_sum(known, n_known) / n_known if n_known else 1.0
    for w in range(n):
        delays[w] = measured[w] if np.isfinite(measured[w]) else fill
    mean_now = pairwise_sum(delays, n) / n
    mean_before = pairwise_sum(planned_with, n) / n
    worst = 0.0
    for w in range(n):
        moved = abs((delays[w] / mean_now) / (planned_with[w] / mean_before) - 1.0)
        if not moved <= worst:  # np.max: the largest, NaN if any
            worst = moved
    if worst <= threshold:
        return False
    for w in range(n):
        planned_with[w] = delays[w]
        speeds[w] = 1.0 / delays[w]
    total_speed = pairwise_sum(speeds, n)
    total_length = 0
    for w in range(n):
        length = np.floor(speeds[w] / total_speed * mean_length * n + 0.5)
        plan[w] = 1 if not length > 1.0 else np.int64(length)
        total_length += plan[w]
    for w in range(n):
        frequencies[w] = plan[w] / total_length
    return True


@numba.njit(cache=True)
def _record(events, times, chain, row, worker, kind, version, start, finish, time,
            frequency):  # pragma: no cover - compiled
    """Row ``row`` of the chain's events: ``events[chain, row]`` int64 (worker, kind, version),
    ``times[chain, row]`` float64 (start, finish, time, shard frequency)."""
    events[chain, row, 0], events[chain, row, 1], events[chain, row, 2] = worker, kind, version
    times[chain, row, 0], times[chain, row, 1] = start, finish
    times[chain, row, 2], times[chain, row, 3] = time, frequency


@numba.njit(cache=True)
def advance(n_updates, adaptive, cyclic, hop_time, candidates, n_candidates, group_first,
            group_size, coupling, values, positions, ends, change_times, change_factors,
            change_counts, version, departure, worker_free, round_workers, round_starts,
            round_order, plan, frequencies, measured, planned_with, mean_length, threshold,
            pending, events, times, state, request, scratch):  # pragma: no cover - compiled
    """Run rounds until done or until a request (module docstring); returns the code.

    ``plan``/``frequencies``: the fixed plan, or the adaptive plan in force, and its q_s.
    ``pending``: (3, n_chains) end, worker and delay of the measurements not yet available
    (the first ``state[N_PENDING]`` columns). ``events``/``times``: (n_chains, rows, fields),
    see :func:`_record`. ``request``: on NEED_LATENCIES (worker, count); on NEED_ROOM (the rows
    a chain needs, the trajectory length ``scratch`` must hold). ``scratch`` (5, width): row 0
    the rejected delay on BAD_DELAY, row 1 a trajectory's (finish - start) per update, rows
    2-4 :func:`_replan`'s; width at least n_workers and the longest trajectory.
    """
    n_chains = version.size
    n_workers = worker_free.size
    capacity = events.shape[1]
    while True:
        r = state[ROUND]
        hop = hop_time if r > 0 else 0.0
        if state[POSITION] < 0:  # a new round
            lowest = version[0]
            for c in range(1, n_chains):
                lowest = min(lowest, version[c])
            if lowest >= n_updates:
                return DONE
            if state[ASSIGNED] <= r:  # the round's workers are not chosen yet
                if cyclic:
                    for c in range(n_chains):
                        round_workers[c] = (c + r) % n_workers
                else:  # the next candidate that moves every chain off its last worker
                    while True:
                        if state[CANDIDATE] >= n_candidates:
                            return NEED_CANDIDATES
                        candidate = candidates[state[CANDIDATE]]
                        state[CANDIDATE] += 1
                        moves = True
                        for c in range(n_chains):
                            if r > 0 and candidate[c] == round_workers[c]:
                                moves = False
                        if moves:
                            break
                    for c in range(n_chains):
                        round_workers[c] = candidate[c]
                state[ASSIGNED] = r + 1
            if not adaptive:
                for c in range(n_chains):
                    w = round_workers[c]
                    if positions[w] + plan[w] > ends[w]:
                        request[0], request[1] = w, plan[w]
                        return NEED_LATENCIES
                    if version[c] + r + plan[w] > capacity:
                        request[0], request[1] = version[c] + r + plan[w], 0
                        return NEED_ROOM
                _fixed_round(r, hop, group_first, group_size, coupling, values, positions,
                             change_times, change_factors, change_counts, version, departure,
                             worker_free, round_workers, plan, frequencies, events, times)
                state[ROUND] = r + 1
                continue
            for c in range(n_chains):  # adaptive: start order by (start, chain)
                round_starts[c] = max(departure[c] + hop, worker_free[round_workers[c]])
                k = c
                while k > 0 and round_starts[round_order[k - 1]] > round_starts[c]:
                    round_order[k] = round_order[k - 1]
                    k -= 1
                round_order[k] = c
            state[POSITION] = 0
        while state[POSITION] < n_chains:
            c = round_order[state[POSITION]]
            w = round_workers[c]
            start = round_starts[c]
            observed = False  # measurements available at the start, in heap order
            while state[N_PENDING] > 0:
                first = 0  # the smallest (end, worker, delay), as heapq pops them
                for k in range(1, state[N_PENDING]):
                    for i in range(3):
                        if pending[i, k] != pending[i, first]:
                            if pending[i, k] < pending[i, first]:
                                first = k
                            break
                if not pending[0, first] <= start:
                    break
                delay = pending[2, first]
                if not 0.0 < delay < np.inf:
                    scratch[0, 0] = delay
                    return BAD_DELAY
                measured[np.int64(pending[1, first])] = delay
                last = state[N_PENDING] - 1
                for i in range(3):
                    pending[i, first] = pending[i, last]
                state[N_PENDING] = last
                observed = True
            if observed and _replan(measured, planned_with, plan, frequencies, mean_length,
                                    threshold, scratch[2:5]):
                state[N_REPLANS] += 1
            length = plan[w]
            if positions[w] + length > ends[w]:
                request[0], request[1] = w, length
                return NEED_LATENCIES
            if length > scratch.shape[1] or version[c] + r + length > capacity:
                request[0], request[1] = version[c] + r + length, length
                return NEED_ROOM
            if r > 0:
                _record(events, times, c, version[c] + r - 1, w, HOP, version[c],
                        departure[c], departure[c], departure[c] + hop, frequencies[w])
            spent = scratch[1]
            t = start
            for u in range(length):
                d = values[w, positions[w] + u]
                if change_counts[w] > 0:
                    d = d * _factor(w, t, change_times, change_factors, change_counts)
                finish = t + d
                spent[u] = finish - t
                _record(events, times, c, version[c] + r + u, w, GRADIENT,
                        version[c] + u, t, finish, t + d, frequencies[w])
                t = t + d
            positions[w] += length
            version[c] += length
            departure[c] = t
            worker_free[w] = t
            k = state[N_PENDING]
            pending[0, k], pending[1, k] = t, w
            pending[2, k] = pairwise_sum(spent, length) / length  # np.mean
            state[N_PENDING] = k + 1
            state[POSITION] += 1
        state[POSITION] = -1
        state[ROUND] = r + 1


@numba.njit(cache=True)
def _fixed_round(r, hop, group_first, group_size, coupling, values, positions, change_times,
                 change_factors, change_counts, version, departure, worker_free,
                 round_workers, plan, frequencies, events, times):  # pragma: no cover
    """Every group's trajectory of a fixed-plan round (all members of a group share a length)."""
    for g in range(group_first.size):
        first, size = group_first[g], group_size[g]
        start = -np.inf
        for c in range(first, first + size):
            start = max(start, max(departure[c] + hop, worker_free[round_workers[c]]))
        length = plan[round_workers[first]]
        if r > 0:
            for c in range(first, first + size):
                w = round_workers[c]
                _record(events, times, c, version[c] + r - 1, w, HOP, version[c],
                        departure[c], departure[c], departure[c] + hop, frequencies[w])
        t = start
        for u in range(length):
            step = 0.0
            for c in range(first, first + size):
                w = round_workers[c]
                d = values[w, positions[w] + u]
                if change_counts[w] > 0:
                    d = d * _factor(w, t, change_times, change_factors, change_counts)
                step = d if c == first else max(step, d)
                row = version[c] + r + u
                events[c, row, 0], events[c, row, 1], events[c, row, 2] = (
                    w, GRADIENT, version[c] + u)
                times[c, row, 0], times[c, row, 1], times[c, row, 3] = t, t + d, frequencies[w]
            if size > 1:
                step = step + coupling[g]
            t_next = t + step
            for c in range(first, first + size):
                times[c, version[c] + r + u, 2] = t_next
            t = t_next
        for c in range(first, first + size):
            w = round_workers[c]
            positions[w] += length
            version[c] += length
            departure[c] = t
            worker_free[w] = t


@numba.njit(cache=True)
def chain_major_times(times, n_rows):  # pragma: no cover - compiled
    """The events' times placed chain after chain, each chain's rows in order."""
    placed = np.empty(n_rows.sum())
    k = 0
    for c in range(n_rows.size):
        for row in range(n_rows[c]):
            placed[k] = times[c, row, 2]
            k += 1
    return placed


@numba.njit(cache=True)
def columns(events, times, n_rows, order, server, worker, kind, version, start, finish, time,
            frequency):  # pragma: no cover - compiled
    """The schedule's columns: event ``order[n]`` of the chain-major placement
    (:func:`chain_major_times`) in row n."""
    first = np.zeros(n_rows.size + 1, np.int64)
    for c in range(n_rows.size):
        first[c + 1] = first[c] + n_rows[c]
    chain_of = np.empty(order.size, np.int64)
    for c in range(n_rows.size):
        chain_of[first[c]:first[c + 1]] = c
    for n in range(order.size):
        c = chain_of[order[n]]
        row = order[n] - first[c]
        server[n], worker[n], kind[n] = c, events[c, row, 0], events[c, row, 1]
        version[n] = events[c, row, 2]
        start[n], finish[n] = times[c, row, 0], times[c, row, 1]
        time[n], frequency[n] = times[c, row, 2], times[c, row, 3]
