"""A judgement of fewer points judges each family at its size at every point
(bounds/family_sizes.py): recorded per check and rate at the judgement of every point,
replayed as the larger of that and the family's own size."""

import pytest
from scipy import stats

from bounds.family_sizes import family_of, family_sizes
from bounds.sequential import Look, at_look
from bounds.verdict import one_sided_z_for_family, student_z_for_family, z_for_family


def _judge(points: int) -> list[float]:
    """Two checks: ``pairs`` compares every pair of ``points`` (two-sided), ``order`` every
    neighbour (one-sided), ``few`` its points with Student's t on 5 units."""
    with family_of("pairs"):
        pairs = z_for_family(0.01, points * (points - 1) // 2)
    with family_of("order"):
        order = one_sided_z_for_family(0.01, points - 1)
    with family_of("few"):
        few = student_z_for_family(0.01, points, 5)
    return [pairs, order, few]


def test_fewer_points_are_judged_at_every_point_s_family_sizes():
    with at_look(Look(3)), family_sizes() as every:
        whole = _judge(5)
    assert every.recorded == {("pairs", False, 0.01): 10, ("order", True, 0.01): 4,
                              ("few", False, 0.01): 5}
    with at_look(Look(3)):
        # negative control: fewer comparisons, smaller critical values
        assert all(a < b for a, b in zip(_judge(2), whole, strict=True))
        with family_sizes(every.recorded):
            assert _judge(2) == whole
            # never below a family's own size
            assert all(a > b for a, b in zip(_judge(6), whole, strict=True))
    assert whole[0] == pytest.approx(stats.norm.isf(0.01 / 8 / 10 / 2))


def test_a_check_s_families_of_one_rate_take_the_largest_size_and_others_are_their_own():
    with family_sizes() as every, family_of("spec"):
        small, large = z_for_family(0.01, 2), z_for_family(0.01, 6)
    assert every.recorded == {("spec", False, 0.01): 6}
    with family_sizes(every.recorded):
        with family_of("spec"):
            assert z_for_family(0.01, 2) == large > small  # stricter, never laxer
            assert z_for_family(0.05, 2) == z_for_family(0.05, 2)  # a rate not recorded
        assert z_for_family(0.01, 2) == small  # another check's family
    assert z_for_family(0.01, 2) == small  # outside: its own size
