"""mechanics/csrc/dense_mm.c's product vi_mm, which the LQR recursions, the DDP kernel and the linearization build on:
bit for bit the dot-product order its header promises (every Z_ij = ((z or 0) + x_0 y_0j) + x_1 y_1j + … from l = 0,
each product rounded before its sum, no fused multiply-add), whatever the shape, transpose or accumulation — the
numbers then do not depend on how the compiler vectorizes it, nor on the machine (its loads are scheduled by hand
for speed: a block of two columns, the row's stride hidden from the optimizer). Oracle: the same sums by Python's
own float arithmetic, one IEEE operation at a time."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from vi_control.mechanics import codegen
from vi_control.mechanics.discrete import DENSE_LU_C, DENSE_MM_C

pytestmark = pytest.mark.skipif(codegen.compiler() is None, reason="needs a C compiler")

WRAPPER = """
void vi_test_mm(const double* X, const double* Y, double* Z, long long n, long long m, long long p, long long tx,
                long long acc) { vi_mm(X, Y, Z, n, m, p, (int)tx, (int)acc); }
"""


@pytest.fixture(scope="module")
def vi_mm():
    lib = codegen.load_our_library(DENSE_LU_C + DENSE_MM_C + WRAPPER, "vi_test_mm", "the dense product test")
    fn = lib.vi_test_mm
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_longlong] * 5

    def call(X, Y, Z, tx, acc):
        n, p = Z.shape
        m = Y.shape[0]
        fn(X.ctypes.data, Y.ctypes.data, Z.ctypes.data, n, m, p, tx, acc)

    return call


def dot_order(X: np.ndarray, Y: np.ndarray, Z0: np.ndarray | None) -> np.ndarray:
    """op(X) Y (+ Z0) summed l = 0, 1, … in Python floats (each * and + one rounding)."""
    n, m, p = X.shape[0], X.shape[1], Y.shape[1]
    out = np.empty((n, p))
    for i in range(n):
        for j in range(p):
            s = 0.0 if Z0 is None else float(Z0[i, j])
            for l in range(m):
                s = s + float(X[i, l]) * float(Y[l, j])
            out[i, j] = s
    return out


SHAPES = [(n, m, p) for n in (1, 2, 7, 14) for m in (1, 3, 7, 14) for p in (1, 2, 3, 5, 7, 9, 14, 21)]


@pytest.mark.parametrize("tx", [0, 1])
@pytest.mark.parametrize("acc", [0, 1])
def test_vi_mm_sums_in_dot_order_bit_for_bit(vi_mm, tx, acc):
    rng = np.random.default_rng(7 + 2 * tx + acc)
    for n, m, p in SHAPES:
        # entries of mixed magnitude: a reordered or fused sum rounds differently on most of them
        opX = rng.standard_normal((n, m)) * 10.0 ** rng.integers(-8, 8, (n, m))
        Y = rng.standard_normal((m, p)) * 10.0 ** rng.integers(-8, 8, (m, p))
        Z0 = rng.standard_normal((n, p))
        X = np.ascontiguousarray(opX.T) if tx else opX  # (tx: the C reads X (m, n) and multiplies by its transpose)
        Z = Z0.copy()
        vi_mm(X, np.ascontiguousarray(Y), Z, tx, acc)
        want = dot_order(opX, Y, Z0 if acc else None)
        assert np.array_equal(Z, want), f"shape (n, m, p) = {(n, m, p)}: max diff {np.abs(Z - want).max():.3g}"
