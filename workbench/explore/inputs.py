"""Free-text inputs of the dashboard, parsed with errors that name the field."""

from __future__ import annotations

from simulators.validation import InvalidParameter


def parse_numbers(field: str, text: str) -> tuple[float, ...] | None:
    """``"1, 0.5 2"`` -> ``(1.0, 0.5, 2.0)``; blank -> None (the default applies)."""
    words = text.replace(",", " ").split()
    if not words:
        return None
    values = []
    for i, word in enumerate(words):
        try:
            values.append(float(word))
        except ValueError:
            raise InvalidParameter(f"{field}[{i}]", word, "must be a number") from None
    return tuple(values)
