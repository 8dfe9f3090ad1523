"""Writing and reading one result-store point: netCDF4-python against h5netcdf.

Issue 15 found 9-28 % of the main job in writing each point with h5netcdf and reading it back.
Both engines write the same netCDF-4 (HDF5) format; this measures them on a dataset shaped like
a store point (about 40 small variables over sweep, test-function, checkpoint and replicate
dims, a string coordinate, string and numeric attributes), in memory as the store does
(:func:`workbench.store.atomic.netcdf_bytes`), and checks that every round trip is exact. h5netcdf
is not a dependency of the workbench: ``pip install h5netcdf`` to include it.

Run: ``python benchmarks/store_io.py [--rounds 5] [--points 30]``.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_throughput import Rounds  # noqa: E402

from workbench.store.atomic import netcdf_bytes, netcdf_loaded  # noqa: E402


def point_like(rng: np.random.Generator, n_variables: int = 40) -> xr.Dataset:
    """A dataset with the shapes and kinds of values of a store point."""
    coords = {"staleness": [5], "test_function": ["theta", "theta_squared"],
              "checkpoint": np.arange(30), "replicate": np.arange(200)}
    shapes = [("staleness", "test_function", "checkpoint"), ("staleness", "replicate"),
              ("staleness", "test_function", "replicate"), ("staleness",)]
    variables = {}
    for i in range(n_variables):
        dims = shapes[i % len(shapes)]
        values = rng.standard_normal([len(coords[d]) for d in dims])
        variables[f"variable_{i}"] = (dims, values if i % 7 else (values > 0).astype(np.int64),
                                      {"long_name": f"quantity {i}", "units": "1"})
    return xr.Dataset(variables, coords=coords,
                      attrs={"experiment": "benchmark", "seed": 2016, "step_size": 1e-3})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--points", type=int, default=30, help="points written per round")
    args = parser.parse_args()
    datasets = [point_like(np.random.default_rng(i)) for i in range(args.points)]
    encoded = [netcdf_bytes(d) for d in datasets]
    for dataset, content in zip(datasets, encoded, strict=True):
        xr.testing.assert_identical(netcdf_loaded(content), dataset)
    workloads = {
        ("write", "netcdf4"): (len(datasets), lambda: [netcdf_bytes(d) for d in datasets]),
        ("read", "netcdf4"): (len(datasets), lambda: [netcdf_loaded(c) for c in encoded]),
    }
    try:
        import h5netcdf  # noqa: F401 - only to know whether it is there
    except ImportError:
        h5netcdf = None
    if h5netcdf is not None:
        def h5_write():
            return [bytes(d.to_netcdf(engine="h5netcdf")) for d in datasets]

        def h5_read():
            for content in encoded:
                with xr.open_dataset(io.BytesIO(content), engine="h5netcdf") as opened:
                    opened.load()

        workloads[("write", "h5netcdf")] = (len(datasets), h5_write)
        workloads[("read", "h5netcdf")] = (len(datasets), h5_read)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    rounds = Rounds(workloads, args.rounds)
    print(f"store point I/O, {args.points} points of {len(datasets[0].data_vars)} variables, "
          f"{len(encoded[0]):,} bytes each; medians of {args.rounds} interleaved rounds "
          f"({time.perf_counter() - start:.0f} s); load average at start {load:.2f} on "
          f"{os.cpu_count()} cores; round trips exact")
    for action in ("write", "read"):
        line = f"  {action:>5}: netCDF4-python {rounds.median((action, 'netcdf4')):7.1f} points/s"
        if (action, "h5netcdf") in workloads:
            ratio = rounds.ratio((action, "netcdf4"), (action, "h5netcdf"))
            line += (f", h5netcdf {rounds.median((action, 'h5netcdf')):7.1f} points/s, "
                     f"netCDF4/h5netcdf {ratio:.1f}x")
        print(line)
    if ("write", "h5netcdf") not in workloads:
        print("  h5netcdf: not installed (pip install h5netcdf to compare)")


if __name__ == "__main__":
    main()
