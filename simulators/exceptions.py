"""Exceptions that cross a process boundary whatever their constructor takes.

Python pickles an exception as its class and ``args``, and ``args`` is what the constructor
passed to ``Exception.__init__``: the message, for the workbench's exceptions that build their
message from named parts (``InvalidParameter(field, value, allowed)``). Unpickling then calls
the constructor with the message alone and fails. An exception raised inside a process-pool
worker is pickled to reach the parent, so such an exception broke the whole pool instead
("a process in the pool was terminated abruptly"), and the run lost its message.

:class:`PicklesWithArguments` keeps the arguments the exception was constructed with and
pickles it as a call with them.
"""

from __future__ import annotations


class PicklesWithArguments:
    """Mixin, first among an exception's bases: pickled as a call of its class with the
    arguments it was constructed with (module docstring)."""

    def __new__(cls, *args, **kwargs):
        error = super().__new__(cls, *args, **kwargs)
        error._constructed_with = (args, kwargs)
        return error

    def __reduce__(self):
        args, kwargs = self._constructed_with
        return _rebuild, (type(self), args, kwargs)


def _rebuild(cls: type, args: tuple, kwargs: dict) -> BaseException:
    return cls(*args, **kwargs)
