"""Kept replicate blocks (issue 33: "the store keeps blocks, never recomputes them"): a sweep
that keeps blocks (a sequential check's looks) stores each run of blocks it computes, and a run
of the same points with more replicates reads them and computes only its new blocks, into
exactly the Dataset a plain run with that many replicates gives."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import xarray as xr

from tests.studies.blocks import split_point
from workbench import experiments
from workbench.core.parameters import Parameter
from workbench.run import runner
from workbench.run.executors import open_workers
from workbench.run.experiment import Experiment
from workbench.run.main_job import run_all
from workbench.store.netcdf import read_netcdf
from workbench.store.result_store import block_store

BLOCK = 5


@pytest.fixture(autouse=True)
def keep_any_point(monkeypatch):
    """The points here are fast: keep their blocks however short their computation."""
    monkeypatch.setattr(runner, "KEEP_MIN_SECONDS", 0.0)


class BlockCoin(Experiment):
    """Two points of R replicates of N(0, 1) in blocks of five, each replicate drawn from its
    own seed (so a block is the same numbers whatever R); every call of ``run_blocks`` writes
    the blocks it computed to ``log`` (a file, so that pool processes report too)."""

    name = "block-coin"
    parameters = (Parameter("n_replicates", 10, "replicates R"),
                  Parameter("n_points", 2, "points"),
                  Parameter("log", "", "where run_blocks writes the blocks it computed"))
    sweep_dims = ("point",)

    def points(self, config):
        return [{"point": i} for i in range(config["n_points"])]

    def point_identity(self, config, point):
        return {k: v for k, v in config.items() if k not in ("log", *point)}

    def work(self, config, point):
        return config["n_replicates"]

    def _ranges(self, config):
        n = config["n_replicates"]
        return [range(a, min(a + BLOCK, n)) for a in range(0, n, BLOCK)]

    def replicate_blocks(self, config, point):
        return len(self._ranges(config))

    def kept_blocks(self, config, point):
        return self._ranges(config)

    def run_blocks(self, config, point, seed, blocks):
        with open(config["log"], "a") as log:
            log.write(json.dumps([point["point"], list(blocks)]) + "\n")
        rows = np.concatenate([np.arange(r.start, r.stop)
                               for r in (self._ranges(config)[b] for b in blocks)])
        draws = [np.random.default_rng([seed, point["point"], int(i)]).standard_normal()
                 for i in rows]
        return xr.Dataset({"x": ("replicate", draws), "label": ((), "coin")},
                          coords={"replicate": rows})

    def finish_point(self, config, point, seed, raw):
        return xr.Dataset({"x": (("point", "replicate"), [raw["x"].values]),
                           "mean": (("point",), [raw["x"].values.mean()])},
                          coords={"point": [point["point"]]})


def _run(out, config, processes=1, keep_blocks=True, seed=7, experiment=None):
    experiment = experiment or BlockCoin()
    with open_workers(processes=processes) as workers:
        (outcome,) = run_all([experiment], False, seed, out, workers, figures=False,
                             judge=False, configs=[config], log=io.StringIO(),
                             keep_blocks=keep_blocks)
    assert not outcome.error, outcome.error
    return outcome


def _doubled_reads_the_kept_blocks(tmp_path, experiment, first, doubled):
    """Run ``first`` keeping its blocks, then ``doubled`` (twice the replicates) on two
    processes after it, and check that it stores what a plain run of ``doubled`` stores;
    the larger run's outcome."""
    _run(tmp_path / "looks", first, experiment=experiment)
    larger = _run(tmp_path / "looks", doubled, processes=2, experiment=experiment)
    _run(tmp_path / "plain", doubled, keep_blocks=False, experiment=experiment)
    name = f"{experiment.name}.nc"
    xr.testing.assert_identical(read_netcdf(tmp_path / "looks" / name),
                                read_netcdf(tmp_path / "plain" / name))
    return larger


