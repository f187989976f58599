/* ---- vi_control: Newton solve of the forced (constrained) DEL equations, seed 000 eqs. 2a, 28a-b ----
 * One call per step: initial guess q1 = q + dt M(q)^-1 p, Newton with the exact Jacobian (M_{k+1}
 * bordered by constraint Jacobians) or chord Newton (that Jacobian factored once, refreshed only when
 * the updates contract slower than theta_max, residual-only evaluations in between), LU with partial
 * pivoting, Higham's 1-norm condition estimate (the algorithm LAPACK's dgecon uses) on every
 * factorization and on the Jacobian at the root, then the output map (eq. 2b / 28c).
 * Return codes: 0 ok, 1 not converged, 2 singular Jacobian (info[2] = rcond), 3 non-finite input,
 * 4 singular mass matrix in the initial guess, 5 a configuration beyond the stated range (info[2] = its
 * index), 6 a root that cannot be vouched for: a dynamic revolute joint turning more than max_rotation in
 * one step, or q_{k+1} beyond the range (info[2] = the dynamic coordinate's index).
 * info = (residual norm, iterations, rcond). */
#include <math.h>
#include <float.h>

/* The driver is optimised even when the generated functions around it are built at -O0 (huge models):
 * a 100x100 LU at -O0 costs milliseconds. O3 vectorizes the elementwise column updates; sums are never
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
static int vi_chol(double* A, long long n) {
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
static void vi_chol_solve(const double* L, long long n, double* b) {
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
  if (!piv) vi_chol_solve(F, n, x);
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

/* Factor J in place and estimate its reciprocal condition; 0 when a pivot is exactly zero. *anorm = ||J||_1. */
static double vi_factor(double* J, long long n, long long* piv, double* x, double* sg, double* anorm) {
  *anorm = vi_norm1(J, n);
  if (vi_lu(J, n, piv)) return 0.0;
  return vi_rcond(J, n, piv, *anorm, x, sg);
}

long long vi_newton_workspace(long long nq, long long ny) { return ny * ny + 4 * ny + 2 * nq * nq + 2 * nq; }

/* M(q_k) into M, its dynamic block into Mdd (Cholesky-factored in place) and v = Mdd^-1 (p_d - M_dk p_k): the
 * velocity of the initial guess and the chord matrix of an unconstrained step. 1 if M_dd is not positive definite. */
static int vi_mass_chol(const double* q, const double* p, long long nq, long long nd, long long nk,
                        const long long* idx_d, const long long* idx_k, double* M, double* Mdd, double* v,
                        long long* iw, double* w, double* mnorm) {
  const double* arg[1] = {q};
  double* res[1] = {M};
  if (mass(arg, res, iw, w, 0)) return 1;
  for (long long a = 0; a < nd; a++) {
    double s = p[idx_d[a]];
    for (long long b = 0; b < nk; b++) s -= M[idx_d[a] + idx_k[b] * nq] * p[idx_k[b]];
    v[a] = s;
    for (long long b = 0; b < nd; b++) Mdd[a + b * nd] = M[idx_d[a] + idx_d[b] * nq];
  }
  *mnorm = vi_norm1(Mdd, nd);
  if (vi_chol(Mdd, nd)) return 1;
  vi_chol_solve(Mdd, nd, v);
  return 0;
}

/* ip = (nq, nd, nk, nc, nz, max_iterations, use_guess, chord, root_check);
 * dp = (dt, tol, rcond_min, theta_max, max_rotation, max_q); idx = (idx_d, idx_k);
 * rot (nd): 1 for a dynamic coordinate that is an angle (revolute joint).
 * y holds the warm start (or just λ's guess when use_guess); on success y is the solution, xn = x_{k+1}.
 *
 * Chord Newton (MidpointVI docstring, docs/performance_step.md): updates with a factored matrix and residual-only
 * evaluations. The matrix is Δt⁻¹ M(q_k)_dd for an unconstrained step (the impulse-based quasi-Newton matrix of
 * seed 001 eq. 25; the guess factored it already), else M_{k+1} at the guess. M_{k+1} is evaluated, checked and
 * factored again when an update contracts by less than theta_max.
 * Unconstrained step without root_check, converged on Δt⁻¹M(q_k)_dd alone (every update contracted by theta_max):
 * that matrix's condition is checked (Cholesky, dpocon's estimate) in place of M_{k+1}'s, and up to two more
 * quasi-Newton updates polish y below tol (each kept if the residual is not larger). If its rcond is below
 * rcond_min, M_{k+1} is evaluated at y as below.
 * Otherwise (constraints, root_check, or a refresh) M_{k+1} is evaluated once near the root: at the first iterate
 * whose residual is predicted (last contraction ratio times the last residual) to be below sqrt(tol)·scale, or
 * is below it.
 * From there exact-Newton-like updates end at round-off. If the tolerance is met before that, M_{k+1} is evaluated
 * at the returned y for the condition check and one exact update is made with it (as exact Newton checks its
 * last Jacobian). */
