"""The System page's numbers: what the schedule says, a hand-checkable round robin, and the
downpour and elastic protocols beside the single server (counts, reduction, timelines), and
the charts that draw them."""

from dataclasses import replace

import numpy as np
import pytest

from simulators.schedule import COUPLING, PULL, PUSH
from simulators.static import round_robin
from simulators.validation import InvalidParameter
from workbench.explore.inputs import parse_numbers
from workbench.explore.system import (
    SystemSettings,
    bars_chart,
    compare_protocols,
    protocols_chart,
    simulate,
    simulate_protocol,
    timeline_chart,
)

from .test_charts import legend_fields, spec_and_rows, tooltip_fields


def test_constant_latency_without_server_time_is_the_round_robin():
    """P equal workers, no server or network time: update l from worker l mod P reads version
    max(l - P + 1, 0), and P updates land per unit time (simulators.static.round_robin)."""
    settings = SystemSettings(n_workers=4, latency="constant", server_update_time=0.0,
                              n_updates=100)
    view = simulate(settings)
    reference = round_robin(100, 4)
    np.testing.assert_array_equal(view.schedule.staleness, reference.staleness)
    np.testing.assert_array_equal(view.schedule.time, reference.time)
    assert float(view.wall_clock_per_update[0]) == pytest.approx(0.25)  # 25 rounds / 100
    assert view.max_staleness == 3
    assert view.mean_staleness == pytest.approx((0 + 1 + 2 + 3 * 97) / 100)
    np.testing.assert_allclose(view.utilisation.values, 1.0)  # always computing
    assert view.n_dropped == 0


def test_summary_and_timeline_follow_the_schedule():
    settings = SystemSettings(n_workers=6, n_servers=2, latency="lognormal", latency_shape=0.8,
                              straggler_probability=0.2, server_update_time=0.1,
                              network_delay=0.05, staleness_bound=6, n_updates=150)
    view = simulate(settings)
    schedule = view.schedule
    applied = schedule.applied
    assert view.n_dropped == int((~applied).sum()) > 0  # the bound drops some gradients
    assert view.max_staleness <= 6
    assert view.mean_staleness == pytest.approx(schedule.staleness[applied].mean())
    timeline = view.timeline
    np.testing.assert_allclose(timeline.worker_start + timeline.worker_duration,
                               schedule.finish_time)
    np.testing.assert_allclose(timeline.server_start + timeline.server_duration,
                               schedule.time[applied])
    for server in range(2):
        last = schedule.time[applied & (schedule.server == server)][149]
        assert float(view.wall_clock_per_update.sel(server=server)) == pytest.approx(last / 150)
    summary = view.summary()
    assert summary["applied updates"] == 300
    assert summary["events"] == schedule.n_events


def test_the_same_settings_give_the_same_schedule_and_a_new_seed_another():
    settings = SystemSettings(n_workers=5, n_updates=80)
    first, again = simulate(settings), simulate(settings)
    np.testing.assert_array_equal(first.schedule.time, again.schedule.time)
    other = simulate(SystemSettings(n_workers=5, n_updates=80, seed=7))
    assert not np.array_equal(first.schedule.time, other.schedule.time)


@pytest.mark.parametrize("settings, field", [
    (SystemSettings(n_workers=0), "n_workers"),
    (SystemSettings(n_servers=0), "n_servers"),
    (SystemSettings(n_updates=0), "n_updates"),
    (SystemSettings(latency_mean=0.0), "latency_mean"),
    (SystemSettings(speed_factors=(1.0, 2.0)), "speed_factors"),
    (SystemSettings(straggler_probability=1.5), "straggler_probability"),
])
def test_bad_settings_name_their_field(settings, field):
    with pytest.raises(InvalidParameter) as error:
        simulate(settings)
    assert error.value.field == field


def test_number_lists_parse_or_name_the_bad_entry():
    assert parse_numbers("speed_factors", " 1, 0.5  2 ") == (1.0, 0.5, 2.0)
    assert parse_numbers("speed_factors", "  ") is None
    with pytest.raises(InvalidParameter) as error:
        parse_numbers("speed_factors", "1, fast")
    assert error.value.field == "speed_factors[1]"


