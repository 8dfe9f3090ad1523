"""Arrays as the compiled (numba) kernels take them.

numba compiles a kernel once per signature, and an argument's layout (contiguous or strided)
and its read-only flag are part of the signature: a kernel called with a strided or read-only
array compiles again, seconds of the first run after an install (benchmarks/README.md, "Compile
time at a cold start"). Entry points hand their kernels arrays through :func:`kernel_array`, so
that each kernel has one signature whatever their callers pass.
"""

from __future__ import annotations

import numpy as np


def kernel_array(values, dtype) -> np.ndarray:
    """``values`` as a C-contiguous, writable array of ``dtype``: ``values`` itself where it is
    one already, else a copy."""
    return np.require(values, dtype, ("C", "W"))