int vi_newton_step(const double* z, double* y, double* xn, const long long* ip, const double* dp,
                   const long long* idx, long long* iw, double* w, double* ws, long long* piv, double* info,
                   const long long* rot) {
  const long long nq = ip[0], nd = ip[1], nk = ip[2], nc = ip[3], nz = ip[4], max_it = ip[5];
  const long long ny = nd + nc;
  const double dt = dp[0], tol = dp[1], rcond_min = dp[2], theta_max = dp[3];
  const double max_rotation = dp[4], max_q = dp[5];
  const int chord = (int)ip[7];
  const int qonly = chord && nc == 0 && !ip[8]; /* M_{k+1} only if the quasi-Newton iteration needs it */
  const long long *idx_d = idx, *idx_k = idx + nd;
  double *R = ws, *J = R + ny, *ex = J + ny * ny, *sg = ex + ny, *M = sg + ny, *Mdd = M + nq * nq, *v = Mdd + nq * nq;
  double* y0 = v + nq; /* the guess, for the chord's contraction check (ny) */
  const double *q = z, *p = z + nq;
  const double* arg[2];
  double* res[2];
  info[0] = INFINITY; info[1] = 0.0; info[2] = 0.0;
  for (long long i = 0; i < nz; i++) if (!isfinite(z[i])) return 3;
  for (long long i = 0; i < nq; i++) if (!(fabs(q[i]) <= max_q)) { info[2] = (double)i; return 5; }
  const double scale = 1.0 + vi_maxabs(p, nq);
  /* 0: no matrix factored yet, 1: Δt⁻¹ M(q_k)_dd in Mdd (quasi-Newton), 2: M_{k+1} in J */
  int mat = 0;
  double mnorm = 0.0; /* ||M(q_k)_dd||_1 */
  const int quasi = chord && nc == 0;

  if (ip[6]) { /* q_{k+1} guess from the continuous Legendre transform: q + dt M^-1 p */
    if (vi_mass_chol(q, p, nq, nd, nk, idx_d, idx_k, M, Mdd, v, iw, w, &mnorm)) return 4;
    for (long long a = 0; a < nd; a++) y[a] = q[idx_d[a]] + dt * v[a];
    if (quasi) mat = 1;
  }

  arg[0] = y; arg[1] = z; res[0] = R; res[1] = J;
  double rnorm = INFINITY, dnorm_prev = INFINITY, first_update = INFINITY, anorm = 0.0, rc = 0.0;
  const double eta = sqrt(tol) * scale;
  for (long long i = 0; i < ny; i++) y0[i] = y[i];
  int with_jac = !quasi; /* next evaluation includes the Jacobian (always in exact Newton) */
  int j_at_y = 0;        /* J holds the unfactored Jacobian at the current y */
  int near = 0;          /* M_{k+1} was factored (and checked) near the root */
  int predicted = 0;     /* this evaluation includes M_{k+1} because the residual was predicted below eta */
  long long it;
  for (it = 0; it <= max_it; it++) {
    if (with_jac ? residual(arg, res, iw, w, 0) : residual_only(arg, res, iw, w, 0)) return 1;
    j_at_y = with_jac;
    rnorm = vi_maxabs(R, ny);
    if (!isfinite(rnorm) || rnorm <= tol * scale || it == max_it) break;
    if (!with_jac && mat == 0) { /* warm start of an unconstrained step: the quasi-Newton matrix on first use */
      if (vi_mass_chol(q, p, nq, nd, nk, idx_d, idx_k, M, Mdd, v, iw, w, &mnorm)) {
        if (residual(arg, res, iw, w, 0)) return 1; /* M(q_k) singular: M_{k+1} instead */
        j_at_y = with_jac = 1;
      } else mat = 1;
    }
    if (with_jac) {
      rc = vi_factor(J, ny, piv, ex, sg, &anorm);
      j_at_y = 0;
      if (!(rc >= rcond_min)) { /* chord, away from the root: not this step's verdict (the caller retries exact) */
        info[0] = rnorm; info[1] = (double)it; info[2] = rc;
        return chord && !(predicted || rnorm <= eta) ? 1 : 2;
      }
      mat = 2;
      if (predicted || rnorm <= eta) near = 1;
    }
    if (mat == 2) vi_lu_solve(J, ny, piv, R);
    else { vi_chol_solve(Mdd, nd, R); for (long long i = 0; i < nd; i++) R[i] *= -dt; }
    for (long long i = 0; i < ny; i++) y[i] -= R[i];
    const double dnorm = vi_maxabs(R, ny);
    if (it == 0) first_update = dnorm;
    if (dnorm < 1e-15 * (1.0 + vi_maxabs(y, ny))) { /* stalled at round-off */
      j_at_y = !(qonly && mat == 1);
      if (j_at_y ? residual(arg, res, iw, w, 0) : residual_only(arg, res, iw, w, 0)) return 1;
      rnorm = vi_maxabs(R, ny);
      break;
    }
    /* Chord: keep the factored matrix while the updates contract by theta_max or better, and evaluate M_{k+1}
     * once near the root (the residual predicted below eta, the first contraction ratio taken as theta_max). */
    const double ratio = it == 0 ? theta_max : dnorm / dnorm_prev;
    predicted = chord && !qonly && !near && ratio * rnorm <= eta;
    with_jac = !chord || !(dnorm <= theta_max * dnorm_prev) || predicted;
    dnorm_prev = dnorm;
  }
  /* Converged on Δt⁻¹M(q_k)_dd alone: its condition stands in for M_{k+1}'s (docs/performance_step.md). */
  int qfinal = qonly && mat == 1 && !j_at_y && isfinite(rnorm);
  if (qfinal) {
    rc = vi_rcond(Mdd, nd, 0, mnorm, ex, sg);
    qfinal = rc >= rcond_min;
    anorm = mnorm / dt;
  }
  /* Without a factorization near the returned y, the acceptance floor and the condition check need M_{k+1} there. */
  const int final_check = !qfinal && (!near || j_at_y);
  if (final_check && !j_at_y && isfinite(rnorm)) {
    if (residual(arg, res, iw, w, 0)) return 1;
    rnorm = vi_maxabs(R, ny);
  }
  info[0] = rnorm; info[1] = (double)it;
  /* Accept at the residual's rounding floor ~ eps |J| |q_k| too: R sums terms of size |M/dt| |q|, which
   * exceeds any fixed tolerance on long chains at small dt (seed 001 §4 sizes). The configuration before the
   * step, not the root found: a huge |y| must not excuse its own residual (NewtonSettings). */
  if (final_check) anorm = vi_norm1(J, ny);
  const double floor_r = 64.0 * DBL_EPSILON * anorm * (1.0 + vi_maxabs(q, nq));
  if (!(rnorm <= fmax(tol * scale, floor_r))) return 1;
  if (chord) {
    /* A contracting iteration ends within about its first update of the guess; a chord iteration that
     * travelled further left the guess's basin (a stale Jacobian can overshoot to another root of the DEL
     * equation): report non-convergence, and the caller re-solves with exact Newton from the same guess. */
    double dist = 0.0;
    for (long long i = 0; i < ny; i++) dist = fmax(dist, fabs(y[i] - y0[i]));
    if (dist > 2.0 * first_update + 1e-12 * (1.0 + vi_maxabs(y, ny))) return 1;
  }
  if (final_check) {
    /* The converged Jacobian must be well-conditioned too, or the linearization is garbage. */
    rc = vi_factor(J, ny, piv, ex, sg, &anorm);
    info[2] = rc;
    if (!(rc >= rcond_min)) return 2;
    if (chord) {
      /* One exact Newton update with the Jacobian just factored at the root: chord stopped just below tol
       * (linear rate), this takes y to the root's round-off like exact Newton's last quadratic step. */
      vi_lu_solve(J, ny, piv, R);
      for (long long i = 0; i < ny; i++) { ex[i] = R[i]; y[i] -= R[i]; }
      if (residual_only(arg, res, iw, w, 0)) return 1;
      const double rpol = vi_maxabs(R, ny);
      if (rpol <= fmax(rnorm, floor_r)) info[0] = rpol;
      else for (long long i = 0; i < ny; i++) y[i] += ex[i]; /* keep the accepted iterate */
    }
  } else {
    info[2] = rc;
    for (int k = 0; qfinal && k < 2; k++) { /* quasi-Newton updates below tol, each kept if not worse */
      for (long long i = 0; i < nd; i++) ex[i] = R[i];
      vi_chol_solve(Mdd, nd, ex);
      for (long long i = 0; i < nd; i++) { ex[i] *= -dt; y[i] -= ex[i]; }
      if (residual_only(arg, res, iw, w, 0)) return 1;
      const double rpol = vi_maxabs(R, ny);
      if (rpol <= fmax(info[0], floor_r)) info[0] = rpol;
      else { for (long long i = 0; i < nd; i++) y[i] += ex[i]; break; }
    }
  }
  /* A root the step cannot vouch for: a joint turning more than half a turn per step aliases (NewtonSettings). */
  for (long long a = 0; a < nd; a++) {
    const double d = y[a] - q[idx_d[a]];
    if ((rot[a] && !(fabs(d) <= max_rotation)) || !(fabs(y[a]) <= max_q)) { info[2] = (double)a; return 6; }
  }
  res[0] = xn;
  if (output(arg, res, iw, w, 0)) return 1;
  return 0;
}

/* All buffers in one pointer array: one ctypes argument to convert per call instead of twelve. */
int vi_newton_step_packed(void** a) {
  return vi_newton_step(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
