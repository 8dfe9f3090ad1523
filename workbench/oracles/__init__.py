"""Exact values the Monte Carlo estimates are judged against (docs/math.md §7 to §15)."""
