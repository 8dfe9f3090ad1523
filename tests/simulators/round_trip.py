"""Shared assertion: a schedule survives netCDF unchanged."""

import xarray as xr

from simulators.schedule import Schedule


def assert_round_trips(schedule: Schedule, path) -> Schedule:
    """Write ``schedule`` to ``path`` as netCDF, read it back, assert nothing changed."""
    schedule.to_dataset().to_netcdf(path, engine="netcdf4")
    with xr.open_dataset(path, engine="netcdf4") as stored:
        restored = Schedule.from_dataset(stored.load())
    xr.testing.assert_identical(restored.to_dataset(), schedule.to_dataset())
    assert restored.attrs == schedule.attrs
    return restored
