"""What theory says: bound records, exact closed forms, optimal step sizes, rates and checks.

This package knows nothing of ``workbench`` or ``simulators``: checks take numbers (estimates,
Monte Carlo errors, exact values) and return verdicts with their evidence.
"""
