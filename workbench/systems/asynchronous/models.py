"""The models of seed 001 §5 with their held-out sets, built from an experiment's parameters.

- Bayesian logistic regression (§5.1) on a9a-shaped data drawn from a known weight vector
  (:func:`workbench.data.a9a_like.a9a_like`, the default) or on a LIBSVM pair on disk
  (``--set data_source=PATH`` reads PATH and PATH.t,
  :func:`workbench.data.libsvm.load_libsvm_pair`);
- the digits networks (§5.2, LeNet on MNIST in the paper): the MLP and the CNN of
  :mod:`workbench.models` on scikit-learn's 8×8 digits;
- seed 003's character language models (Appendix C, GRU and LSTM on War and Peace):
  :class:`workbench.models.recurrent.RecurrentLanguageModel` on the text of a k-th order Markov
  source whose entropy rate is known (:mod:`workbench.data.markov_text`, the default) or of a
  plain-text file the user names (``text_source = PATH``, its characters within ``alphabet``).

Held-out test functions are evaluated on every kept draw of every replicate, so the held-out
set is subsampled to ``n_test_points`` rows (a fixed random subset per experiment and seed; 0
keeps all). Initial positions are dispersed so that the variance over replicates of φ̂_L
decays from the start as Theorem 4's 1/(Lh) term says: θ₀ ~ N(0, initial_scale² I) for the
logistic model, He-normal weights for the networks.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from simulators import validation
from simulators.seeding import generator
from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one, non_negative_int, positive, rate
from workbench.data.dataset import ClassificationData
from workbench.run.parameters import PRIOR_SCALE

# the data loaders (scikit-learn, scipy) and the models (numba) are imported by the functions
# that build a model: the parameters alone are read by `workbench show` and argument checks
# (issue 15)
if TYPE_CHECKING:
    from workbench.models.logistic import LogisticRegression

SYNTHETIC = "a9a-like"
NETWORKS = ("mlp", "cnn")


def _data_source(name, value):
    if value != SYNTHETIC and not Path(value).is_file():
        raise validation.InvalidParameter(
            name, value, f"must be {SYNTHETIC!r} or the path of a LIBSVM training file "
            "(its test file PATH.t beside it)")
    return value


def _sizes(name, value):
    return [validation.integer(f"{name}[{i}]", v, minimum=1) for i, v in enumerate(value)]


#: where a language model's text comes from by default: a generated Markov source
MARKOV = "markov"
#: the recurrent cells of :mod:`workbench.models.recurrent_cells`
CELL_NAMES = ("lstm", "gru")


def _text_source(name, value):
    if value != MARKOV and not Path(value).is_file():
        raise validation.InvalidParameter(name, value, f"must be {MARKOV!r} or the path of a "
                                                       "plain-text (UTF-8) file")
    return value


def _alphabet(name, value):
    from workbench.data.text import checked_alphabet

    try:
        return checked_alphabet(value)
    except validation.InvalidParameter as error:
        raise validation.InvalidParameter(name, value, error.allowed) from None


def _layers(name, value):
    return validation.integer(name, value, minimum=1, maximum=2)


LANGUAGE_MODEL_PARAMETERS = (
    Parameter("text_source", MARKOV, f"{MARKOV} (text of an order-k Markov chain over the "
              "alphabet with random transitions, its entropy rate known) or PATH of a "
              "plain-text file (seed 003: War and Peace)", _text_source),
    Parameter("alphabet", "abcd", "the text's characters (a file with any other is refused)",
              _alphabet),
    Parameter("markov_order", 2, "markov: the chain's order k", at_least_one),
    Parameter("n_characters", 20000, "markov: characters generated, training and held-out",
              lambda name, value: validation.integer(name, value, minimum=4)),
    Parameter("test_fraction", 0.1, "the share of the text held out, at its end",
              rate),
    Parameter("cell", CELL_NAMES[0], "recurrent cell: lstm or gru", choices=CELL_NAMES),
    Parameter("n_layers", 1, "recurrent layers: 1 or 2", _layers),
    Parameter("sequence_length", 50, "characters per training window (truncated "
              "back-propagation through time)", at_least_one),
)


N_TEST_POINTS = Parameter("n_test_points", 1000, "held-out rows scored per draw (0: all)",
                          non_negative_int)

LOGISTIC_PARAMETERS = (
    Parameter("data_source", SYNTHETIC,
              f"{SYNTHETIC} (generated) or PATH of a LIBSVM pair PATH, PATH.t", _data_source),
    Parameter("n_train", 32_561, "generated data: training rows (a9a: 32,561; seed 002 §5.3's "
              "SUSY shards: 90,000 in all)", at_least_one),
    Parameter("n_test", 16_281, "generated data: held-out rows (a9a: 16,281)", at_least_one),
    PRIOR_SCALE,
    Parameter("initial_scale", 1.0, "θ₀ ~ N(0, initial_scale² I) per replicate", positive),
    N_TEST_POINTS,
)

NETWORK_PARAMETERS = (
    Parameter("hidden_sizes", [50], "MLP hidden layer sizes", _sizes),
    Parameter("filters", [4, 8], "CNN filters of its two convolution layers", _sizes),
    Parameter("hidden_size", 32, "CNN dense hidden units", at_least_one),
    PRIOR_SCALE,
    replace(N_TEST_POINTS, default=0, help="held-out digits scored per draw (0: all 359)"),
)


def held_out_rows(n_test: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` of the ``n_test`` held-out rows in a random subset (sorted), or all of them
    when ``count`` is 0 or at least their number."""
    if count == 0 or count >= n_test:
        return np.arange(n_test)
    return np.sort(rng.permutation(n_test)[:count])


