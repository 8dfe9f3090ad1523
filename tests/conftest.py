"""Suite-wide: the longest test files are collected first.

The README's test command runs one pytest process per core, each test file whole in one of
them (pytest-xdist, ``--dist loadfile``). A long file handed out late starts when the others
are nearly done and runs alone. Handing out the longest files first (longest-processing-time
order) leaves only short files for the end. The list below sets the collection order, and the
command's ``--no-loadscope-reorder`` makes xdist hand the files out in that order: without it
xdist (3.5 on) hands out the files with the most tests first, whatever the collection order.
So until 2026-11-30 this list had no effect: in a run of this checkout with xdist 3.8 the
browser test (4 tests, 152 s) was handed out last and ran alone for its last 15 s, and the
main job's file (18 tests, 182 s) started at 318 s. A missing or stale entry only changes the
order. One process more than the cores, to fill the time tests wait on servers and browsers,
was slower in a clean-clone run: 1,018 s against 931 s, with more CPU spent.
"""

from __future__ import annotations

#: seconds each took with one process per core on a 2-core AMD EPYC, in this checkout
#: (2026-11-30, ``--durations``; the browser test and test_runner.py as changed that day)
LONGEST_FIRST = (
    "tests/workbench/explore/test_headlines.py",  # 217: the main job, in one process
    "tests/app/test_browser.py",  # 125
    "tests/workbench/test_cli.py",  # 107
    "tests/studies/test_speedup_check.py",  # 70-98
    "tests/app/test_pages.py",  # 57
    "tests/studies/test_studies.py",  # 56
    "tests/studies/test_protocols_networks_study.py",  # 51
    "tests/studies/test_user_code.py",  # 47
    "tests/workbench/test_runner.py",  # 45: two Dask clusters
    "tests/faults/test_damaged_store.py",  # 44
    "tests/bounds/test_symbolic.py",  # 42
    "tests/workbench/test_cli_imports.py",  # 41
    "tests/bounds/test_registry.py",  # 39
    "tests/workbench/test_jax_replay.py",  # 38
    "tests/studies/test_topic_study.py",  # 32
    "tests/workbench/test_oracle.py",  # 31
    "tests/app/test_warm.py",  # 31
    "tests/faults/test_study_fuzz.py",  # 31
)


def pytest_collection_modifyitems(items) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    # a stable sort: the tests of a file, and the files not listed, keep their order
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
