"""Exact values the Monte Carlo estimates are judged against (math.md §7)."""
