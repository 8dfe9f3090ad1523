"""``workbench report``: one self-contained HTML page with every figure, table and verdict.

Figures are embedded as base64 data URIs and the style sheet is inline, so the file can be
mailed or archived alone. For each experiment the page shows what was run (source, seed,
configuration as TOML, how the sweep was computed), the verdict of every check with its
evidence and explanation, the per-point table of every variable that depends only on the
sweep dims, every figure, and the Dataset's layout. All text is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import time
from pathlib import Path

import numpy as np
import xarray as xr

import workbench
from bounds.equivalence import MEANINGS
from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from workbench.core.parameters import to_toml
from workbench.run.main_job import Outcome, verdict_counts
from workbench.store.atomic import atomic_write

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 75em; color: #222;
       padding: 0 1em; line-height: 1.4; }
h1 { border-bottom: 2px solid #444; } h2 { margin-top: 2.5em; border-bottom: 1px solid #aaa; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
table.verdicts { table-layout: fixed; width: 100%; }
table.verdicts col.check { width: 20%; } table.verdicts col.word { width: 7%; }
table.verdicts col.number { width: 6%; } table.verdicts col.why { width: 30%; }
.scroll { overflow-x: auto; max-width: 100%; }
th { background: #f0f0f0; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
.holds { background: #e3f4e3; } .violated { background: #fbe0e0; }
.inconclusive { background: #fdf3d6; } .error { background: #f4c7c7; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
pre { background: #f7f7f7; padding: 0.7em; overflow-x: auto; font-size: 0.85em; }
details { margin: 0.5em 0; } summary { cursor: pointer; }
"""

_MIME = {".png": "image/png", ".svg": "image/svg+xml"}


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _number(value) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return _e(value)


