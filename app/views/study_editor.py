"""Study editor: edit a study file, see it validated on every change, run its --quick
version with a progress bar, see its verdicts, figures and diagnostics
(:mod:`workbench.explore.study_editor`)."""

import streamlit as st

from app import ui
from workbench.cli.main import DEFAULT_SEED
from workbench.explore import results_browser, study_editor
from workbench.studies.document import StudyError
from workbench.studies.parts_experiment import experiment_of
from workbench.studies.user_code import code_of


@st.cache_resource(show_spinner="Checking the study…", max_entries=32)
def validated(text: str):
    return study_editor.validate(text)


st.title("Study editor")
st.caption("A study declares a model, a system, a sampler, a run, a sweep, its checks and "
           "bounds of your own in TOML: the same file `workbench check FILE.toml` runs. It is "
           "checked on every change (Ctrl+Enter or leaving the box); bound strings are "
           "rebuilt through a whitelist, never executed. The editor opens on the shipped "
           f"`{study_editor.EXAMPLE_STUDY}` study, renamed `{study_editor.EXAMPLE_NAME}`.")

text = st.text_area("study (TOML)", study_editor.example(), height=520, key="study")
try:
    study = validated(text)
except StudyError as error:
    found = study_editor.problem(text, error)
    st.error(f"Invalid study at {ui.literal(found.where)} — {ui.literal(found.reason)}")
    if found.excerpt:
        st.code(f"{found.line}: {found.excerpt}", language="toml")
    st.stop()

experiment = experiment_of(study)
with ui.user_errors():
    config = experiment.configure(quick=True)
    points = experiment.points(config)
columns = st.columns(4)
columns[0].metric("study", study.name)
columns[1].metric("sweep dims", ", ".join(study.sweep_dims) or "none")
columns[2].metric("quick sweep points", len(points))
columns[3].metric("checks", len(study.checks))
if study.bounds:
    st.caption("Bounds of the study: " + ", ".join(f"`{name}`" for name in study.bounds))

directory = ui.results_directory()
with st.sidebar:
    st.header("Run the quick version")
    # the browser's largest exact integer, below the CLI's --seed limit
    seed = st.number_input("seed", min_value=0, max_value=2**53 - 1, value=DEFAULT_SEED,
                           key="seed")
    st.caption(f"Results go to `{directory / study_editor.EDITOR_DIRECTORY}`.")
    code = code_of(config)
    allowed = False
    if code:
        allowed = st.checkbox(f"Allow this study to run Python code: {code}", value=False,
                              key="allow_code",
                              help="Running a study that names Python code runs that code "
                                   "with the dashboard's rights (the command line's "
                                   "--allow-code).")
    start = st.button(f"Run {study.name} --quick", type="primary", key="run_study",
                      disabled=bool(code) and not allowed)

if start:
    quick = ui.quick_run(study.name, lambda progress: study_editor.run(
        study, directory, int(seed), progress, allow_code=allowed))
    st.session_state["study_run"] = (text, int(seed), quick)


def show_run(ran_text: str, ran_seed: int, quick) -> None:
    """The verdicts, figures and diagnostics of the last run."""
    if ran_text != text:
        st.warning("The study has changed since the run shown below: run it again to judge "
                   "the edited version.")
    st.header(f"Verdicts of the last run (seed {ran_seed})")
    ui.verdicts_with_counts(quick.verdicts)
    st.header("Figures")
    for figure in quick.figures:
        st.image(str(figure), caption=figure.name)
    rows = results_browser.diagnostics_rows(ui.load(str(quick.path),
                                                    quick.path.stat().st_mtime))
    if rows:
        st.header("Diagnostics")
        st.dataframe(rows, hide_index=True, width="stretch")


# (an if rather than st.stop: the warm-up draws pages without a session, where st.stop does
# not stop)
last = st.session_state.get("study_run")
if last is None:
    st.info("Run the quick version from the sidebar to see its verdicts and figures.")
else:
    show_run(*last)
