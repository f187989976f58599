/* ---- vi_control: small dense linear algebra shared by our C (Newton driver, whole-horizon DDP kernel) ----
 * LU with partial pivoting, Cholesky, solves with A and A^T, and Higham's 1-norm condition estimate (the
 * algorithm LAPACK's dgecon / dpocon use): the matrices are tiny (M_{k+1} bordered by constraints, Q_uu), where a call into
 * LAPACK costs more than the arithmetic. */
#include <math.h>
#include <float.h>

/* Optimised even when the generated functions around it are built at -O0 (huge models): a 100x100 LU at -O0
 * costs milliseconds. O3 vectorizes the elementwise column updates (restrict columns); sums are never
 * reassociated (no -ffast-math), so the numbers are those of the scalar code. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O3")
#endif

static int vi_lu(double* A, long long n, long long* piv) {
  int info = 0;
  for (long long k = 0; k < n; k++) {
    long long p = k;
    double amax = fabs(A[k + k * n]);
    for (long long i = k + 1; i < n; i++) {
      double a = fabs(A[i + k * n]);
      if (a > amax) { amax = a; p = i; }
    }
    piv[k] = p;
    if (A[p + k * n] == 0.0) { if (!info) info = (int)k + 1; continue; }
    if (p != k)
      for (long long j = 0; j < n; j++) { double t = A[k + j * n]; A[k + j * n] = A[p + j * n]; A[p + j * n] = t; }
    double inv = 1.0 / A[k + k * n];
    double* restrict ck = A + k * n; /* distinct columns: the axpy below may be vectorized (same operations) */
    for (long long i = k + 1; i < n; i++) ck[i] *= inv;
    for (long long j = k + 1; j < n; j++) {
      double* restrict cj = A + j * n;
      const double a = cj[k];
      if (a != 0.0)
        for (long long i = k + 1; i < n; i++) cj[i] -= ck[i] * a;
    }
  }
  return info;
}

/* Cholesky A = L Lᵀ in place (L in the lower triangle, column-major); 1 unless positive definite (LAPACK dpotrf's
 * test: a pivot <= 0 or NaN). */
static int vi_cholesky(double* A, long long n) {
  for (long long k = 0; k < n; k++) {
    double d = A[k + k * n];
    if (!(d > 0.0)) return 1;
    d = sqrt(d);
    A[k + k * n] = d;
    double* restrict ck = A + k * n;
    for (long long i = k + 1; i < n; i++) ck[i] /= d;
    for (long long j = k + 1; j < n; j++) {
      double* restrict cj = A + j * n;
      const double a = ck[j];
      if (a != 0.0)
        for (long long i = j; i < n; i++) cj[i] -= ck[i] * a;
    }
  }
  return 0;
}

/* A x = b with A = L Lᵀ. */
static void vi_cholesky_solve(const double* L, long long n, double* b) {
  for (long long j = 0; j < n; j++) {
    const double bj = (b[j] /= L[j + j * n]);
    if (bj != 0.0)
      for (long long i = j + 1; i < n; i++) b[i] -= L[i + j * n] * bj;
  }
  for (long long j = n - 1; j >= 0; j--) { /* Lᵀ x = b row by row (strided updates, as vi_lu_solve_t) */
    const double bj = (b[j] /= L[j + j * n]);
    if (bj != 0.0)
      for (long long i = 0; i < j; i++) b[i] -= L[j + i * n] * bj;
  }
}

/* A x = b with P A = L U: b <- P b, then L, then U. */
static void vi_lu_solve(const double* LU, long long n, const long long* piv, double* b) {
  for (long long k = 0; k < n; k++)
    if (piv[k] != k) { double t = b[k]; b[k] = b[piv[k]]; b[piv[k]] = t; }
  for (long long j = 0; j < n; j++) {
    double bj = b[j];
    if (bj != 0.0)
      for (long long i = j + 1; i < n; i++) b[i] -= LU[i + j * n] * bj;
  }
  for (long long j = n - 1; j >= 0; j--) {
    b[j] /= LU[j + j * n];
    double bj = b[j];
    if (bj != 0.0)
      for (long long i = 0; i < j; i++) b[i] -= LU[i + j * n] * bj;
  }
}

/* A^T x = b: U^T w = b, L^T v = w, x = P^T v (swaps in reverse order). Row-wise (strided) updates rather than
 * dot products: no serial chain of additions, about twice as fast at n = 32 (the condition estimate's solves). */
