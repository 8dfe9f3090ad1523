"""A registered bound paired with a stored experiment's measurements (see
:mod:`workbench.explore.overlays` for the registry and the fields' meaning)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from bounds import registry
from bounds.envelope import Envelope
from bounds.verdict import Verdict


@dataclass(frozen=True)
class Overlay:
    """measured, error: the quantity and its Monte Carlo standard error over the overlay's
    grid dims; grid: values by the bound's symbol names, broadcasting against ``measured``;
    fixed: symbols held at one value; envelope: fitted constants or None."""

    bound: str
    title: str
    measured: xr.DataArray
    error: xr.DataArray
    grid: dict[str, xr.DataArray]
    x_dim: str  # the measurement dim drawn along the horizontal axis
    x_symbol: str  # the bound's symbol whose values that dim carries
    fixed: dict[str, float] = field(default_factory=dict)
    envelope: Envelope | None = None
    checks: tuple[str, ...] = ()

    @property
    def other_dims(self) -> list[str]:
        return [d for d in self.measured.dims if d != self.x_dim]

    def judged_by(self, verdicts: list[Verdict]) -> list[Verdict]:
        """The verdicts of the checks that judge this bound on these measurements: ``checks``
        holds check names, or name prefixes ending in ``/``."""
        return [v for v in verdicts
                if any(v.check == name or (name.endswith("/") and v.check.startswith(name))
                       for name in self.checks)]

    def along(self, selection: dict, values: dict) -> xr.Dataset:
        """The overlay along ``x_dim`` at ``selection`` (a coordinate for every other dim).

        Variables: ``x`` (the bound's ``x_symbol`` there), ``measured``, ``error``, ``bound``
        (the record evaluated on the grid with ``values`` for its constants and any symbol
        not on the grid) and, when constants were fitted, ``envelope``.
        """
        missing = [d for d in self.other_dims if d not in selection]
        if missing:
            raise KeyError(f"select a value for {', '.join(missing)}")
        measured = self.measured.sel({d: selection[d] for d in self.other_dims})
        grid = {name: array.sel({d: selection[d] for d in array.dims if d in selection})
                for name, array in self.grid.items()}
        out = {"x": grid[self.x_symbol].broadcast_like(measured), "measured": measured,
               "error": self.error.sel({d: selection[d] for d in self.other_dims})}
        bound = registry.get(self.bound).evaluate(**{**values, **self.fixed, **grid})
        out["bound"] = xr.DataArray(bound).broadcast_like(measured)
        if self.envelope is not None and np.all(np.isfinite(self.envelope.coefficients)):
            out["envelope"] = self.envelope(grid).broadcast_like(measured)
        return xr.Dataset({k: v.reset_coords(drop=True) for k, v in out.items()})