# ------------------------------------------------------------------ protocols (issue 16)

def test_protocols_run_the_same_local_steps_and_count_their_messages():
    """L = 200 local steps, P = 4, π = 4: the single server exchanges a gradient and a reply
    per step; downpour 50 pushes and their 50 pulls; elastic 50 steps per chain in 13 rounds,
    coupled after each but the last: 12 × 4 couplings, each a state and a reply."""
    views = {v.protocol: v.summary()
             for v in compare_protocols(SystemSettings(n_updates=200, period=4))}
    assert [v["local steps"] for v in views.values()] == [200, 200, 200]
    assert views["single-server"] | {"makespan": 0, "time per local step": 0} == {
        "protocol": "single-server", "local steps": 200, "pushes": 0, "pulls": 0,
        "couplings": 0, "messages": 400, "makespan": 0, "time per local step": 0}
    assert (views["downpour"]["pushes"], views["downpour"]["pulls"],
            views["downpour"]["messages"]) == (50, 50, 100)
    assert (views["elastic"]["couplings"], views["elastic"]["messages"]) == (48, 96)
    for summary in views.values():
        assert summary["time per local step"] == pytest.approx(summary["makespan"] / 200)


def test_downpour_with_period_one_is_the_single_server_timeline():
    """Reduction: π = 1 pushes are the single server's gradients (same latency draws)."""
    settings = SystemSettings(n_workers=3, n_updates=60, period=1, network_delay=0.1,
                              server_update_time=0.02, latency="lognormal")
    single, downpour = (simulate_protocol(settings, p) for p in ("single-server", "downpour"))
    for field in ("worker", "worker_start", "worker_duration", "applied", "server",
                  "server_start"):
        np.testing.assert_array_equal(getattr(downpour.timeline, field),
                                      getattr(single.timeline, field))
    assert single.timeline.message_kind.size == 0
    assert downpour.makespan == single.makespan
    # negative control: with π = 2 a push is two latency draws, not one gradient
    two = simulate_protocol(replace(settings, period=2), "downpour").timeline
    assert not np.array_equal(two.worker_duration[:10], single.timeline.worker_duration[:10])


def test_protocol_timelines_follow_their_schedules():
    settings = SystemSettings(n_workers=3, n_updates=90, period=3, network_delay=0.2,
                              server_update_time=0.05, staleness_bound=1)
    downpour = simulate_protocol(settings, "downpour")
    schedule, line = downpour.schedule, downpour.timeline
    pushes = schedule.kind == PUSH
    np.testing.assert_array_equal(line.worker_start + line.worker_duration,
                                  schedule.finish_time[pushes])
    assert (~line.applied).any()  # the bound drops some pushes; they are still answered
    up = line.message_to_server
    assert set(line.message_kind[up]) == {"push"} and set(line.message_kind[~up]) == {"pull"}
    assert up.sum() == (~up).sum() == pushes.sum()
    np.testing.assert_allclose(line.message_received - line.message_sent, 0.2)
    # a push arrives before the master processes it (an applied one takes 0.05, a dropped
    # one none); a pull leaves when it has
    processing = np.where(schedule.applied[pushes], 0.05, 0.0)
    np.testing.assert_array_less(line.message_received[up] - 1e-9,
                                 schedule.time[pushes] - processing)
    np.testing.assert_array_equal(line.message_sent[~up], schedule.time[schedule.kind == PULL])

    elastic = simulate_protocol(settings, "elastic")
    schedule, line = elastic.schedule, elastic.timeline
    couplings = schedule.kind == COUPLING
    assert line.worker.size == 3 * 30 and np.all(line.applied)  # 30 local steps per chain
    np.testing.assert_array_equal(line.server, 0)  # the centre
    np.testing.assert_allclose(line.server_start + 0.05, schedule.time[couplings])
    assert set(line.message_kind) == {"coupling"} and line.message_to_server.sum() == 27
    np.testing.assert_array_less(line.message_received[line.message_to_server] - 1e-9,
                                 schedule.time[couplings] - 0.05)


