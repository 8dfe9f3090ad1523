"""A study file as text: TOML parsed with :mod:`tomllib`, and where each key sits in the file.

:mod:`tomllib` gives values but not positions, so :class:`Document` also scans the lines for
table headers (``[run]``, ``[[check]]``, ``[sweep.zip]``) and ``key = value`` lines and keeps
the line of every key path, e.g. ``("check", 2, "bound")`` for the ``bound`` key of the third
``[[check]]``. A :class:`StudyError` names the key path and that line, so a researcher sees
``my-study.toml:14: [sampler] step_size: unknown name 'stalenes'``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulators.exceptions import PicklesWithArguments

KeyPath = tuple[str | int, ...]

#: how deeply a study's tables and arrays may nest (the shipped ones nest three levels)
MAX_DEPTH = 32

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*)\s*=""")


class StudyError(PicklesWithArguments, ValueError):
    """A study the workbench refuses: the message names the file, line and key."""

    def __init__(self, source: str, line: int | None, key: str, message: str):
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")
        self.source, self.line, self.key, self.reason = source, line, key, message


def _parts(dotted: str) -> list[str]:
    if dotted[:1] in "\"'":
        return [dotted[1:-1]]
    return [part.strip() for part in dotted.split(".")]


def key_text(path: KeyPath) -> str:
    """``("check", 2, "bound")`` → ``[[check]] #3 bound``; ``("run", "x")`` → ``[run] x``;
    ``("part", "a", "check", 0, "kind")`` → ``[[part.a.check]] #1 kind``."""
    if not path:
        return ""
    index = next((k for k, p in enumerate(path) if isinstance(p, int)), None)
    if index:
        rest = ".".join(str(p) for p in path[index + 1:])
        table = ".".join(str(p) for p in path[:index])
        return f"[[{table}]] #{path[index] + 1}" + (f" {rest}" if rest else "")
    if len(path) == 1:
        return f"[{path[0]}]"
    return f"[{'.'.join(str(p) for p in path[:-1])}] {path[-1]}"


@dataclass
class Document:
    """A parsed study file: ``data`` (the TOML values) and ``lines`` (key path → line);
    ``renamed``: where a key path of ``data`` is written in the file, by its leading part
    (a part of a study of parts reads ``("run", "n_iterations")`` written under
    ``("part", "a", "run", "n_iterations")``, :mod:`workbench.studies.parts`)."""

    source: str
    data: dict[str, Any]
    lines: dict[KeyPath, int] = field(default_factory=dict)
    text: str = ""
    renamed: dict[KeyPath, KeyPath] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, source: str = "<study>") -> Document:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            match = re.search(r"line (\d+)", str(error))
            raise StudyError(source, int(match.group(1)) if match else None, "",
                             f"not valid TOML: {error}") from None
        except (RecursionError, MemoryError):  # tomllib recurses into nested arrays/tables
            raise StudyError(source, None, "", f"not a study: nested too deeply to read (a "
                                               f"study nests at most {MAX_DEPTH} levels)") from None
        _check_depth(source, data)
        return cls(source, data, _locate(text), text)

    @classmethod
    def read(cls, path: str | Path) -> Document:
        path = Path(path)
        try:
            content = path.read_bytes()
        except OSError as error:
            raise StudyError(str(path), None, "", f"cannot be read: {error.strerror}") from None
        if b"\x00" in content:
            line = content[:content.index(b"\x00")].count(b"\n") + 1
            raise StudyError(str(path), line, "", "not a study: a binary file (it holds NUL "
                                                  "bytes), where a TOML text file is expected")
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as error:
            line = content[:error.start].count(b"\n") + 1
            raise StudyError(str(path), line, "",
                             f"not a study: not UTF-8 text (byte 0x{content[error.start]:02x} "
                             f"at offset {error.start}); a study is a TOML file in "
                             "UTF-8") from None
        return cls.parse(text, str(path))

    def written(self, path: KeyPath) -> KeyPath:
        """``path`` as the file writes it (``renamed``)."""
        for end in range(len(path), 0, -1):
            if path[:end] in self.renamed:
                return self.renamed[path[:end]] + path[end:]
        return path

    def line(self, path: KeyPath) -> int | None:
        """The line of ``path``, or of its nearest enclosing table when it has none."""
        path = self.written(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def error(self, path: KeyPath, message: str) -> StudyError:
        return StudyError(self.source, self.line(path), key_text(self.written(path)), message)


def _check_depth(source: str, data: dict) -> None:
    """Refuse values nested deeper than :data:`MAX_DEPTH` (walked without recursion), so that
    nothing downstream recurses into a hostile file."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise StudyError(source, None, "", f"not a study: nested more than {MAX_DEPTH} "
                                               "levels deep")
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))


def _locate(text: str) -> dict[KeyPath, int]:
    lines: dict[KeyPath, int] = {}
    table: KeyPath = ()
    counts: dict[KeyPath, int] = {}  # arrays of tables ([[check]], [[design.check]]) so far

    def resolved(names) -> KeyPath:
        """The path of a header's names, each array of tables at its latest table."""
        path: KeyPath = ()
        for name in names:
            path = (*path, name)
            if path in counts:
                path = (*path, counts[path] - 1)
        return path

    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        if header := _HEADER.match(line):
            names = tuple(_parts(header.group(2)))
            if header.group(1) == "[[":
                array = (*resolved(names[:-1]), names[-1])
                counts[array] = counts.get(array, 0) + 1
                table = (*array, counts[array] - 1)
            else:
                table = resolved(names)
            lines.setdefault(table, number)
            continue
        if key := _KEY.match(line):
            lines.setdefault((*table, *_parts(key.group(1))), number)
    return lines