def held_out(data: ClassificationData, count: int, rng: np.random.Generator):
    """The held-out features and labels of :func:`held_out_rows`."""
    rows = held_out_rows(data.n_test, count, rng)
    return data.test_features[rows], data.test_labels[rows]


def network_test_rows(experiment: str, config: dict, seed) -> np.ndarray:
    """The rows of the digits' held-out set a network of the study is scored on."""
    from workbench.data.digits import digits

    return held_out_rows(digits().n_test, config["n_test_points"],
                         generator(seed, experiment, "held-out"))


def logistic_model(experiment: str, config: dict, seed) -> LogisticRegression:
    """Logistic regression on the configured data (module docstring); the same for every
    sweep point (data keyed by experiment)."""
    from workbench.data.a9a_like import a9a_like
    from workbench.data.libsvm import load_libsvm_pair
    from workbench.models.logistic import LogisticRegression

    if config["data_source"] == SYNTHETIC:
        data, _ = a9a_like(generator(seed, experiment, "data"), config["n_train"],
                           config["n_test"])
    else:
        data = load_libsvm_pair(config["data_source"])
    test_features, test_labels = held_out(data, config["n_test_points"],
                                          generator(seed, experiment, "held-out"))
    return LogisticRegression(data.train_features, data.train_labels, config["prior_scale"],
                              test_features, test_labels)


def network_model(experiment: str, config: dict, seed, network: str):
    """The ``mlp`` or ``cnn`` classifier on the digits (module docstring)."""
    from workbench.data.digits import DIGITS_SHAPE, digits
    from workbench.models.cnn import ConvolutionalNetwork
    from workbench.models.mlp import MultilayerPerceptron

    validation.one_of("network", network, NETWORKS)
    data = digits()
    rows = network_test_rows(experiment, config, seed)
    test_features, test_labels = data.test_features[rows], data.test_labels[rows]
    common = {"labels": data.train_labels, "prior_scale": config["prior_scale"],
              "test_labels": test_labels, "n_classes": 10}
    if network == "mlp":
        return MultilayerPerceptron(data.train_features, test_features=test_features,
                                    hidden_sizes=tuple(config["hidden_sizes"]), **common)
    if len(config["filters"]) != 2:
        raise validation.InvalidParameter("filters", config["filters"],
                                          "needs two values (two convolution layers)")
    images = (-1, *DIGITS_SHAPE)
    return ConvolutionalNetwork(data.train_features.reshape(images),
                                test_features=test_features.reshape(images),
                                filters=tuple(config["filters"]),
                                hidden_size=config["hidden_size"], **common)


def initial_positions(model, config: dict, rng: np.random.Generator,
                      shape: tuple[int, int]) -> np.ndarray:
    """Dispersed starts ``(replicate, server, d)`` (module docstring); a model of the
    researcher's own without ``initial_position`` starts every coordinate at the study's
    ``initial_position``."""
    from workbench.models.logistic import LogisticRegression

    if isinstance(model, LogisticRegression):
        return config["initial_scale"] * rng.standard_normal(shape + (model.dim,))
    if not hasattr(model, "initial_position"):
        return np.full(shape + (model.dim,), float(config["initial_position"]))
    return np.asarray(model.initial_position(rng, shape), dtype=float)


def check_text(config: dict) -> None:
    """Refuse, before any work, a language model's text that cannot train it: a file with a
    character outside ``alphabet`` (``text_source``, naming it with its line and column), or a
    training text shorter than one window of ``sequence_length`` characters and its next."""
    from workbench.data.text import held_out_count

    if config["text_source"] == MARKOV:
        length = config["n_characters"]
        train = length - held_out_count(length, config["test_fraction"])
    else:
        train = len(file_corpus(config["text_source"], config["alphabet"],
                                config["test_fraction"]).train_text)
    if config["sequence_length"] > train - 1:
        raise validation.InvalidParameter(
            "sequence_length", config["sequence_length"],
            f"is longer than the training text: a window and its next characters need "
            f"sequence_length + 1 <= {train} characters")


def file_corpus(path: str, alphabet: str, test_fraction: float):
    """A text file read over its alphabet, once per process and version of the file for the
    points that share it (a file changed since is read again)."""
    try:
        version = Path(path).stat().st_mtime_ns
    except OSError:
        version = None  # the reader names the missing file
    return _read_corpus(path, alphabet, test_fraction, version)


@lru_cache(maxsize=4)
def _read_corpus(path: str, alphabet: str, test_fraction: float, version: int | None):
    """:func:`file_corpus`'s read; ``version`` (the file's modification time) keys the cache
    alone."""
    from workbench.data.text import read_text_corpus

    return read_text_corpus(path, alphabet, test_fraction, field="text_source")


def language_model(experiment: str, config: dict, seed):
    """The character-level GRU or LSTM on the configured text (module docstring): the Markov
    source's (its transitions and text keyed by the experiment) or a file's, the same for every
    sweep point."""
    from workbench.data.markov_text import MarkovTextSource
    from workbench.models.recurrent import RecurrentLanguageModel

    if config["text_source"] == MARKOV:
        source = MarkovTextSource.random(generator(seed, experiment, "markov-source"),
                                         config["alphabet"], config["markov_order"])
        corpus = source.corpus(generator(seed, experiment, "text"), config["n_characters"],
                               config["test_fraction"])
    else:
        corpus = file_corpus(config["text_source"], config["alphabet"],
                             config["test_fraction"])
    return RecurrentLanguageModel(corpus.train_text, corpus.alphabet, config["prior_scale"],
                                  corpus.test_text, config["cell"], config["n_layers"],
                                  config["hidden_size"], config["sequence_length"])