def test_elastic_without_a_coupling_round_sends_no_message():
    view = simulate_protocol(SystemSettings(n_workers=2, n_updates=20, period=10), "elastic")
    assert view.summary()["couplings"] == 0 and view.messages == 0


@pytest.mark.parametrize("settings, protocol, field", [
    (SystemSettings(period=0), "downpour", "period"),
    (SystemSettings(period=0), "elastic", "period"),
    (SystemSettings(coupling_strength=1.5), "elastic", "coupling_strength"),
    (SystemSettings(coupling_strength=-0.1), "elastic", "coupling_strength"),
    (SystemSettings(n_workers=0), "elastic", "n_workers"),
    (SystemSettings(n_updates=0), "downpour", "n_updates"),
    (SystemSettings(), "ring", "protocol"),
])
def test_bad_protocol_settings_name_their_field(settings, protocol, field):
    with pytest.raises(InvalidParameter) as error:
        simulate_protocol(settings, protocol)
    assert error.value.field == field


def test_the_timeline_chart_has_a_bar_per_computation_and_update_with_tooltips():
    view = simulate(SystemSettings(n_workers=3, staleness_bound=1, n_updates=60))
    spec, drawn = spec_and_rows(timeline_chart(view))
    bars, *lines = spec["layer"]
    assert bars["mark"]["type"] == "bar" and not lines  # one server: no messages
    assert {k: bars["encoding"][k]["field"] for k in ("x", "x2", "y", "y2")} == {
        "x": "start", "x2": "end", "y": "low", "y2": "high"}
    assert tooltip_fields(bars) == ["curve", "point", "start", "end", "duration"]
    assert legend_fields(spec) == [["curve"]]
    computed = view.timeline.worker.size
    dropped = drawn[drawn["curve"] == "dropped (too stale)"]
    assert len(dropped) == view.n_dropped > 0
    assert len(drawn[drawn["curve"].str.startswith(("computation", "dropped"))]) == computed
    assert (drawn["curve"] == "update").sum() == 60
    first = drawn.iloc[0]
    assert first["end"] - first["start"] == pytest.approx(view.timeline.worker_duration[0])
    assert "worker 2" in bars["encoding"]["y"]["axis"]["labelExpr"]
    assert '"server"' in bars["encoding"]["y"]["axis"]["labelExpr"]


def test_the_protocols_chart_draws_every_message_between_its_rows():
    settings = SystemSettings(n_workers=2, n_updates=40, period=4, network_delay=0.1)
    views = compare_protocols(settings)
    spec, drawn = spec_and_rows(protocols_chart(views, settings.n_workers))
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["bar", "rule"]
    labels = spec["layer"][0]["encoding"]["y"]["axis"]["labelExpr"]
    assert "downpour: master" in labels and "elastic: centre" in labels
    pushes = drawn[drawn["curve"] == "push"]
    assert len(pushes) == views[1].summary()["pushes"] == 10
    assert np.allclose(pushes["end"] - pushes["start"], 0.1)  # sent, then received
    # a push goes up from a downpour worker's row (3, 4) to the master's (5)
    assert set(pushes["low"]) <= {3, 4} and set(pushes["high"]) == {5}


def test_the_bar_charts_are_the_staleness_histogram_and_the_utilisation():
    view = simulate(SystemSettings())
    _, staleness = spec_and_rows(bars_chart(view, "staleness"))
    assert staleness["value"].tolist() == view.staleness_histogram.values.tolist()
    spec, used = spec_and_rows(bars_chart(view, "utilisation"))
    assert used["value"].tolist() == pytest.approx(view.utilisation.values.tolist())
    assert spec["encoding"]["y"]["scale"]["domain"] == [0, 1]
    with pytest.raises(InvalidParameter):
        bars_chart(view, "latency")
