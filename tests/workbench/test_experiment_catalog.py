"""The shipped study files are the one declaration of every built-in experiment: ``workbench
list`` reads their ``[study]`` tables without importing any experiment, in the order of
:data:`workbench.studies.library.ORDER`, and each experiment, once loaded, carries what its file
says."""

from __future__ import annotations

import pytest

from workbench import experiments
from workbench.studies import library
from workbench.studies.document import StudyError
from workbench.studies.files import loads


def test_every_built_in_has_one_shipped_file_named_after_it():
    files = sorted(p.stem for p in library.DIRECTORY.glob("*.toml"))
    assert files == sorted(library.ORDER)
    for name in library.ORDER:
        assert library.header(name).name == name
    assert list(experiments.EXPERIMENTS) == list(library.ORDER)


def test_each_experiment_carries_its_files_declaration():
    for name in library.ORDER:
        head, experiment = library.header(name), experiments.EXPERIMENTS[name]
        assert (experiment.name, experiment.summary, experiment.source, experiment.headline) \
            == (head.name, head.summary, head.source, head.headline)
        assert head.summary and head.source
        assert hasattr(experiment, "study")  # every built-in is a study file
    assert experiments.summaries() == [(n, library.header(n).summary) for n in library.ORDER]


@pytest.mark.parametrize("text, words", [
    ('[study]\nname = "x"\nsumary = "typo"\n', ("[study] sumary", "unknown key")),
    ('[study]\nname = "x"\nbespoke = "a:B"\n', ("[study] bespoke", "unknown key")),
    ('[study]\nname = "x"\nplugin = "a:B"\n', ("[study] plugin", "unknown key")),
])
def test_a_shipped_header_that_breaks_its_form_is_refused_naming_the_key(tmp_path, monkeypatch,
                                                                        text, words):
    """An unknown ``[study]`` key (a typo that would silently drop a summary; ``bespoke``, which
    named a Python experiment class before every built-in was a study; ``plugin``, which named
    a class adding to a study before every built-in's file could say all but its figure) is
    refused when ``workbench list`` reads it."""
    monkeypatch.setattr(library, "DIRECTORY", tmp_path)
    (tmp_path / "x.toml").write_text(text, encoding="utf-8")
    with pytest.raises(library.LibraryError) as caught:
        library.header("x")
    for word in ("x.toml", *words):
        assert word in str(caught.value), str(caught.value)


def test_the_registry_loads_an_experiment_once_and_only_when_asked():
    registry = experiments.Registry(tuple(map(library.header, library.ORDER)))
    assert list(registry) == list(library.ORDER) and len(registry) == len(library.ORDER)
    assert registry._loaded == {}
    first = registry["dsgld-coupling"]
    assert registry["dsgld-coupling"] is first and list(registry._loaded) == ["dsgld-coupling"]


def test_only_a_shipped_file_names_the_workbenchs_code():
    text = library.path("stale-gaussian").read_text(encoding="utf-8")
    assert 'figure = "stale_gaussian.figures:figures"' in text
    refusal = r"my-study.toml:\d+: \[study\] figure: .*only its shipped"
    with pytest.raises(StudyError, match=refusal):
        loads(text, "my-study.toml")


def test_a_figure_key_draws_the_paper_figure_alone_imported_when_drawn(tmp_path):
    """``[study] figure`` names the function that draws the paper's figure: the experiment
    draws it instead of the default figures, and its module is not imported before."""
    import sys

    module = "workbench.experiments.dsgld_coupling"
    sys.modules.pop(module, None)
    experiment = experiments.Registry((library.header("dsgld-coupling"),))["dsgld-coupling"]
    assert experiment.figure.reference == "dsgld_coupling:figure_coupling"
    assert module not in sys.modules
    from tests.workbench.test_distributed_experiments import SMALL
    from workbench.run.runner import run_experiment

    dataset = run_experiment(experiment, experiment.configure(
        {**SMALL["dsgld-coupling"], "group_size": [1, 2], "n_iterations": 300,
         "burn_in": 100, "gradient_draws": 100}), seed=1)
    assert [p.name for p in experiment.figures(dataset, tmp_path)] == ["dsgld-coupling.png"]
    assert module in sys.modules