static void vi_lu_solve_t(const double* LU, long long n, const long long* piv, double* b) {
  for (long long i = 0; i < n; i++) {
    const double bi = (b[i] /= LU[i + i * n]);
    if (bi != 0.0)
      for (long long j = i + 1; j < n; j++) b[j] -= LU[i + j * n] * bi;
  }
  for (long long i = n - 1; i >= 0; i--) {
    const double bi = b[i];
    if (bi != 0.0)
      for (long long j = 0; j < i; j++) b[j] -= LU[i + j * n] * bi;
  }
  for (long long k = n - 1; k >= 0; k--)
    if (piv[k] != k) { double t = b[k]; b[k] = b[piv[k]]; b[piv[k]] = t; }
}

static double vi_asum(const double* x, long long n) {
  double s = 0.0;
  for (long long i = 0; i < n; i++) s += fabs(x[i]);
  return s;
}

static long long vi_iamax(const double* x, long long n) {
  long long j = 0; double m = fabs(x[0]);
  for (long long i = 1; i < n; i++) if (fabs(x[i]) > m) { m = fabs(x[i]); j = i; }
  return j;
}

/* max |x_i|, NaN if any entry is NaN (like numpy's max). */
static double vi_maxabs(const double* x, long long n) {
  double m = 0.0;
  for (long long i = 0; i < n; i++) { double a = fabs(x[i]); if (a != a) return a; if (a > m) m = a; }
  return m;
}

/* 1-norm of A (max column sum), NaN-propagating. */
static double vi_norm1(const double* A, long long n) {
  double m = 0.0;
  for (long long j = 0; j < n; j++) { double s = vi_asum(A + j * n, n); if (s != s) return s; if (s > m) m = s; }
  return m;
}

/* A x = b (trans 0) or Aᵀ x = b (trans 1) from P A = L U, or from A = L Lᵀ when piv is 0 (symmetric). */
static void vi_factor_solve(const double* F, long long n, const long long* piv, double* x, int trans) {
  if (!piv) vi_cholesky_solve(F, n, x);
  else if (trans) vi_lu_solve_t(F, n, piv, x);
  else vi_lu_solve(F, n, piv, x);
}

/* Reciprocal condition number in the 1-norm from the LU factors (or the Cholesky factor, piv = 0): ||A^-1||_1 by
 * Hager's method as refined by Higham (ACM TOMS 14, 1988, Alg. 4.1), the estimator of LAPACK's dlacn2 in
 * dgecon (dpocon for the Cholesky factor). */
static double vi_rcond(const double* LU, long long n, const long long* piv, double anorm, double* x, double* sg) {
  if (n == 0) return 1.0;
  if (anorm != anorm) return anorm;
  if (anorm == 0.0) return 0.0;
  double est;
  for (long long i = 0; i < n; i++) x[i] = 1.0 / (double)n;
  vi_factor_solve(LU, n, piv, x, 0);
  if (n == 1) { est = fabs(x[0]); goto done; }
  est = vi_asum(x, n);
  for (long long i = 0; i < n; i++) { sg[i] = x[i] >= 0.0 ? 1.0 : -1.0; x[i] = sg[i]; }
  vi_factor_solve(LU, n, piv, x, 1);
  long long j = vi_iamax(x, n);
  for (int iter = 2;; iter++) {
    for (long long i = 0; i < n; i++) x[i] = 0.0;
    x[j] = 1.0;
    vi_factor_solve(LU, n, piv, x, 0);
    double estold = est;
    est = vi_asum(x, n);
    int same = 1;
    for (long long i = 0; i < n; i++) if ((x[i] >= 0.0 ? 1.0 : -1.0) != sg[i]) { same = 0; break; }
    if (same || est <= estold) break;
    for (long long i = 0; i < n; i++) { sg[i] = x[i] >= 0.0 ? 1.0 : -1.0; x[i] = sg[i]; }
    vi_factor_solve(LU, n, piv, x, 1);
    long long jlast = j;
    j = vi_iamax(x, n);
    if (!(x[jlast] != fabs(x[j]) && iter < 5)) break;
  }
  /* Alternating-sign vector guards against the estimator's known failure cases. */
  for (long long i = 0; i < n; i++) x[i] = (i % 2 ? -1.0 : 1.0) * (1.0 + (double)i / (double)(n - 1));
  vi_factor_solve(LU, n, piv, x, 0);
  double temp = 2.0 * vi_asum(x, n) / (double)(3 * n);
  if (temp > est) est = temp;
done:
  return est != 0.0 ? (1.0 / est) / anorm : 0.0;
}

/* Factor J in place and estimate its reciprocal condition; 0 when a pivot is exactly zero. */
static double vi_factor(double* J, long long n, long long* piv, double* x, double* sg) {
  double anorm = vi_norm1(J, n);
  if (vi_lu(J, n, piv)) return 0.0;
  return vi_rcond(J, n, piv, anorm, x, sg);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
