"""Entry point of the dashboard: ``workbench dashboard`` or ``streamlit run app/dashboard.py``.

The navigation lists every page of :mod:`app.pages`. A page is a script under ``app/views``
or ``app/lessons`` that draws what a :mod:`workbench.explore` module computes.
"""

import streamlit as st

from app.pages import EXPLORE, LESSONS

st.set_page_config(page_title="SG-MCMC workbench", page_icon=":material/monitoring:",
                   layout="wide")
navigation = st.navigation({
    "Explore": [st.Page(path, title=title, icon=icon) for path, title, icon in EXPLORE],
    "Lessons": [st.Page(path, title=title, icon=icon) for path, title, icon in LESSONS],
})
navigation.run()
