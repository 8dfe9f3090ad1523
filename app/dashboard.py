"""Entry point of the dashboard: ``workbench dashboard`` or ``streamlit run app/dashboard.py``.

The navigation lists every page. A page is a script under ``app/views`` or ``app/lessons``
(paths relative to this file) that draws what a :mod:`workbench.explore` module computes;
adding a lesson is adding its script and one line to :data:`LESSONS`.
"""

import streamlit as st

EXPLORE = [
    ("views/system.py", "System", ":material/lan:"),
    ("views/playground.py", "Sampler playground", ":material/science:"),
    ("views/bounds.py", "Bounds explorer", ":material/functions:"),
    ("views/experiments.py", "Experiment browser", ":material/folder_open:"),
]
LESSONS = [
    ("lessons/staleness_step.py", "Staleness vs step size", ":material/school:"),
    ("lessons/local_updates.py", "Non-IID shards and local updates", ":material/school:"),
    ("lessons/speedup.py", "Speed-up of the variance", ":material/school:"),
]

st.set_page_config(page_title="SG-MCMC workbench", page_icon=":material/monitoring:",
                   layout="wide")
navigation = st.navigation({
    "Explore": [st.Page(path, title=title, icon=icon) for path, title, icon in EXPLORE],
    "Lessons": [st.Page(path, title=title, icon=icon) for path, title, icon in LESSONS],
})
navigation.run()
