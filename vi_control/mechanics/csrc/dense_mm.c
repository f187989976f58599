/* ---- vi_control: row-major dense products and multi-right-hand-side LU solves shared by our C ----
 * Appended after dense_lu.c (vi_lu's factors): the LQR gains (control/csrc/lqr_kernel.c) and the whole-horizon DDP
 * kernel (planning/csrc/ddp_kernel.c) both build on these, so they live below both layers. Every product sums in
 * the dot form's order and every solve performs vi_lu_solve's operations: the numbers are the scalar code's. */
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O3")
#endif

static void vi_swap_rows(double* B, long long m, long long a, long long b) {
  for (long long c = 0; c < m; c++) { const double t = B[a * m + c]; B[a * m + c] = B[b * m + c]; B[b * m + c] = t; }
}

/* A X = B (trans = 0) or A^T X = B (trans = 1) with P A = L U (vi_lu), for m right-hand sides at once, B row-major
 * (n, m): vi_lu_solve's / vi_lu_solve_t's operations on every system in their order, vectorized across them (their
 * skip of zero entries aside, which changes at most the sign of a zero). */
static void vi_lu_solve_rows(const double* LU, long long n, const long long* piv, double* B, long long m, int trans) {
  if (!trans) {
    for (long long k = 0; k < n; k++)
      if (piv[k] != k)
        vi_swap_rows(B, m, k, piv[k]);
    for (long long j = 0; j < n; j++) {
      const double* bj = B + j * m;
      for (long long i = j + 1; i < n; i++) {
        const double l = LU[i + j * n];
        double* bi = B + i * m;
        for (long long c = 0; c < m; c++) bi[c] -= l * bj[c];
      }
    }
    for (long long j = n - 1; j >= 0; j--) {
      double* bj = B + j * m;
      const double d = LU[j + j * n];
      for (long long c = 0; c < m; c++) bj[c] /= d;
      for (long long i = 0; i < j; i++) {
        const double u = LU[i + j * n];
        double* bi = B + i * m;
        for (long long c = 0; c < m; c++) bi[c] -= u * bj[c];
      }
    }
    return;
  }
  for (long long i = 0; i < n; i++) {
    double* bi = B + i * m;
    const double d = LU[i + i * n];
    for (long long c = 0; c < m; c++) bi[c] /= d;
    for (long long j = i + 1; j < n; j++) {
      const double u = LU[i + j * n];
      double* bj = B + j * m;
      for (long long c = 0; c < m; c++) bj[c] -= u * bi[c];
    }
  }
  for (long long i = n - 1; i >= 0; i--) {
    const double* bi = B + i * m;
    for (long long j = 0; j < i; j++) {
      const double l = LU[i + j * n];
      double* bj = B + j * m;
      for (long long c = 0; c < m; c++) bj[c] -= l * bi[c];
    }
  }
  for (long long k = n - 1; k >= 0; k--)
    if (piv[k] != k)
      vi_swap_rows(B, m, k, piv[k]);
}


/* z[c] (+)= sum_l x[l xs] y[l p + c], c < w: w sums (w constant after inlining: 8, 4 or 1) kept in registers over
 * l — independent chains, and one load of x per l instead of a load and a store of every z per l, as an axpy
 * loop over z did — each still summed l = 0, 1, ... from 0 (or from z), so the numbers are the axpy loop's. */
static inline __attribute__((always_inline)) void vi_row_block(const double* x, long long xs, const double* y,
                                                               long long p, long long m, double* z, int acc,
                                                               const int w) {
  double s[8];
  for (int c = 0; c < w; c++) s[c] = acc ? z[c] : 0.0;
  for (long long l = 0; l < m; l++) {
    const double xl = x[l * xs], *yl = y + l * p;
    for (int c = 0; c < w; c++) s[c] += xl * yl[c];
  }
  for (int c = 0; c < w; c++) z[c] = s[c];
}

/* z[j0 .. p) of one row of a product, by blocks of 8, 4, 2 and 1 columns (a block of 2 instead of two single
 * columns: their sums are one chain of dependent additions each, and p = 7 or 14 left two of them). */
static inline __attribute__((always_inline)) void vi_row(const double* x, long long xs, const double* Y, long long p,
                                                         long long m, double* z, int acc, long long j0) {
  long long j = j0;
  for (; j + 8 <= p; j += 8) vi_row_block(x, xs, Y + j, p, m, z + j, acc, 8);
  for (; j + 4 <= p; j += 4) vi_row_block(x, xs, Y + j, p, m, z + j, acc, 4);
  for (; j + 2 <= p; j += 2) vi_row_block(x, xs, Y + j, p, m, z + j, acc, 2);
  for (; j < p; j++) vi_row_block(x, xs, Y + j, p, m, z + j, acc, 1);
}

/* Z (n, p) = op(X) Y (+ Z if acc), Y row-major (m, p); op(X) = X (n, m) or, tx, X' with X (m, n). Every Z_ij sums
 * l = 0, 1, ... from 0 (the dot form's order). Z must not overlap X or Y. */
static void vi_mm(const double* X, const double* Y, double* Z, long long n, long long m, long long p, int tx, int acc) {
  long long xr = tx ? 1 : m, xs = tx ? n : 1;
  /* xs hidden from the optimizer: known to be 1, GCC 12 loads 8 consecutive x_l at once and shuffles each into
   * place (3x slower at 14 x 14 than this one broadcast per l; same numbers). */
#if defined(__GNUC__)
  __asm__("" : "+r"(xs));
#endif
  for (long long i = 0; i < n; i++) vi_row(X + i * xr, xs, Y, p, m, Z + i * p, acc, 0);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
