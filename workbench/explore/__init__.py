"""What the dashboard shows, computed here (``app/`` holds pages only; docs/architecture.md).

One module per page or lesson: each turns the page's settings into plain data (numbers,
arrays, DataArrays, verdicts) with the same functions the command line uses, so every number
on a page can be reproduced from Python and is tested without a browser.

- :mod:`.inputs`: parsing of free-text page inputs (lists of numbers) with named errors;
- :mod:`.system`: the simulated asynchronous system, its timeline and statistics;
- :mod:`.playground`: a small live replay against the exact oracle;
- :mod:`.bounds_view`: a registered bound's controls, values, optimum, and its overlays;
- :mod:`.overlays`: which stored measurements each experiment offers to which bound;
- :mod:`.results_browser`: stored results, their dims, and quick runs from the page;
- :mod:`.lessons`: the teaching pages' curves.
"""
