"""The dashboard's pages: script (relative to this package), title and icon, in the order the
navigation lists them. Adding a page is adding its script and one line here."""

from pathlib import Path

EXPLORE = [
    ("views/system.py", "System", ":material/lan:"),
    ("views/playground.py", "Sampler playground", ":material/science:"),
    ("views/bounds_explorer.py", "Bounds explorer", ":material/functions:"),
    ("views/bound_lab.py", "Bound lab", ":material/edit_note:"),
    ("views/study_editor.py", "Study editor", ":material/edit_document:"),
    ("views/experiments.py", "Experiment browser", ":material/folder_open:"),
]
LESSONS = [
    ("lessons/staleness_step.py", "Staleness vs step size", ":material/school:"),
    ("lessons/local_updates.py", "Non-IID shards and local updates", ":material/school:"),
    ("lessons/speedup.py", "Speed-up of the variance", ":material/school:"),
]


def scripts() -> list[Path]:
    """Every page's script, absolute, in navigation order."""
    here = Path(__file__).parent
    return [here / path for path, _, _ in EXPLORE + LESSONS]