def _figure(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return (f'<figure><img alt="{_e(path.name)}" src="data:{_MIME[path.suffix]};base64,{data}">'
            f"<figcaption>{_e(path.name)}</figcaption></figure>")


#: characters of a verdict's explanation shown before the rest folds
WHY_SHOWN = 160


def _why(detail: str) -> str:
    """A verdict's explanation, its tail folded when long (so the table fits the page)."""
    if len(detail) <= WHY_SHOWN:
        return _e(detail)
    cut = detail.rfind(" ", 0, WHY_SHOWN)
    cut = cut if cut > 0 else WHY_SHOWN
    return (f"<details><summary>{_e(detail[:cut])} …</summary>{_e(detail[cut:])}"
            "</details>")


def _verdict_rows(outcome: Outcome) -> str:
    columns = ('<colgroup><col class="check"><col class="word"><col class="word">'
               + '<col class="number">' * 6 + '<col class="why"></colgroup>')
    head = ("<tr><th>check</th><th>kind</th><th>verdict</th><th>observed</th><th>expected</th>"
            "<th>MC error</th><th>margin</th><th>z</th><th>false-failure rate</th>"
            "<th>why</th></tr>")
    rows = []
    for v in outcome.verdicts:
        detail = _why(v.detail)
        if v.evidence:
            detail += f"<details><summary>evidence</summary><pre>{_e(v.evidence)}</pre></details>"
        numbers = "".join(f'<td class="number">{_number(x)}</td>' for x in (
            v.observed, v.expected, v.mc_error, v.margin, v.z_threshold, v.false_failure_rate))
        rows.append(f'<tr class="{_e(v.verdict)}"><td>{_e(v.check)}</td><td>{_e(v.kind)}</td>'
                    f"<td>{_e(v.verdict)}</td>{numbers}<td>{detail}</td></tr>")
    return f'<table class="verdicts">{columns}{head}{"".join(rows)}</table>'


def sweep_table(dataset: xr.Dataset, sweep_dims: tuple[str, ...]) -> str:
    """The variables that depend on the sweep dims only: one row per sweep point."""
    names = [n for n, v in dataset.data_vars.items()
             if v.dims and set(v.dims) <= set(sweep_dims)]
    if not names:
        return ""
    frame = dataset[names].to_dataframe()
    header = "".join(f"<th>{_e(c)}</th>" for c in (*frame.index.names, *frame.columns))
    rows = []
    for index, row in frame.iterrows():
        index = index if isinstance(index, tuple) else (index,)
        cells = "".join(f'<td class="number">{_e(i)}</td>' for i in index)
        cells += "".join(f"<td>{_e(bool(x))}</td>" if isinstance(x, bool | np.bool_)
                         else f'<td class="number">{_number(x)}</td>' for x in row.values)
        rows.append(f"<tr>{cells}</tr>")
    return f'<div class="scroll"><table><tr>{header}</tr>{"".join(rows)}</table></div>'


def _section(outcome: Outcome) -> str:
    e = outcome.experiment
    parts = [f'<h2 id="{_e(e.name)}">{_e(e.name)}</h2>', f"<p>{_e(e.summary)}</p>",
             f"<p><b>Source:</b> {_e(e.source)}<br><b>Seed:</b> {outcome.seed}</p>"]
    if outcome.error:
        parts.append(f'<p class="error">This experiment failed to run:</p>'
                     f"<pre>{_e(outcome.error)}</pre>")
    else:
        counts = verdict_counts(outcome.verdicts)
        parts.append(f"<p><b>Run:</b> {_e(outcome.sweep.describe())}; total "
                     f"{outcome.seconds:.1f} s. <b>Verdicts:</b> {counts[HOLDS]} holds, "
                     f"{counts[VIOLATED]} violated, {counts[INCONCLUSIVE]} inconclusive.</p>")
        parts.append("<h3>Verdicts</h3>" + _verdict_rows(outcome))
        table = sweep_table(outcome.dataset, e.sweep_dims)
        if table:
            parts.append("<h3>Per sweep point</h3>" + table)
        parts.append("<h3>Figures</h3>" + "".join(_figure(p) for p in outcome.figures))
        parts.append(f"<details><summary>Dataset layout</summary><pre>{_e(outcome.dataset)}"
                     "</pre></details>")
    parts.append(f"<details><summary>Configuration (TOML)</summary>"
                 f"<pre>{_e(to_toml(outcome.config, e.parameters))}</pre></details>")
    return "\n".join(parts)


def write_report(outcomes: list[Outcome], path: Path, command: str) -> Path:
    """Write the report for ``outcomes`` to ``path`` (atomically) and return the path."""
    rows = []
    for o in outcomes:
        counts = verdict_counts(o.verdicts)
        status = "error" if o.error else (VIOLATED if counts[VIOLATED] else
                                          INCONCLUSIVE if counts[INCONCLUSIVE] else HOLDS)
        rows.append(f'<tr class="{status}"><td><a href="#{_e(o.experiment.name)}">'
                    f"{_e(o.experiment.name)}</a></td><td>{_e(o.experiment.summary)}</td>"
                    + "".join(f'<td class="number">{counts[k]}</td>'
                              for k in (HOLDS, VIOLATED, INCONCLUSIVE)) + "</tr>")
    overview = ("<table><tr><th>experiment</th><th>what it tests</th><th>holds</th>"
                "<th>violated</th><th>inconclusive</th></tr>" + "".join(rows) + "</table>")
    generated = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Stale-gradient SG-MCMC workbench report</title><style>{_STYLE}</style></head>
<body>
<h1>Stale-gradient SG-MCMC workbench report</h1>
<p>Generated {_e(generated)} by <code>{_e(command)}</code> with workbench
{_e(workbench.__version__)}, numpy {_e(np.__version__)}, xarray {_e(xr.__version__)}.
Every check is judged against a margin, the smallest difference it is meant to detect, on
its stated scale; the Monte Carlo error of the measurement (and of a reference posterior, where
one stands in for an exact oracle) enters every decision:</p>
<ul>{"".join(f"<li><b>{_e(verdict)}</b>: {_e(meaning)}</li>" for verdict, meaning in
             MEANINGS.items())}</ul>
{overview}
{"".join(_section(o) for o in outcomes)}
</body></html>
"""
    atomic_write(Path(path), page.encode("utf-8"))
    return Path(path)
