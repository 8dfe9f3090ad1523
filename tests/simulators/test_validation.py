"""Byte sizes as `--memory-budget` takes them (:func:`simulators.validation.byte_size`) and
durations as `--budget` takes them (:func:`simulators.validation.duration`)."""

from __future__ import annotations

import pytest

from simulators import validation


@pytest.mark.parametrize("text, expected", [
    ("1073741824", 1 << 30), ("512MiB", 512 << 20), ("1.5GB", 1_500_000_000), ("2G", 2 * 10**9),
    ("64 kib", 64 << 10), ("1e3", 1000), (4096, 4096), ("1TiB", 1 << 40),
])
def test_byte_sizes_are_read_with_their_units(text, expected):
    assert validation.byte_size("memory_budget", text) == expected


@pytest.mark.parametrize("text", ["", "lots", "-5MiB", "12 parsecs", "0", "0.1", 0, True, "nanG"])
def test_bad_byte_sizes_are_refused_naming_the_field(text):
    with pytest.raises(validation.InvalidParameter, match="memory_budget"):
        validation.byte_size("memory_budget", text)


@pytest.mark.parametrize("text, expected", [
    ("600", 600.0), ("90s", 90.0), ("10m", 600.0), ("10 MIN", 600.0), ("1.5h", 5400.0),
    (45, 45.0),
])
def test_durations_are_read_with_their_units(text, expected):
    assert validation.duration("--budget", text) == expected


@pytest.mark.parametrize("text", ["", "soon", "10 weeks", "-5m", "0", 0, "10d"])
def test_bad_durations_are_refused_naming_the_field(text):
    with pytest.raises(validation.InvalidParameter, match="--budget"):
        validation.duration("--budget", text)
