"""The experiment catalog (what `workbench list` prints without importing the experiments)
agrees with the experiments it names, in the registry's order."""

from __future__ import annotations

from workbench import experiments
from workbench.experiments.catalog import ENTRIES, Entry


def test_every_entry_matches_the_experiment_it_loads():
    for entry in ENTRIES:
        experiment = experiments.EXPERIMENTS[entry.name]
        assert type(experiment).__name__ == entry.cls
        assert (experiment.name, experiment.summary) == (entry.name, entry.summary)
    assert experiments.summaries() == [(e.name, e.summary) for e in ENTRIES]


def test_an_entry_whose_summary_drifted_is_caught():
    # negative control: the comparison above fails for an entry out of date
    entry = ENTRIES[0]
    stale = Entry(entry.name, entry.module, entry.cls, entry.summary + " (old)")
    assert stale.load().summary != stale.summary


def test_the_registry_loads_an_experiment_once_and_only_when_asked():
    registry = experiments.Registry(ENTRIES)
    assert list(registry) == [e.name for e in ENTRIES] and len(registry) == len(ENTRIES)
    assert registry._loaded == {}
    first = registry["dsgld-coupling"]
    assert registry["dsgld-coupling"] is first and list(registry._loaded) == ["dsgld-coupling"]
