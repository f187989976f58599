/* ---- vi_control: dense_lu.c's LU and condition verdict for Python (vi_control.integrators.bordered) ----
 * The linearization in Python (linearization.linearize) factors R_y and judges it as the Newton driver and the planner's
 * kernel do: one implementation, dense_lu.c's vi_factor (prepended). J (n x n, column-major) is overwritten by its
 * LU in LAPACK dgetrf's layout (unit L below the diagonal, U on and above it; piv: the row interchanged with row k
 * at step k, 0-based), so LAPACK's dgetrs solves with it. Returns the reciprocal 1-norm condition of D J D
 * (vi_border_exponent's equilibration of a bordered matrix; nd = n: J's own), 0 for an exactly zero pivot, NaN for a
 * non-finite J. work: 2n doubles. */
double vi_lu_rcond(double* J, long long n, long long nd, long long* piv, double* work) {
  return vi_factor(J, n, nd, piv, work, work + n);
}
