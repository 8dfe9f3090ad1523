"""Writing results to netCDF: what goes in comes back, labels included."""

import xarray as xr

from workbench.store.netcdf import read_netcdf, write_netcdf


def test_labels_read_from_files_and_combined_are_written_whole(tmp_path):
    """A point read from the store carries its label width in its encoding; the combined
    sweep must not be written with the first point's width (it once wrote "uncorrect")."""
    parts = []
    for label in ("corrected", "uncorrected"):
        path = write_netcdf(xr.Dataset({"x": ("correction", [1.0])},
                                       coords={"correction": [label]}), tmp_path / f"{label}.nc")
        parts.append(read_netcdf(path))
    combined = xr.concat(parts, dim="correction")
    again = read_netcdf(write_netcdf(combined, tmp_path / "combined.nc"))
    assert again["correction"].values.tolist() == ["corrected", "uncorrected"]
