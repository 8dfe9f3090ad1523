"""The ``workbench`` command line: :mod:`~workbench.cli.main` (list, show, run, check, report),
:mod:`~workbench.cli.bounds` (``workbench bounds``), :mod:`~workbench.cli.store`
(``workbench store verify``) and :mod:`~workbench.cli.dashboard` (``workbench dashboard``,
which starts the Streamlit app by its script path and never imports it)."""