def _computed(log) -> dict[int, list[int]]:
    blocks: dict[int, list[int]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        point, some = json.loads(line)
        blocks.setdefault(point, []).extend(some)
    return {point: sorted(some) for point, some in blocks.items()}


@pytest.mark.parametrize("processes, n_points", [(1, 2), (2, 2), (2, 1)])
def test_a_larger_run_reads_the_kept_blocks_and_computes_only_its_new_ones(tmp_path, processes,
                                                                           n_points):
    """With one process, and with two (a lone point then splits: its new blocks run as two
    tasks, and a third finishes it)."""
    log = tmp_path / "computed.jsonl"
    coin = BlockCoin()

    def config(n_replicates):
        return coin.configure({"n_replicates": n_replicates, "n_points": n_points,
                               "log": str(log)})

    first = _run(tmp_path / "looks", config(10), processes)
    assert _computed(log) == {i: [0, 1] for i in range(n_points)}
    assert first.sweep.kept_blocks == 0
    log.unlink()
    larger = _run(tmp_path / "looks", config(20), processes)
    # blocks 0 and 1 read, not computed
    assert _computed(log) == {i: [2, 3] for i in range(n_points)}
    assert larger.sweep.kept_blocks == 2 * n_points
    assert (f"{2 * n_points} of their replicate blocks kept from an earlier run"
            in larger.sweep.describe())
    assert bool(larger.sweep.split) == (n_points < processes)
    assert larger.sweep.reused_seconds >= 0 and larger.sweep.kept_seconds >= 0
    plain = _run(tmp_path / "plain", config(20), keep_blocks=False)
    xr.testing.assert_identical(read_netcdf(tmp_path / "looks" / "block-coin.nc"),
                                read_netcdf(tmp_path / "plain" / "block-coin.nc"))
    # negative control: the identity is not vacuous, another seed's blocks differ
    other = _run(tmp_path / "other", config(20), keep_blocks=False, seed=8)
    assert not other.dataset["x"].equals(plain.dataset["x"])
    # the blocks are kept beside the points, one file a run of blocks a task computed
    manifest = tmp_path / "looks" / "store" / "block-coin.blocks" / "manifest.jsonl"
    runs = sorted(tuple(json.loads(line)["replicates"])
                  for line in manifest.read_text().splitlines())
    assert set(runs) <= {(0, 5), (5, 10), (0, 10), (10, 15), (15, 20), (10, 20)}
    assert {rows for rows in runs if rows[0] == 0} and {rows for rows in runs if rows[1] == 20}


def test_a_plain_run_keeps_nothing_and_recompute_reads_no_kept_block(tmp_path):
    log = tmp_path / "computed.jsonl"
    coin = BlockCoin()
    _run(tmp_path, coin.configure({"n_replicates": 10, "log": str(log)}), keep_blocks=False)
    assert not (tmp_path / "store" / "block-coin.blocks").exists()
    _run(tmp_path, coin.configure({"n_replicates": 10, "log": str(log)}))  # points stored
    log.unlink(missing_ok=True)
    with open_workers(processes=1) as workers:
        run_all([coin], False, 7, tmp_path, workers, figures=False, judge=False,
                configs=[coin.configure({"n_replicates": 15, "log": str(log)})],
                log=io.StringIO(), keep_blocks=True, recompute=True)
    assert _computed(log) == {0: [0, 1, 2], 1: [0, 1, 2]}


def test_a_corrupt_kept_run_is_set_aside_and_its_blocks_computed_again(tmp_path, capsys):
    log = tmp_path / "computed.jsonl"
    coin = BlockCoin()
    _run(tmp_path / "looks", coin.configure({"n_replicates": 10, "log": str(log)}))
    kept = block_store(tmp_path / "looks" / "store", coin.name)
    (entry,) = [e for e in kept.manifest().values() if e["point"] == {"point": 1}]
    path = kept.path(entry["key"])
    damaged = bytearray(path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    path.write_bytes(bytes(damaged))
    log.unlink()
    larger = _run(tmp_path / "looks", coin.configure({"n_replicates": 20, "log": str(log)}))
    assert "kept replicate blocks of point point=1 of block-coin are corrupt" in (
        capsys.readouterr().err)
    assert _computed(log) == {0: [2, 3], 1: [0, 1, 2, 3]}
    assert larger.sweep.kept_blocks == 2
    plain = _run(tmp_path / "plain", coin.configure({"n_replicates": 20, "log": str(log)}),
                 keep_blocks=False)
    xr.testing.assert_identical(larger.dataset.drop_attrs(), plain.dataset.drop_attrs())


def test_the_gaussian_mean_and_its_designs_keep_their_blocks_bit_for_bit(tmp_path):
    """stale-gaussian's sweep points and bound-design points: a run with twice the replicates
    after a kept run reads every earlier block, and stores what a plain run stores (the larger
    run on two processes); a design's point now splits into its blocks too."""
    stale = experiments.get("stale-gaussian")
    small = {"n_replicates": 20, "replicate_block": 10, "base_iterations": 40,
             "staleness": [1, 2, 5], "rate_staleness": [2, 8], "rate_iterations": [100, 200],
             "envelope_staleness": [1, 2], "envelope_relative_step": [0.05, 0.1],
             "envelope_iterations": [100, 200], "n_checkpoints": 4}
    first = stale.configure(small, quick=True)
    points = stale.points(first)
    designs = [p for p in points if stale.design_of(p) is not None]
    assert designs and all(stale.kept_blocks(first, p) == [range(0, 10), range(10, 20)]
                           for p in points)
    _run(tmp_path / "looks", first, experiment=stale)
    _run(tmp_path / "plain-first", first, keep_blocks=False, experiment=stale)
    xr.testing.assert_identical(read_netcdf(tmp_path / "looks" / "stale-gaussian.nc"),
                                read_netcdf(tmp_path / "plain-first" / "stale-gaussian.nc"))
    doubled = stale.configure({**small, "n_replicates": 40}, quick=True)
    larger = _run(tmp_path / "looks", doubled, processes=2, experiment=stale)
    assert larger.sweep.kept_blocks == 2 * len(points)
    _run(tmp_path / "plain", doubled, keep_blocks=False, experiment=stale)
    xr.testing.assert_identical(read_netcdf(tmp_path / "looks" / "stale-gaussian.nc"),
                                read_netcdf(tmp_path / "plain" / "stale-gaussian.nc"))
    # a design's point run as two tasks is the whole point; another seed's is not
    for design in designs[-1:]:
        whole = stale.run_point(doubled, design, 7)
        xr.testing.assert_identical(split_point(stale, doubled, design, 7, [[0, 1], [2, 3]]),
                                    whole)
        assert not split_point(stale, doubled, design, 8, [[0], [1, 2, 3]]).equals(whole)


def test_a_look_is_predicted_less_the_kept_blocks_it_reads(tmp_path):
    """The next look reads this look's kept blocks: its predicted time is this look's scaled
    by the replicates, less their compute seconds. Each point reports the seconds its blocks
    took, at most its own: the rest finished it."""
    from bounds.sequential import Look
    from workbench.run.until_decided import Track

    coin = BlockCoin()
    config = coin.configure({"n_replicates": 10, "log": str(tmp_path / "log")})
    outcome = _run(tmp_path, config)
    track = Track(coin, {}, config, False)
    track.absorb(outcome, Look(1))
    cost = track.cost
    assert cost.kept == pytest.approx(outcome.sweep.kept_seconds) and cost.kept > 0
    pairs = list(zip(outcome.sweep.point_seconds, outcome.sweep.block_seconds, strict=True))
    assert pairs and all(0 < blocks <= point for point, blocks in pairs)
    assert cost.finishing == pytest.approx(sum(point - blocks for point, blocks in pairs))
    assert track.n_workers == 1 and cost.longest > 0
    assert track.predicted(3) == pytest.approx(4 * cost.work - cost.kept + 4 * cost.serial)


def test_a_point_whose_blocks_are_all_read_spent_its_seconds_finishing(tmp_path):
    """A point that differs from a stored one only in a key no block reads
    (``unblocked_keys``) reads every block and computes none: no block seconds, and all its
    seconds finished it. Its first run computed its blocks (negative control)."""
    from workbench.run.until_decided import LookCost

    class Finished(BlockCoin):
        """``label`` is only written where a point is finished."""

        parameters = (*BlockCoin.parameters, Parameter("label", "a", "a finishing label"))
        unblocked_keys = ("label",)

    coin, log = Finished(), str(tmp_path / "log")
    first = _run(tmp_path, coin.configure({"log": log}), experiment=coin)
    assert all(seconds > 0 for seconds in first.sweep.block_seconds)
    again = _run(tmp_path, coin.configure({"log": log, "label": "b"}), experiment=coin)
    assert again.sweep.computed and again.sweep.kept_blocks == 4  # two points of two blocks
    assert again.sweep.block_seconds == [0.0, 0.0]
    cost = LookCost.of(again, 1)
    assert cost.finishing == pytest.approx(sum(again.sweep.point_seconds)) and cost.finishing > 0


def test_blocks_computed_faster_than_keeping_them_costs_are_not_kept(tmp_path, monkeypatch):
    log = tmp_path / "computed.jsonl"
    coin = BlockCoin()
    monkeypatch.setattr(runner, "KEEP_MIN_SECONDS", 60.0)  # BlockCoin's blocks take less
    _run(tmp_path, coin.configure({"n_replicates": 10, "log": str(log)}), processes=2)
    assert not (tmp_path / "store" / "block-coin.blocks").exists()
    monkeypatch.setattr(runner, "KEEP_MIN_SECONDS", 0.0)
    _run(tmp_path, coin.configure({"n_replicates": 20, "log": str(log)}), processes=2)
    log.unlink()
    larger = _run(tmp_path, coin.configure({"n_replicates": 40, "log": str(log)}))
    assert _computed(log) == {0: [4, 5, 6, 7], 1: [4, 5, 6, 7]}
    assert larger.sweep.kept_blocks == 8


def _kept_runs(out) -> list[tuple[int, int]]:
    manifest = out / "store" / "block-coin.blocks" / "manifest.jsonl"
    return sorted(tuple(json.loads(line)["replicates"])
                  for line in manifest.read_text().splitlines()) if manifest.exists() else []


@pytest.mark.parametrize("processes", [1, 2])
def test_a_lone_block_shorter_than_the_block_size_is_neither_kept_nor_credited(tmp_path,
                                                                               processes):
    """Three replicates in blocks of five: a run with twice them has the block [0, 5), not
    [0, 3), so nothing is kept and the next look is credited with no seconds; the larger run
    computes its blocks anew and stores what a plain run stores."""
    log = tmp_path / "computed.jsonl"
    coin = BlockCoin()

    def config(n_replicates):
        return coin.configure({"n_replicates": n_replicates, "log": str(log)})

    first = _run(tmp_path / "looks", config(3), processes)
    assert _kept_runs(tmp_path / "looks") == []
    assert first.sweep.kept_seconds == 0
    log.unlink()
    larger = _run(tmp_path / "looks", config(6), processes)
    assert _computed(log) == {0: [0, 1], 1: [0, 1]} and larger.sweep.kept_blocks == 0
    # the larger run's [0, 5) lasts and is kept, its short [5, 6) is not
    assert _kept_runs(tmp_path / "looks") == [(0, 5)] * 2
    _run(tmp_path / "plain", config(6), keep_blocks=False)
    xr.testing.assert_identical(read_netcdf(tmp_path / "looks" / "block-coin.nc"),
                                read_netcdf(tmp_path / "plain" / "block-coin.nc"))


def test_only_the_full_blocks_before_a_short_last_one_are_kept_and_reused(tmp_path):
    """Twelve replicates, blocks [0, 5), [5, 10), [10, 12): the first two are kept (and their
    seconds credited), the last is not; the run with 24 reads the two and computes the rest,
    into what a plain run of 24 stores."""
    log = tmp_path / "computed.jsonl"
    coin = BlockCoin()

    def config(n_replicates):
        return coin.configure({"n_replicates": n_replicates, "n_points": 1, "log": str(log)})

    first = _run(tmp_path / "looks", config(12))
    assert _kept_runs(tmp_path / "looks") == [(0, 10)]
    assert first.sweep.kept_seconds > 0
    log.unlink()
    larger = _run(tmp_path / "looks", config(24))
    assert _computed(log) == {0: [2, 3, 4]} and larger.sweep.kept_blocks == 2
    _run(tmp_path / "plain", config(24), keep_blocks=False)
    xr.testing.assert_identical(read_netcdf(tmp_path / "looks" / "block-coin.nc"),
                                read_netcdf(tmp_path / "plain" / "block-coin.nc"))


def test_lasting_blocks_are_the_full_ones_of_a_run_with_twice_the_replicates():
    coin = BlockCoin()
    for n, lasting in ((3, set()), (5, {0}), (12, {0, 1}), (15, {0, 1, 2})):
        config = coin.configure({"n_replicates": n})
        ranges = coin.kept_blocks(config, {"point": 0})
        assert runner.lasting_blocks(coin, config, {"point": 0}, ranges) == lasting


def test_logistic_regressions_blocks_are_kept_bit_for_bit_and_networks_are_not(tmp_path):
    """A held-out point keeps its blocks where they do not depend on the replicate count:
    logistic regression (one draw of starts for all replicates), not a network (starts drawn
    layer by layer) nor an averaged prediction (scored in draw blocks sized by the count)."""
    speedup = experiments.get("stale-blr-speedup")
    small = {"n_replicates": 12, "replicate_block": 6, "n_iterations": 300,
             "n_evaluations": 30, "workers": [1, 2, 4]}
    first = speedup.configure(small, quick=True)
    assert [speedup.kept_blocks(first, p) for p in speedup.points(first)] == [
        [range(0, 6), range(6, 12)]] * 3
    network = experiments.get("stale-nn-workers")
    averaged = experiments.get("protocols-networks")
    for other in (network, averaged):
        config = other.configure(quick=True)
        assert all(other.kept_blocks(config, p) is None for p in other.points(config))
    # multi-server keeps both parts' blocks: logistic regression's, and its pooled Gaussian's
    multi = experiments.get("multi-server")
    config = multi.configure(quick=True)
    assert {p["part"] for p in multi.points(config)
            if multi.kept_blocks(config, p) is not None} == {"gaussian", "logistic"}
    doubled = speedup.configure({**small, "n_replicates": 24}, quick=True)
    larger = _doubled_reads_the_kept_blocks(tmp_path, speedup, first, doubled)
    assert larger.sweep.kept_blocks == 2 * 3


def test_dsgld_points_keep_their_blocks_bit_for_bit(tmp_path):
    """A D-SGLD point on traveling chains with a seeding block per replicate: a run with twice
    the replicates after a kept run reads every earlier block (on two processes, one point
    split into its blocks) and stores what a plain run stores."""
    dsgld = experiments.get("dsgld-imbalance")
    small = {"replicate_block": 1, "burn_in": 400, "n_iterations": 1600,
             "correction": ["corrected"]}
    first = dsgld.configure({**small, "n_replicates": 2}, quick=True)
    doubled = dsgld.configure({**small, "n_replicates": 4}, quick=True)
    larger = _doubled_reads_the_kept_blocks(tmp_path, dsgld, first, doubled)
    assert larger.sweep.kept_blocks == 2 and larger.sweep.split


def test_phase_space_points_keep_their_blocks_bit_for_bit(tmp_path):
    """integrator-order's SGHMC phase-space points in seeding blocks of 20: a run with twice the
    replicates after a kept run reads every earlier block (on two processes) and stores what a
    plain run stores."""
    order = experiments.get("integrator-order")
    small = {"replicate_block": "20", "integrator": ["euler"], "iterations": [64, 256]}
    first = order.configure({**small, "n_replicates": 40}, quick=True)
    assert all(order.kept_blocks(first, p) == [range(0, 20), range(20, 40)]
               for p in order.points(first))
    doubled = order.configure({**small, "n_replicates": 80}, quick=True)
    larger = _doubled_reads_the_kept_blocks(tmp_path, order, first, doubled)
    assert larger.sweep.kept_blocks == 2 * 2


def test_federated_rounds_points_of_several_seeding_blocks_keep_them_bit_for_bit(tmp_path):
    """fsgld-gaussian with a seeding block per replicate (every estimator replayed in each): a
    run with twice the replicates after a kept run reads every earlier block (on two
    processes) and stores what a plain run stores."""
    federated = experiments.get("fsgld-gaussian")
    small = {"replicate_block": 1, "burn_in": 200, "n_iterations": 800,
             "local_updates": [10]}
    first = federated.configure({**small, "n_replicates": 2}, quick=True)
    doubled = federated.configure({**small, "n_replicates": 4}, quick=True)
    larger = _doubled_reads_the_kept_blocks(tmp_path, federated, first, doubled)
    assert larger.sweep.kept_blocks == 2  # the sweep point's; its bound designs' points keep none


def test_pooled_points_keep_their_blocks_bit_for_bit(tmp_path):
    """multi-server's pooled Gaussian points in seeding blocks of 10 (every server of a
    replicate in its block): a run with twice the replicates after a kept run reads every
    earlier block (on two processes) and stores what a plain run stores."""
    multi = experiments.get("multi-server")
    small = {"gaussian_replicate_block": "10", "gaussian_n_iterations": 200,
             "logistic_n_iterations": 200, "logistic_n_evaluations": 20, "servers": [1, 2]}
    first = multi.configure({**small, "gaussian_n_replicates": 20}, quick=True)
    doubled = multi.configure({**small, "gaussian_n_replicates": 40}, quick=True)
    larger = _doubled_reads_the_kept_blocks(tmp_path, multi, first, doubled)
    assert larger.sweep.kept_blocks == 2 * 2  # the Gaussian part's; the logistic part's stored


def test_protocol_points_keep_their_blocks_bit_for_bit(tmp_path):
    """elastic-vs-downpour's points (seed 003's protocols on the Gaussian mean, every point
    sharing the engine's streams) in seeding blocks of 10: a run with twice the replicates
    after a kept run reads every earlier block (on two processes) and stores what a plain run
    stores."""
    protocols = experiments.get("elastic-vs-downpour")
    small = {"replicate_block": "10", "n_iterations": 200, "period": [1, 4]}
    first = protocols.configure({**small, "n_replicates": 20}, quick=True)
    doubled = protocols.configure({**small, "n_replicates": 40}, quick=True)
    larger = _doubled_reads_the_kept_blocks(tmp_path, protocols, first, doubled)
    assert larger.sweep.kept_blocks == 4 * 2  # two protocols × two periods, two blocks each


def test_drop_blocks_removes_the_kept_blocks_and_a_later_run_computes_them_again(tmp_path,
                                                                                 capsys):
    """``workbench store drop-blocks`` removes every experiment's kept blocks (saying the
    bytes each held) and leaves the points; a larger run afterwards computes every block and
    stores what it stored with the blocks kept. A directory under which a run holds a lock is
    left, named, with exit status 3; an --experiment that is not a name is refused."""
    from workbench.cli.main import main
    from workbench.store import kept_blocks
    from workbench.store.result_store import PointLock

    log = tmp_path / "computed.jsonl"
    coin = BlockCoin()
    looks = tmp_path / "looks"
    _run(looks, coin.configure({"n_replicates": 10, "log": str(log)}))
    [blocks] = kept_blocks.directories(looks)
    assert blocks.name == "block-coin.blocks" and any(blocks.rglob("*.nc"))
    held = PointLock(blocks / "points" / "held.lock")  # a run writing a block
    assert held.acquire(blocking=False)
    try:
        assert main(["store", "drop-blocks", "--out", str(looks)]) == 3
        assert "left" in capsys.readouterr().out and blocks.is_dir()
    finally:
        held.release()
    assert main(["store", "drop-blocks", "--out", str(looks), "--experiment", "../x"]) == 2
    assert main(["store", "drop-blocks", "--out", str(looks)]) == 0
    printed = capsys.readouterr().out
    assert f"removed {blocks}" in printed and "MB freed" in printed
    assert not blocks.exists() and (looks / "store" / "block-coin").is_dir()
    log.unlink()
    larger = _run(looks, coin.configure({"n_replicates": 20, "log": str(log)}))
    assert larger.sweep.kept_blocks == 0
    assert _computed(log) == {0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}
    plain = tmp_path / "plain"
    _run(plain, coin.configure({"n_replicates": 20, "log": str(log)}), keep_blocks=False)
    xr.testing.assert_identical(read_netcdf(looks / "block-coin.nc"),
                                read_netcdf(plain / "block-coin.nc"))
    assert main(["store", "drop-blocks", "--out", str(plain)]) == 0
    assert "nothing to drop" in capsys.readouterr().out
