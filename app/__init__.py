"""The Streamlit dashboard: pages only (docs/architecture.md). Every number a page shows comes from
:mod:`workbench.explore` and the packages behind it; start it with ``workbench dashboard``
or ``streamlit run app/dashboard.py``."""