def test_every_paper_entry_names_verdicts_its_experiment_gives():
    """Each ``checks`` pattern of a shipped ``[[paper]]`` entry matches a verdict of its
    experiment, on the small configurations the experiments' own tests run (seconds; the same
    verdict names as ``--quick`` but for the sweep values inside them)."""
    from fnmatch import fnmatchcase

    from tests.workbench.explore.conftest import SMALL as STALE_GAUSSIAN
    from tests.workbench.test_async_experiments import TINY
    from tests.workbench.test_distributed_experiments import SMALL
    from workbench.run.runner import run_experiment

    small = {"stale-gaussian": STALE_GAUSSIAN, **TINY, **SMALL,
             "fsgld-metric-learning": {"n_similar": 400, "n_dissimilar": 400,
                                       "n_test_pairs": 200, "surrogate_samples": 200,
                                       "burn_in": 100, "n_iterations": 400, "n_replicates": 3,
                                       "n_evaluations": 50, "n_checkpoints": 4,
                                       "reference_draws": 200, "reference_warmup": 100},
             "fsgld-mlp": {"n_train": 600, "n_test": 200, "n_shards": 6,
                           "hidden_sizes": [4], "surrogate_samples": 50,
                           "surrogate_burn_in": 10, "surrogate_thin": 1, "burn_in": 40,
                           "n_iterations": 80, "n_replicates": 3, "n_evaluations": 20,
                           "n_checkpoints": 3, "step_per_row": [0.09]},
             "protocols-rnn": {"iterations_per_worker": 30, "n_characters": 800,
                               "n_replicates": 2, "n_evaluations": 5, "n_checkpoints": 3,
                               "hidden_size": 4, "sequence_length": 8},
             "protocols-networks": {"iterations_per_worker": 30, "n_replicates": 2,
                                    "replicate_block": 2, "n_evaluations": 4,
                                    "n_checkpoints": 2, "n_test_points": 30,
                                    "sample_interval": 2.0},
             "lda-perplexity": {"n_documents": 400, "n_held_out": 40, "n_workers": 4,
                                "group_size": 2, "n_replicates": 2, "time_horizon": 5e5,
                                "tuning_time": 2e5, "perplexity_times": 3}}
    declaring = [name for name in library.ORDER if library.header(name).paper]
    assert {"stale-gaussian", "stale-blr-speedup", "stale-nn-workers", "dsgld-imbalance",
            "dsgld-trajectory"} <= set(declaring)
    for name in declaring:
        experiment = experiments.get(name)
        dataset = run_experiment(experiment, experiment.configure(small[name]), seed=7)
        names = [v.check for v in experiment.checks(dataset)]
        for entry in experiment.paper:
            for pattern in entry.checks:
                assert any(fnmatchcase(n, pattern) for n in names), (name, entry.section,
                                                                      pattern)
        # negative control: a pattern of another experiment's verdicts matches none here
        assert not any(fnmatchcase(n, "*/loss-falls/P=1->2") for n in names) \
            or name == "stale-nn-workers"


#: the Python of ``workbench/experiments/`` that serves every experiment, not one: the registry
#: and the Bounds explorer's overlay type
SHARED_MODULES = ("__init__.py", "overlay.py")
#: issue 29's ceiling on the Python that exists for particular experiments only
EXPERIMENT_LINES = 1500


def test_experiment_code_is_only_the_figures_the_shipped_files_name():
    """Every module under ``workbench/experiments/`` but the shared ones belongs to the one
    built-in whose ``[study] figure`` names it (its module, or its package), so no bespoke
    experiment can hide there; together they stay within :data:`EXPERIMENT_LINES`."""
    from pathlib import Path

    root = Path(experiments.__file__).parent
    named = {library.header(name).figure.partition(":")[0].split(".")[0]
             for name in library.ORDER} - {""}
    own = [p for p in root.rglob("*.py") if p.relative_to(root).as_posix() not in SHARED_MODULES]
    owners = {p.relative_to(root).parts[0].removesuffix(".py") for p in own}
    assert owners == named, owners ^ named
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in own)
    assert lines <= EXPERIMENT_LINES, lines
