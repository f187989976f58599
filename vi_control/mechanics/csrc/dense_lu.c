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

/* The bordered Newton matrix J = [J_dd, -C_1^T; C_2, 0] of a constrained step (Johnson2015, eq. 28a-b; the GNI's rows,
 * Kobilarov2010, eqs. 5, 16): its first nd rows and columns, J_dd ~ M_{k+1}/dt, are in momentum per length (every mass
 * scales them) and the border C is unitless (or per second), so cond(J) mixes units: masses x s leave the motion
 * as it is but make cond_1(J) grow as s^2 (1/s below unit scale). Its condition is judged on the equilibrated
 * D J D = [2^-2e J_dd, -C_1^T; C_2, 0], D = diag(2^-e I_nd, 2^e I_nc), whose condition does not depend on s.
 * e = floor((E_dd - E_b)/2) from the binary exponents of max|J_dd| and max|border| (0 without a border, or when
 * either block is zero or not finite): powers of two, so every scaled number is exact and the same on any machine. */
#define VI_BORDER_EXP_MAX 256
static int vi_border_exponent(const double* J, long long n, long long nd) {
  if (nd <= 0 || nd >= n) return 0;
  double a = 0.0, b = 0.0;
  for (long long j = 0; j < n; j++) { /* a: max|J_dd|; b: max|border| (the zero block skipped); 0 on NaN */
    const double* c = J + j * n;
    double* m = j < nd ? &a : &b;
    for (long long i = 0; i < nd; i++) { const double v = fabs(c[i]); if (!(v <= *m)) { if (v != v) return 0; *m = v; } }
    if (j < nd)
      for (long long i = nd; i < n; i++) { const double v = fabs(c[i]); if (!(v <= b)) { if (v != v) return 0; b = v; } }
  }
  if (!(a > 0.0 && b > 0.0 && a <= DBL_MAX && b <= DBL_MAX)) return 0;
  int ea, eb;
  frexp(a, &ea);
  frexp(b, &eb);
  const int d = ea - eb, e = d >= 0 ? d / 2 : -((1 - d) / 2); /* floor(d / 2) */
  return e > VI_BORDER_EXP_MAX ? VI_BORDER_EXP_MAX : e < -VI_BORDER_EXP_MAX ? -VI_BORDER_EXP_MAX : e;
}

/* 1-norm of D A D, D = diag(2^-e I_nd, 2^e I_(n-nd)) (vi_border_exponent), NaN-propagating. */
static double vi_norm1_scaled(const double* A, long long n, long long nd, int e) {
  if (!e) return vi_norm1(A, n);
  const double dn = ldexp(1.0, -e), up = ldexp(1.0, e);
  double m = 0.0;
  for (long long j = 0; j < n; j++) {
    const double* c = A + j * n;
    double s = 0.0;
    for (long long i = 0; i < nd; i++) s += fabs(c[i]) * dn;
    for (long long i = nd; i < n; i++) s += fabs(c[i]) * up;
    s *= j < nd ? dn : up;
    if (s != s) return s;
    if (s > m) m = s;
  }
  return m;
}

/* (D A D)^-1 x = D^-1 A^-1 D^-1 x (trans: D^-1 A^-T D^-1 x) from A's factors (vi_factor_solve); D^-1 =
 * diag(up I_nd, dn I_(n-nd)), up = 2^e = 1/dn: exact. up = 1: A's own solve. */
static void vi_scaled_solve(const double* F, long long n, const long long* piv, double* x, int trans, long long nd,
                            double up, double dn) {
  if (up != 1.0) {
    for (long long i = 0; i < nd; i++) x[i] *= up;
    for (long long i = nd; i < n; i++) x[i] *= dn;
  }
  vi_factor_solve(F, n, piv, x, trans);
  if (up != 1.0) {
    for (long long i = 0; i < nd; i++) x[i] *= up;
    for (long long i = nd; i < n; i++) x[i] *= dn;
  }
}

/* Reciprocal condition number in the 1-norm from the LU factors (or the Cholesky factor, piv = 0): ||A^-1||_1 by
 * Hager's method as refined by Higham (ACM TOMS 14, 1988, Alg. 4.1), the estimator of LAPACK's dlacn2 in
 * dgecon (dpocon for the Cholesky factor). With e != 0 that of D A D (vi_border_exponent; anorm = ||D A D||_1) from
 * A's factors: the solves are D^-1 A^-1 D^-1 (the estimator of dgecon on the exactly rescaled factors
 * P D A D = (D_P L D_P^-1)(D_P U D), D_P = P D P^T: the same numbers, since powers of two scale exactly). */
static double vi_rcond(const double* LU, long long n, const long long* piv, double anorm, double* x, double* sg,
                       long long nd, int e) {
  if (n == 0) return 1.0;
  if (anorm != anorm) return anorm;
  if (anorm == 0.0) return 0.0;
  const double up = ldexp(1.0, e), dn = ldexp(1.0, -e);
  double est;
  for (long long i = 0; i < n; i++) x[i] = 1.0 / (double)n;
  vi_scaled_solve(LU, n, piv, x, 0, nd, up, dn);
  if (n == 1) { est = fabs(x[0]); goto done; }
  est = vi_asum(x, n);
  for (long long i = 0; i < n; i++) { sg[i] = x[i] >= 0.0 ? 1.0 : -1.0; x[i] = sg[i]; }
  vi_scaled_solve(LU, n, piv, x, 1, nd, up, dn);
  long long j = vi_iamax(x, n);
  for (int iter = 2;; iter++) {
    for (long long i = 0; i < n; i++) x[i] = 0.0;
    x[j] = 1.0;
    vi_scaled_solve(LU, n, piv, x, 0, nd, up, dn);
    double estold = est;
    est = vi_asum(x, n);
    int same = 1;
    for (long long i = 0; i < n; i++) if ((x[i] >= 0.0 ? 1.0 : -1.0) != sg[i]) { same = 0; break; }
    if (same || est <= estold) break;
    for (long long i = 0; i < n; i++) { sg[i] = x[i] >= 0.0 ? 1.0 : -1.0; x[i] = sg[i]; }
    vi_scaled_solve(LU, n, piv, x, 1, nd, up, dn);
    long long jlast = j;
    j = vi_iamax(x, n);
    if (!(x[jlast] != fabs(x[j]) && iter < 5)) break;
  }
  /* Alternating-sign vector guards against the estimator's known failure cases. */
  for (long long i = 0; i < n; i++) x[i] = (i % 2 ? -1.0 : 1.0) * (1.0 + (double)i / (double)(n - 1));
  vi_scaled_solve(LU, n, piv, x, 0, nd, up, dn);
  double temp = 2.0 * vi_asum(x, n) / (double)(3 * n);
  if (temp > est) est = temp;
done:
  return est != 0.0 ? (1.0 / est) / anorm : 0.0;
}

/* Factor J in place (its LU, unscaled: the solves and iterates do not depend on the verdict) and estimate the
 * reciprocal condition of D J D (vi_border_exponent; nd = n: J itself); 0 when a pivot is exactly zero. */
static double vi_factor(double* J, long long n, long long nd, long long* piv, double* x, double* sg) {
  const int e = vi_border_exponent(J, n, nd);
  const double anorm = vi_norm1_scaled(J, n, nd, e);
  if (vi_lu(J, n, piv)) return 0.0;
  return vi_rcond(J, n, piv, anorm, x, sg, nd, e);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
