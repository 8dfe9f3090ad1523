"""A run against a fixture recorded on another machine: bit for bit where the machine does
not matter, to rounding where it does.

The ported experiments' fixtures hold a sha256 digest of every variable (:func:`digests`) of
the datasets the removed code made, and the verdicts with their observed values, on the
machine that recorded them. The digests hold on machines like it. Elsewhere some floating-point
variables differ in their last bits: OpenBLAS picks its kernels, and with them the order of a
product's sums, by CPU, and numpy's exp, log and cbrt (and the FFTs behind the effective
sample sizes) have one SIMD version per instruction set (AVX-512, AVX2, none). On an AMD EPYC
without AVX-512 (2026-11-30), 21 of the 26 cases had such variables (intervals, kernel Stein
discrepancies, solved stationary moments, a network's draws); with numpy's AVX2 paths and
OpenBLAS's Haswell kernels turned off there, 18 had more (effective sample sizes, FSGLD's
draws through its fitted surrogates).

So ``fixtures/platform_sketches.json`` keeps, for every case and floating-point variable, a
sketch of the values this checkout computed on that machine (:func:`sketch`: where the values
are NaN or infinite, the sum of their magnitudes and three fixed random projections), recorded
where every variable not listed above still matched its digest. A float variable whose digest
differs must match its sketch within :data:`PLATFORM_RTOL` (a random projection moves by more
than that when any value moves by more than that fraction of the total magnitude, with
probability one; :data:`RANK_RTOL` for rank-normalised diagnostics); any other variable must
match its digest. Verdicts must have the same checks and words, and observed values within
:data:`PLATFORM_RTOL`.

To record (after a deliberate change of values, or for a new case):
``WORKBENCH_RECORD_PLATFORM_SKETCHES=1 python -m pytest tests/studies/test_studies.py -k
"bit_for_bit or what_the_seed_fixed"``; every other check still applies while recording.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np

PLATFORM_SKETCHES = Path(__file__).parent / "fixtures" / "platform_sketches.json"
#: how far a variable computed through BLAS, numpy's SIMD functions or FFTs may move between
#: machines, as a fraction of its total magnitude (last-bit differences, grown by sums, solves
#: and chains that replay them: at most 3e-15 in the distributed, figure and bound-design
#: cases between the two platforms named above)
PLATFORM_RTOL = 1e-9
#: the same for rank-normalised diagnostics (R-hat, bulk and tail ESS): two draws equal to
#: rounding can swap ranks between machines (R-hat moved by 2e-3 of its total: measured)
RANK_RTOL = 1e-2
RANK_BASED = ("rhat", "ess_bulk", "ess_tail")
RECORD = os.environ.get("WORKBENCH_RECORD_PLATFORM_SKETCHES") == "1"
N_PROJECTIONS = 3


def digests(dataset) -> dict:
    """sha256 of every variable's bytes, with its dims and dtype (how the fixtures were made)."""
    out = {}
    for name in sorted(dataset.variables, key=str):
        variable = dataset.variables[name]
        values = np.asarray(variable.values)
        if values.dtype.kind in "OUS":
            data = "\x1f".join(map(str, values.ravel())).encode()
        else:
            data = np.ascontiguousarray(values).tobytes()
        out[str(name)] = [list(variable.dims), str(values.dtype),
                          hashlib.sha256(data).hexdigest()]
    return out


def sketch(values) -> list:
    """[digest of where ``values`` are NaN or ±inf, Σ|x|, then Σ_i w_ki x_i for k < 3]: the
    sums over the finite values, w standard normal from a generator seeded by the size."""
    x = np.asarray(values, dtype=float).ravel()
    finite = np.isfinite(x)
    pattern = np.where(finite, 0, np.where(np.isnan(x), 2, np.sign(x))).astype(np.int8)
    x = np.where(finite, x, 0.0)
    return [hashlib.sha256(pattern.tobytes()).hexdigest()[:16], float(np.abs(x).sum()),
            *(float(p) for p in _projections(x.size) @ x)]


def _projections(size: int) -> np.ndarray:
    """The sketch's fixed random weights for ``size`` values, one row a projection."""
    return np.random.default_rng(size).standard_normal((N_PROJECTIONS, size))


def _matches(values, recorded: list, rtol: float) -> bool:
    """Whether ``values`` give ``recorded`` (a :func:`sketch`) within ``rtol``."""
    now = sketch(values)
    x = np.abs(np.where(np.isfinite(values), values, 0.0)).ravel()
    scales = [x.sum(), *(np.abs(_projections(x.size)) @ x)]
    return now[0] == recorded[0] and all(
        abs(a - b) <= rtol * scale
        for a, b, scale in zip(now[1:], recorded[1:], scales, strict=True))


def _stored() -> dict:
    return json.loads(PLATFORM_SKETCHES.read_text()) if PLATFORM_SKETCHES.exists() else {}


def assert_reproduces(dataset, recorded: dict, case: str, *, complete: bool = True) -> None:
    """Every variable of ``recorded`` (name: [dims, dtype, digest]) matches ``dataset``'s: its
    digest, or, for a floating-point variable, ``case``'s platform sketch to rounding (module
    docstring). ``complete``: ``dataset`` has no other variables."""
    now = digests(dataset)
    if complete:
        assert sorted(now) == sorted(recorded), sorted(set(now) ^ set(recorded))
    assert set(recorded) <= set(now), sorted(set(recorded) - set(now))
    for name in recorded:
        assert now[name][:2] == recorded[name][:2], (name, now[name][:2], recorded[name][:2])
    floats = [name for name in recorded if recorded[name][1].startswith("float")]
    if RECORD:
        stored = _stored()
        stored[case] = {name: sketch(dataset[name].values) for name in floats}
        PLATFORM_SKETCHES.write_text("{\n" + ",\n".join(
            f"{json.dumps(key)}: {json.dumps(stored[key], sort_keys=True)}"
            for key in sorted(stored)) + "\n}\n")
    sketches = _stored().get(case, {})
    differing = [name for name in recorded if now[name] != recorded[name]]
    unexplained = [name for name in differing
                   if name not in sketches or not _matches(
                       dataset[name].values, sketches[name],
                       RANK_RTOL if name.endswith(RANK_BASED) else PLATFORM_RTOL)]
    assert unexplained == [], (f"{case}: these variables differ from the recorded bits, and "
                               f"beyond rounding from this case's platform sketch: {unexplained}")


def assert_same_verdicts(verdicts: list, recorded: list, *, as_set: bool = False) -> None:
    """[check, verdict, observed] rows: the same checks and words (in order, or as a set), the
    observed values within :data:`PLATFORM_RTOL` (NaN where the recording has NaN)."""
    def ordered(rows):
        return sorted(rows, key=lambda row: (row[0], row[1])) if as_set else list(rows)

    verdicts, recorded = ordered(verdicts), ordered(recorded)
    assert [v[:2] for v in verdicts] == [v[:2] for v in recorded]
    np.testing.assert_allclose([_number(v[2]) for v in verdicts],
                               [_number(v[2]) for v in recorded],
                               rtol=PLATFORM_RTOL, atol=0, equal_nan=True)


def _number(value) -> float:
    return math.nan if value is None else float(value)
