"""The System page's numbers: what the schedule says, and a hand-checkable round robin."""

import numpy as np
import pytest

from simulators.static import round_robin
from simulators.validation import InvalidParameter
from workbench.explore.inputs import parse_numbers
from workbench.explore.system import SystemSettings, simulate


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
