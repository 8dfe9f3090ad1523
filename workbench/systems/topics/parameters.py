"""The fields of a topic-model study (seed 004 §4.2), each declared once: the corpus and LDA's
priors (``[model]``), the cost model (``[system]``), the samplers compared and SGRLD's settings
(``[sampler]``), the time horizon and the perplexity's (``[run]``). The defaults are seed 004's
where it gives them (K = 100, α = 0.01, β = 10⁻⁴, 100 Gibbs sweeps, b = 1000, c = 0.6)."""

from __future__ import annotations

from simulators import validation
from workbench.core.parameters import Parameter, ValidatedParameter
from workbench.core.validators import at_least_one, at_least_two, non_negative, positive

#: a generated corpus (:func:`workbench.data.corpus.generate_corpus`) instead of a file, and the
#: Reuters stories the optional ``lda`` package ships (:func:`workbench.data.corpus.reuters`)
GENERATED_CORPUS = "generated"
REUTERS_CORPUS = "reuters"
#: the samplers a topic-model study compares: D-SGLD with complete coupling, independent chains
#: and groups (seed 004 §4.2 (d)), SGRLD on one machine (c), AD-LDA (a), Async-LDA (b), and
#: collapsed Gibbs on one machine
TOPIC_SAMPLERS = ("d-cc", "d-ci", "d-hybrid", "sgrld", "ad-lda", "async-lda",
                  "collapsed-gibbs")


def _samplers(name, value):
    if not isinstance(value, list) or not value:
        raise validation.InvalidParameter(name, value, "must be a non-empty list of samplers")
    for i, entry in enumerate(value):
        if entry not in TOPIC_SAMPLERS:
            raise validation.InvalidParameter(f"{name}[{i}]", entry, "must be one of "
                                              + ", ".join(TOPIC_SAMPLERS))
    if len(set(value)) != len(value):
        raise validation.InvalidParameter(name, value, "must not repeat a sampler")
    return list(value)


def _path_or_generated(name, value):
    if not isinstance(value, str) or not value.strip():
        raise validation.InvalidParameter(name, value, f"must be {GENERATED_CORPUS!r}, "
                                                       f"{REUTERS_CORPUS!r} or the path of a "
                                                       "UCI docword file")
    return value


def _optional_path(name, value):
    if not isinstance(value, str):
        raise validation.InvalidParameter(name, value, "must be a path (\"\": none)")
    return value


CORPUS = Parameter("corpus", GENERATED_CORPUS, "lda: generated (an LDA corpus of known topics, "
                   "workbench/data/corpus.py), reuters (the 395 stories of the lda package, the "
                   "optional extra topics) or PATH of a UCI bag-of-words docword file (the last "
                   "n_held_out documents of a read corpus held out)", _path_or_generated)
VOCABULARY_FILE = Parameter("vocabulary_file", "", "lda: PATH of the UCI vocab file naming the "
                            "docword file's words (\"\": unnamed)", _optional_path)
N_TOPICS = Parameter("n_topics", 100, "lda: K, topics of the model (and of a generated corpus; "
                     "seed 004: 100)", at_least_two)
DOCUMENT_PRIOR = Parameter("document_prior", 0.01, "lda: α of the Dirichlet prior on each "
                           "document's topic proportions (seed 004: 0.01)", positive)
TOPIC_PRIOR = Parameter("topic_prior", 1e-4, "lda: β of the Dirichlet prior on each topic's "
                        "word probabilities (seed 004: 0.0001)", positive)
VOCABULARY_SIZE = Parameter("vocabulary_size", 1000, "lda, generated corpus: W, words",
                            at_least_two)
N_DOCUMENTS = Parameter("n_documents", 10_000, "lda, generated corpus: training documents",
                        at_least_one)
N_HELD_OUT = Parameter("n_held_out", 1000, "lda: held-out documents, each split 90/10 for "
                       "document-completion perplexity (seed 004: 1,000)", at_least_one)
DOCUMENT_LENGTH = Parameter("document_length", 100, "lda, generated corpus: tokens per "
                            "document", at_least_two)
