"""The ``language-model`` model kind (seed 003 Appendix C): a character-level GRU or LSTM on the
text of a Markov source or of a file, declared in a study (the built-in ``protocols-rnn``:
downpour pSGLD and elastic SGHMC, one worker and four), its held-out ``nll`` judged by the
study's ``ordering`` checks; and the bad inputs refused, each naming its field."""

from __future__ import annotations

import numpy as np
import pytest

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from simulators.seeding import generator
from simulators.validation import InvalidParameter
from tests.studies.refusals import refused_when_read
from workbench.data.markov_text import MarkovTextSource
from workbench.models.recurrent import RecurrentLanguageModel
from workbench.run.runner import run_experiment
from workbench.studies import library
from workbench.studies.files import loads
from workbench.studies.held_out_point import make_model
from workbench.studies.parts_experiment import PartsExperiment
from workbench.systems.asynchronous.models import language_model

EXAMPLE = library.DIRECTORY / "protocols-rnn.toml"
TEXT = EXAMPLE.read_text()
#: the study as a user's file: without its figure, which names the workbench's own code
USER_TEXT = "\n".join(line for line in TEXT.splitlines() if not line.startswith("figure ="))
TINY = {"iterations_per_worker": 30, "n_characters": 800, "n_replicates": 2,
        "n_evaluations": 5, "n_checkpoints": 3, "hidden_size": 4, "sequence_length": 8}


def _config(**changes):
    experiment = PartsExperiment(loads(TEXT, str(EXAMPLE)))
    config = experiment.configure({**TINY, **changes}, quick=True)
    part = experiment.study.parts[0]
    return experiment.experiments[part.name].resolve(experiment.study.part_config(config, part),
                                                     {"cell": "gru", "n_layers": 1, "workers": 4})


def test_the_study_builds_the_configured_cell_on_the_markov_source_text():
    config = _config()
    model = make_model("protocols-rnn", config, 3, None)
    assert isinstance(model, RecurrentLanguageModel)
    assert (model.cell, model.n_layers, model.hidden_size) == ("gru", 1, 4)
    assert [f.name for f in model.test_functions()] == ["nll"]
    # the same text as the source the experiment's seed names, held out at its end
    assert len(model.text) + len(model.test_text) == 800 and set(model.text) <= set("abcd")
    again = language_model("protocols-rnn", config, 3)
    theta = 0.1 * np.random.default_rng(0).standard_normal((2, model.dim))
    np.testing.assert_array_equal(model.potential(theta), again.potential(theta))


def test_a_text_file_is_read_over_its_alphabet(tmp_path):
    path = tmp_path / "novel.txt"
    path.write_text("well, prince, so genoa and lucca are now just family estates. " * 20)
    config = _config(text_source=str(path), alphabet="abcdefghijklmnopqrstuvwxyz ,.")
    model = language_model("protocols-rnn", config, 3)
    assert model.alphabet == "abcdefghijklmnopqrstuvwxyz ,." and "genoa" in model.text
    with pytest.raises(InvalidParameter) as caught:
        language_model("protocols-rnn", {**config, "alphabet": "abcdefghijklmnopqrstuvwxyz "},
                       3)
    assert caught.value.field == "text_source" and "','" in str(caught.value)


def test_the_quick_study_runs_and_judges_the_held_out_nll():
    """A tiny run: every point's held-out NLL per character is finite and above the true
    chain's on the same held-out text (a model fitted to other text cannot beat the source
    that made it), and each part judges one ordering per cell."""
    experiment = PartsExperiment(loads(TEXT, str(EXAMPLE)))
    dataset = run_experiment(experiment, experiment.configure(TINY, quick=True), seed=5)
    nll = dataset["mean"].sel(test_function="nll").isel(checkpoint=-1)
    assert np.all(np.isfinite(nll))
    source = MarkovTextSource.random(generator(5, "protocols-rnn", "markov-source"),
                                     "abcd", 2)
    held_out = language_model("protocols-rnn", _config(), 5).test_text
    truth = -float(np.mean(source.log_probabilities(held_out)))
    assert float(nll.min()) > truth, (float(nll.min()), truth, source.entropy_rate())
    verdicts = experiment.checks(dataset)
    assert sorted(v.check for v in verdicts) == sorted(
        f"{part}/ordering/nll/falls/workers=1->4/cell={cell}/n_layers={layers}"
        for part in ("downpour", "elastic") for cell in ("gru", "lstm") for layers in (1, 2))
    assert {v.verdict for v in verdicts} <= {HOLDS, VIOLATED, INCONCLUSIVE}


@pytest.mark.parametrize(("old", "new", "needle", "word"), [
    ("hidden_size = 16", "hidden_size = 0", "hidden_size = 0", "hidden_size"),
    ("n_layers = [1, 2]", "n_layers = [1, 3]", "n_layers = [1, 3]", "n_layers"),
    ('text_source = "markov"', 'text_source = "/no/such/novel.txt"', "text_source =",
     "text_source"),
    ('alphabet = "abcd"', 'alphabet = "aa"', 'alphabet = "aa"', "alphabet"),
    ("sequence_length = 20", "sequence_length = 0", "sequence_length = 0", "sequence_length"),
])
def test_bad_model_fields_are_refused_naming_the_line(old, new, needle, word):
    assert old in USER_TEXT
    refused_when_read(USER_TEXT.replace(old, new, 1), needle, word)


def test_a_sweep_of_cells_outside_the_two_is_refused():
    refused_when_read(USER_TEXT.replace('cell = ["lstm", "gru"]', 'cell = ["lstm", "rnn"]'),
                      'cell = ["lstm", "rnn"]', "cell")


def test_a_text_that_cannot_train_is_refused_before_any_work(tmp_path):
    """Configuring the study refuses a window longer than the training text (18 of the 20
    characters) and a file with a character outside the alphabet, each naming its field."""
    with pytest.raises(InvalidParameter) as caught:
        _config(n_characters=20, sequence_length=18)
    assert caught.value.field == "sequence_length" and "<= 18 characters" in str(caught.value)
    _config(n_characters=20, sequence_length=17)  # 17 inputs and their next: 18 characters
    path = tmp_path / "novel.txt"
    path.write_text("abcd" * 30 + "abcdX\n")
    with pytest.raises(InvalidParameter) as caught:
        _config(text_source=str(path))
    assert caught.value.field == "text_source" and "'X'" in str(caught.value)


def test_one_draws_averaged_prediction_is_its_own_nll_and_more_draws_score_no_worse():
    """The averaged prediction of a single draw scores exactly the per-draw ``nll`` (same
    characters, same order); of several draws, no worse than their mean ``nll`` (Jensen)."""
    model = make_model("protocols-rnn", _config(), 3, None)
    theta = 0.3 * np.random.default_rng(2).standard_normal((4, model.dim))
    [nll] = model.test_functions()
    per_draw = nll(theta)[:, 0]
    predictions = model.held_out_predictions(theta)  # (draw, M-1, K)
    assert predictions.shape == (4, len(model.held_out_targets()), len(model.alphabet))
    np.testing.assert_allclose(predictions.sum(axis=-1), 1.0, rtol=1e-12)
    single = model.averaged_prediction_scores(predictions)["averaged_nll"]
    np.testing.assert_allclose(single, per_draw, rtol=1e-10)
    averaged = model.averaged_prediction_scores(predictions.mean(axis=0))["averaged_nll"]
    assert averaged <= per_draw.mean()
