"""The engine on JAX (``[run] backend = "jax"``, :mod:`workbench.engine.jax_replay`): the numpy
engine's update to the last bits with the noise off, a replicate's path fixed by its index
alone, and stale-gaussian's oracle checks holding as they do on the numpy engine, with a
mis-stepped sampler as the negative control. JAX is part of the test extra; the tests are
skipped where it is missing.

Every JAX computation runs in one process of its own, started with ``spawn`` (the functions
``_…`` below): JAX starts threads when it first computes, and the suite's later tests fork
process pools, which a multithreaded parent should not do."""

from __future__ import annotations

import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from simulators.static import iid_staleness
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.engine import jax_replay
from workbench.models.gaussian import GaussianMeanModel
from workbench.samplers import SGLD, make_sampler
from workbench.studies.document import StudyError
from workbench.studies.files import loads

pytest.importorskip("jax")

MODEL = GaussianMeanModel(np.random.default_rng(3).normal(0.5, 1.0, size=(200, 3)))
SCHEDULE = iid_staleness(300, np.full(6, 1 / 6), 4)  # τ from 0 to 5, i.i.d.
RUN = dict(n_updates=300, n_replicates=7, initial_position=np.full(3, 2.0), seed=5,
           checkpoints=[1, 10, 100, 300], thin=50, replicate_block=3)
#: stale-gaussian at three staleness values, without its bound designs (one compiled scan per
#: point: the designs' 15 points would add as many compilations)
SMALL = {"staleness": [1, 5, 10], "base_iterations": 200, "n_replicates": 60,
         "replicate_block": 20, "n_checkpoints": 8, "designs": False}


@pytest.fixture(scope="module")
def fresh():
    """One spawned process for the module's JAX computations."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield lambda function, *args: pool.submit(function, *args).result()


def _both(name: str, options: dict):
    """The numpy engine's replay and JAX's of the same run: SGLD or SGHMC ``name`` with its
    noise off, at ``options``' ``step_size`` (1e-3 by default)."""
    from workbench.engine.replay import replay

    options = dict(options)
    sampler = make_sampler(name, options.pop("step_size", 1e-3), 1.0)
    sampler._noise_scale = 0.0
    run = {**RUN, **options}
    return (replay(SCHEDULE, sampler, MODEL.minibatch_gradient(), **run),
            jax_replay.replay(SCHEDULE, sampler, MODEL.minibatch_gradient(), **run))


def _blocks_and_groups():
    """With the noise on: all seven replicates, block 1 alone, groups of one replicate (with
    the progress they report), and another seed."""
    sampler, gradient = make_sampler("sgld", 1e-3), MODEL.minibatch_gradient()
    options = {**RUN, "batch_size": 10}
    reported = []
    return (jax_replay.replay(SCHEDULE, sampler, gradient, **options),
            jax_replay.replay(SCHEDULE, sampler, gradient, **options, blocks=[1]),
            jax_replay.replay(SCHEDULE, sampler, gradient, **options, memory_budget=1,
                              progress=reported.append),
            jax_replay.replay(SCHEDULE, sampler, gradient, **{**options, "seed": 6}),
            reported)


def _stale_gaussian_verdicts(backend: str, step_factor: float = 1.0):
    """stale-gaussian's small configuration's verdicts as (check, verdict, detail), its JAX
    scan stepping with ``step_factor`` times the h the exact oracle assumes, and the JAX and
    device its dataset records (None on the numpy engine)."""
    from workbench.run.runner import run_experiment

    described = jax_replay._sampler_spec

    def stepped(sampler):
        spec = described(sampler)
        return spec._replace(step_size=step_factor * spec.step_size)

    jax_replay._sampler_spec = stepped
    experiment = experiments.get("stale-gaussian")
    config = experiment.configure({**SMALL, "backend": backend})
    dataset = run_experiment(experiment, config, seed=4)
    return ([(v.check, v.verdict, v.detail) for v in experiment.checks(dataset)],
            dataset.attrs.get(jax_replay.DEVICE_ATTR))


def _jax_version() -> str:
    import jax

    return jax.__version__


@pytest.mark.parametrize("name", ["sgld", "sghmc-euler", "sghmc-splitting"])
def test_with_the_noise_off_jax_replays_the_numpy_engines_updates(fresh, name):
    """Noise off and the whole data set as the minibatch (without replacement: any order of
    the same rows), so both engines take the same deterministic steps on a schedule whose
    staleness varies from 0 to 5: the averages, draws and final positions agree to the last
    bits (XLA may reorder a sum)."""
    numpy_run, jax_run = fresh(_both, name, {"batch_size": 200, "replacement": False})
    for test_function, values in numpy_run.averages.items():
        np.testing.assert_allclose(jax_run.averages[test_function], values, rtol=1e-12)
    np.testing.assert_allclose(jax_run.draws, numpy_run.draws, rtol=1e-12)
    np.testing.assert_array_equal(jax_run.draw_iterations, numpy_run.draw_iterations)
    np.testing.assert_allclose(jax_run.final_position, numpy_run.final_position, rtol=1e-12)
    assert (jax_run.diverged_at == -1).all() and (numpy_run.diverged_at == -1).all()