TOPIC_CONCENTRATION = Parameter("topic_concentration", 0.05, "lda, generated corpus: the "
                                "Dirichlet concentration the true topics are drawn with "
                                "(small: sparse, well separated topics)", positive)

COST_GIBBS_TOKEN = Parameter("cost_gibbs_token", 1.0, "cost model: one token's Gibbs update, "
                             "the unit of simulated time", positive)
COST_SGRLD_TOKEN = Parameter("cost_sgrld_token", 1.0, "cost model: SGRLD's work per minibatch "
                             "token beyond its Gibbs sweeps", non_negative)
COST_TOPIC_ENTRY = Parameter("cost_topic_entry", 0.1, "cost model: updating one topic-word "
                             "entry (an SGRLD step, a merge)", non_negative)
COST_MESSAGE_ENTRY = Parameter("cost_message_entry", 1.0, "cost model: sending one topic-word "
                               "entry between machines", non_negative)

SAMPLERS_COMPARED = Parameter("topic_samplers", list(TOPIC_SAMPLERS[:6]),
                              "lda: the samplers compared, along the dim topic_sampler: "
                              + ", ".join(TOPIC_SAMPLERS), _samplers)
STEP_OFFSET = Parameter("step_offset", 1000.0, "lda: b of SGRLD's step ε_t = a(1 + t/b)^(−c) "
                        "(seed 004: 1000)", positive)
STEP_DECAY = Parameter("step_decay", 0.6, "lda: c of SGRLD's step ε_t = a(1 + t/b)^(−c) "
                       "(seed 004: 0.6)", non_negative)
def _candidates(name, value):
    if not isinstance(value, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in value):
        raise validation.InvalidParameter(name, value, "must be a list of positive step sizes")
    if len(set(value)) != len(value):
        raise validation.InvalidParameter(name, value, "must not repeat a step size")
    return [float(v) for v in value]


STEP_CANDIDATES = ValidatedParameter(
    "step_candidates", [], "lda: candidates for a of SGRLD's step, chosen as seed 004 does by "
    "parallel short runs (SGRLD, tuning_time each, scored on a validation split of training "
    "documents) and kept in the dataset; empty: a = step_size", _candidates)
TUNING_TIME = Parameter("tuning_time", 1e6, "lda: simulated time of each short run choosing a "
                        "among step_candidates", positive)
GIBBS_SWEEPS = Parameter("gibbs_sweeps", 100, "lda: Gibbs sweeps over each minibatch "
                         "document in an SGRLD step, the first half burn-in (seed 004: 100)",
                         at_least_two)

TIME_HORIZON = Parameter("time_horizon", 1e7, "lda: simulated time every sampler runs for, in "
                         "the cost model's unit", positive)
PERPLEXITY_TIMES = Parameter("perplexity_times", 20, "lda: equally spaced simulated times at "
                             "which held-out perplexity is evaluated", at_least_two)
PERPLEXITY_SWEEPS = Parameter("perplexity_sweeps", 50, "lda: Gibbs sweeps estimating each "
                              "held-out document's topic proportions from its observed 90 %",
                              at_least_two)

MODEL_PARAMETERS = (CORPUS, VOCABULARY_FILE, N_TOPICS, DOCUMENT_PRIOR, TOPIC_PRIOR,
                    VOCABULARY_SIZE, N_DOCUMENTS, N_HELD_OUT, DOCUMENT_LENGTH,
                    TOPIC_CONCENTRATION)
COST_PARAMETERS = (COST_GIBBS_TOKEN, COST_SGRLD_TOKEN, COST_TOPIC_ENTRY, COST_MESSAGE_ENTRY)
SAMPLER_PARAMETERS = (SAMPLERS_COMPARED, STEP_OFFSET, STEP_DECAY, STEP_CANDIDATES, TUNING_TIME,
                      GIBBS_SWEEPS)
RUN_PARAMETERS = (TIME_HORIZON, PERPLEXITY_TIMES, PERPLEXITY_SWEEPS)
