"""Exceptions cross a process pool with their message and fields (simulators.exceptions): every
exception of the product that builds its message from named parts pickles as a call with those
parts; one raised in a pool worker reaches the parent as itself, where it broke the pool. The
negative control is such an exception without the mixin.

Importing Dask's ``distributed`` installs tblib's reducers for every exception class, which
rebuild an exception without calling its constructor; a run that has imported it is spared the
breakage by that side effect alone. So the round trips here use a pickler without those
reducers, and the pool runs in a fresh interpreter, where ``distributed`` is not imported.
"""

import importlib
import inspect
import io
import json
import pickle
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import bounds
import simulators
import workbench
from simulators.exceptions import PicklesWithArguments
from simulators.validation import InvalidParameter
from workbench.core.headline import HeadlineError
from workbench.core.paper import PaperError
from workbench.run.sweep_tasks import PointsLost
from workbench.store.atomic import WriteFailed
from workbench.store.netcdf import CorruptResult
from workbench.store.result_store import CorruptPoint
from workbench.studies.check_kinds import CheckOptionError
from workbench.studies.designs import DesignError
from workbench.studies.document import StudyError
from workbench.studies.user_code import UserCodeError

EXAMPLES = [
    InvalidParameter("n_workers", 0, "must be an integer >= 1"),
    StudyError("my.toml", 12, "sweep.staleness", "must be a list"),
    CheckOptionError("margin", "must be > 0"),
    UserCodeError("model.py: gradient returned NaN", ("model", "gradient")),
    DesignError(("design", 0, "grid"), "needs two values"),
    CorruptResult(Path("/out/a.nc"), "truncated", stale=True),
    CorruptPoint(Path("/out/store/p.nc"), "checksum differs"),
    WriteFailed(Path("/out/a.nc"), OSError(28, "No space left on device")),
    PointsLost({"staleness=2": "its worker process 7 died (killed by SIGKILL)"}),
    HeadlineError("headline.variable", "not a variable of the result"),
    PaperError(("reported", 0, "value"), "must be a number"),
]


class TwoPartError(ValueError):
    """The negative control: a message built from two parts, pickled the default way."""

    def __init__(self, field, reason):
        super().__init__(f"{field}: {reason}")


def _round_trip(error):
    """``error`` pickled and unpickled by Python's own reducers (module docstring)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer)
    pickler.dispatch_table = {}  # this pickler's own table: no reducer installed by a library
    pickler.dump(error)
    return pickle.loads(buffer.getvalue())


def _product_modules():
    for package in (simulators, bounds, workbench):
        for found in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            try:
                yield importlib.import_module(found.name)
            except ImportError:  # an optional extra (JAX) that is not installed
                continue


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_each_pickles_with_its_message_and_fields(error):
    again = _round_trip(error)
    assert type(again) is type(error)
    assert str(again) == str(error)
    assert _fields(again) == _fields(error)
    assert _fields(error)  # each keeps its parts as fields


def _fields(error) -> dict:
    return {k: v for k, v in vars(error).items() if k != "_constructed_with"}


def test_every_exception_with_its_own_constructor_uses_the_mixin():
    own = {f"{cls.__module__}.{cls.__qualname__}"
           for module in _product_modules()
           for _, cls in inspect.getmembers(module, inspect.isclass)
           if issubclass(cls, BaseException) and cls.__module__ == module.__name__
           and "__init__" in vars(cls)}
    assert own, "found no exception classes"
    missing = sorted(name for name in own
                     if not issubclass(_class(name), PicklesWithArguments))
    assert missing == []
    assert {f"{type(e).__module__}.{type(e).__qualname__}" for e in EXAMPLES} == own


def _class(dotted):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


POOL_PROBE = """
import json, sys
from simulators.validation import InvalidParameter
from workbench.run.pool import WorkerPool

class TwoPartError(ValueError):
    def __init__(self, field, reason):
        super().__init__(f"{field}: {reason}")

def fail(error):
    raise error

if __name__ == "__main__":
    answers = {"distributed imported": "distributed" in sys.modules}
    for name, error in (("mixin", InvalidParameter("n_workers", 0, "must be >= 1")),
                        ("control", TwoPartError("field", "reason"))):
        pool = WorkerPool(2)
        try:
            pool.submit(fail, error).result(timeout=60)
        except BaseException as raised:
            answers[name] = [type(raised).__name__, str(raised),
                             getattr(raised, "field", None)]
        pool.shutdown()
    print(json.dumps(answers))
"""


def test_one_raised_in_a_pool_worker_reaches_the_parent_as_itself_and_the_control_breaks_it():
    done = subprocess.run([sys.executable, "-c", POOL_PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    answers = json.loads(done.stdout)
    assert answers["distributed imported"] is False
    assert answers["mixin"] == ["InvalidParameter", "n_workers = 0 is invalid: must be >= 1",
                                "n_workers"]
    assert answers["control"][0] == "BrokenProcessPool"


def test_negative_control_without_the_mixin_the_round_trip_fails():
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        _round_trip(TwoPartError("field", "reason"))