def test_a_divergence_is_flagged_at_the_numpy_engines_sample_count(fresh):
    """A step far beyond the stability limit: both engines flag the same sample count and
    leave NaN at every checkpoint from there on."""
    numpy_run, jax_run = fresh(_both, "sgld", {
        "step_size": 0.05, "batch_size": 200, "replacement": False,
        "divergence_threshold": 1e3})
    assert (numpy_run.diverged_at > 0).all()
    np.testing.assert_array_equal(jax_run.diverged_at, numpy_run.diverged_at)
    for test_function, values in numpy_run.averages.items():
        np.testing.assert_array_equal(np.isnan(jax_run.averages[test_function]),
                                      np.isnan(values))


def test_a_replicates_path_depends_on_its_index_alone(fresh):
    """With the noise on: replicates 3-5 are the same bits run as block 1 alone, inside all
    seven, or in groups of one replicate (a memory budget that fits one; the progress comes
    group by group and adds up to the run's updates); another seed gives other numbers."""
    whole, alone, single, other_seed, reported = fresh(_blocks_and_groups)
    assert len(reported) == 7 and sum(reported) == RUN["n_updates"]
    for name, values in whole.averages.items():
        np.testing.assert_array_equal(alone.averages[name], values[:, 3:6])
        np.testing.assert_array_equal(single.averages[name], values)
    np.testing.assert_array_equal(alone.draws, whole.draws[3:6])
    assert not np.array_equal(other_seed.averages["theta"], whole.averages["theta"])


def test_stale_gaussians_oracle_checks_hold_on_jax_as_on_numpy(fresh):
    """Every oracle check that holds on the numpy engine holds on JAX or, for a variance at
    60 replicates, is inconclusive (other random numbers); every mean holds on both; none is
    violated. The claims the exact oracle refutes (the invariance of the MSE across τ) come
    out the same on both engines."""
    (numpy_run, numpy_device), (jax_run, jax_device) = (
        fresh(_stale_gaussian_verdicts, backend) for backend in ("numpy", "jax"))
    assert numpy_device is None and jax_device == fresh(jax_replay.device)
    assert jax_device.startswith(f"jax {fresh(_jax_version)} on ")
    numpy_verdicts, jax_verdicts = ({check: (verdict, detail) for check, verdict, detail in run}
                                    for run in (numpy_run, jax_run))
    assert set(numpy_verdicts) == set(jax_verdicts)
    oracle = [name for name in numpy_verdicts if name.startswith("oracle/")]
    assert len(oracle) >= 9
    for name in oracle:
        verdict, detail = jax_verdicts[name]
        assert verdict != VIOLATED, (name, detail)
        if "/mean/" in name:
            assert verdict == HOLDS == numpy_verdicts[name][0], detail
        elif numpy_verdicts[name][0] == HOLDS:
            assert verdict in (HOLDS, INCONCLUSIVE), detail
    assert sum(jax_verdicts[name][0] == HOLDS for name in oracle) >= len(oracle) - 3
    for name, (verdict, _) in numpy_verdicts.items():
        if verdict == VIOLATED:
            assert jax_verdicts[name][0] == VIOLATED, name


def test_negative_control_a_mis_stepped_jax_sampler_is_violated(fresh):
    """The JAX scan steps with 1.2 h while the exact oracle assumes h: an oracle check of the
    same small configuration comes out violated."""
    verdicts, _ = fresh(_stale_gaussian_verdicts, "jax", 1.2)
    assert [check for check, verdict, _ in verdicts
            if check.startswith("oracle/") and verdict == VIOLATED]


def test_without_jax_the_backend_is_refused_naming_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # import jax raises ImportError
    with pytest.raises(InvalidParameter, match=r"backend = 'jax' is invalid: needs JAX: pip "
                                               r"install 'sgmcmc-workbench\[jax\]'"):
        experiments.get("stale-gaussian").configure({**SMALL, "backend": "jax"})


def test_backend_on_a_gaussian_point_jax_does_not_run_is_refused_naming_the_line():
    text = ('[study]\nname = "p"\n[model]\nkind = "gaussian-mean"\n[system]\n'
            'kind = "asynchronous"\nn_servers = 2\n[run]\nbackend = "jax"\n'
            '[[check]]\nkind = "oracle"\n')
    with pytest.raises(StudyError, match=r"p.toml:9: \[run\] backend: means nothing here: only "
                                         r"the Gaussian mean's own points"):
        loads(text, "p.toml")


def test_jax_runs_the_gaussian_means_samplers_alone():
    """Refused before anything is computed: pSGLD, and a subclass that changes SGLD's step
    (it inherits ``kernel_spec``, which still describes SGLD's, so the backend would run the
    parent's formula)."""

    class HalfNoise(SGLD):
        def step(self, state, gradient, noise):
            return super().step(state, gradient, 0.5 * noise)

    for sampler in (make_sampler("psgld", 1e-3), HalfNoise(1e-3)):
        with pytest.raises(InvalidParameter, match="runs SGLD and SGHMC on the Gaussian mean"):
            jax_replay.replay(SCHEDULE, sampler, MODEL.minibatch_gradient(), **RUN,
                              batch_size=10)


def test_backend_set_where_it_means_nothing_is_refused_saying_why():
    """``--set backend=jax`` on a phase-space study (integrator-order): not a parameter there,
    and the refusal says why rather than only listing the parameters that are."""
    with pytest.raises(InvalidParameter, match=r"backend = 'jax' is invalid: means nothing "
                                               r"here: only the Gaussian mean's own points"):
        experiments.get("integrator-order").configure({"backend": "jax"})
