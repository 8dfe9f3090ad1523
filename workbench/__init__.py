"""What happens: the workbench's models, samplers, engine, estimators, experiments and interfaces.

Its packages, from the bottom layer up; a module may import from the layers below its own and
from its own package, never upward or sideways (``tests/test_layers.py`` checks it, imports
inside functions included). ``simulators`` (when and where: the distributed system) and
``bounds`` (what theory says) lie below all of them and know nothing of the workbench; ``app``
(the Streamlit pages) lies above it, and nothing here imports ``app``.

- ``core``: the shared vocabulary — parameter declarations, test functions φ, the compiled
  path's spec records;
- ``data``, ``stats``, ``gradients``, ``oracles``, ``store``: data sets and shards; estimators
  and diagnostics; minibatches and gradient estimators; exact values; the result store;
- ``samplers``, ``models``: pure sampler steps; models and their gradients;
- ``engine``: a schedule replayed over many replicates;
- ``run``, ``realtime``, ``reference``: sweeps through the store and the main job; real
  multi-process runs; reference posteriors of models without a closed form;
- ``studies``, ``systems``: the study file and the one generic experiment; system set-ups the
  built-in experiments share;
- ``experiments``: the built-in experiments and their registry;
- ``explore``, ``report``, ``cli``: what the dashboard computes, the HTML report, the command line.
"""

from importlib.metadata import PackageNotFoundError, version

LAYERS = (
    ("core",),
    ("data", "stats", "gradients", "oracles", "store"),
    ("samplers", "models"),
    ("engine",),
    ("run",),
    ("realtime", "reference"),
    ("systems",),
    ("studies",),
    ("experiments",),
    ("explore", "report"),
    ("cli",),
)

try:
    __version__ = version("sgmcmc-workbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
