"""The deterministic event queue at the core of every simulated system.

Events are ordered by (time, sequence number): the sequence number is the order in which
events were pushed, so events at the same simulated time always resolve in the same order,
whatever the platform or the heap's internal layout.
"""

from __future__ import annotations

import heapq
from typing import Any


class EventQueue:
    """A min-heap of ``(time, sequence, payload)``; ties in time resolve by push order."""

    __slots__ = ("_heap", "_sequence")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Any]] = []
        self._sequence = 0

    def push(self, time: float, payload: Any) -> None:
        heapq.heappush(self._heap, (time, self._sequence, payload))
        self._sequence += 1

    def pop(self) -> tuple[float, Any]:
        time, _, payload = heapq.heappop(self._heap)
        return time, payload

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
