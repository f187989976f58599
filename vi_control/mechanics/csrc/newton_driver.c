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

/* The dense helpers (vi_lu, vi_lu_solve, vi_factor, ...) come from dense_lu.c, prepended to this source. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O2")
#endif

long long vi_newton_workspace(long long nq, long long ny) { return ny * ny + 4 * ny + 2 * nq * nq + 2 * nq; }

/* ip = (nq, nd, nk, nc, nz, max_iterations, use_guess, chord);
 * dp = (dt, tol, rcond_min, theta_max, max_rotation, max_q); idx = (idx_d, idx_k);
 * rot (nd): 1 for a dynamic coordinate that is an angle (revolute joint).
 * y holds the warm start (or just λ's guess when use_guess); on success y is the solution, xn = x_{k+1}. */
int vi_newton_step(const double* z, double* y, double* xn, const long long* ip, const double* dp,
                   const long long* idx, long long* iw, double* w, double* ws, long long* piv, double* info,
                   const long long* rot) {
  const long long nq = ip[0], nd = ip[1], nk = ip[2], nc = ip[3], nz = ip[4], max_it = ip[5];
  const long long ny = nd + nc;
  const double dt = dp[0], tol = dp[1], rcond_min = dp[2], theta_max = dp[3];
  const double max_rotation = dp[4], max_q = dp[5];
  const int chord = (int)ip[7];
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

  if (ip[6]) { /* q_{k+1} guess from the continuous Legendre transform: q + dt M^-1 p */
    arg[0] = q; res[0] = M;
    if (mass(arg, res, iw, w, 0)) return 4;
    for (long long a = 0; a < nd; a++) {
      double s = p[idx_d[a]];
      for (long long b = 0; b < nk; b++) s -= M[idx_d[a] + idx_k[b] * nq] * p[idx_k[b]];
      v[a] = s;
      for (long long b = 0; b < nd; b++) Mdd[a + b * nd] = M[idx_d[a] + idx_d[b] * nq];
    }
    if (vi_lu(Mdd, nd, piv)) return 4;
    vi_lu_solve(Mdd, nd, piv, v);
    for (long long a = 0; a < nd; a++) y[a] = q[idx_d[a]] + dt * v[a];
  }

  arg[0] = y; arg[1] = z; res[0] = R; res[1] = J;
  double rnorm = INFINITY, dnorm_prev = INFINITY, first_update = INFINITY;
  for (long long i = 0; i < ny; i++) y0[i] = y[i];
  int with_jac = 1;  /* next evaluation includes the Jacobian (always in exact Newton) */
  int j_at_y = 0;    /* J holds the unfactored Jacobian at the current y */
  long long it;
  for (it = 0; it <= max_it; it++) {
    if (with_jac ? residual(arg, res, iw, w, 0) : residual_only(arg, res, iw, w, 0)) return 1;
    j_at_y = with_jac;
    rnorm = vi_maxabs(R, ny);
    if (!isfinite(rnorm) || rnorm <= tol * scale || it == max_it) break;
    if (with_jac) {
      double rc = vi_factor(J, ny, piv, ex, sg);
      j_at_y = 0;
      if (!(rc >= rcond_min)) { info[0] = rnorm; info[1] = (double)it; info[2] = rc; return 2; }
    }
    vi_lu_solve(J, ny, piv, R);
    for (long long i = 0; i < ny; i++) y[i] -= R[i];
    const double dnorm = vi_maxabs(R, ny);
    if (it == 0) first_update = dnorm;
    if (dnorm < 1e-15 * (1.0 + vi_maxabs(y, ny))) { /* stalled at round-off */
      if (residual(arg, res, iw, w, 0)) return 1;
      j_at_y = 1;
      rnorm = vi_maxabs(R, ny);
      break;
    }
    /* Chord: keep the factored Jacobian while the updates contract by theta_max or better. */
    with_jac = !chord || !(dnorm <= theta_max * dnorm_prev);
    dnorm_prev = dnorm;
  }
  /* The acceptance floor and the final condition check need the Jacobian at the returned y. */
  if (!j_at_y && isfinite(rnorm)) {
    if (residual(arg, res, iw, w, 0)) return 1;
    rnorm = vi_maxabs(R, ny);
  }
  info[0] = rnorm; info[1] = (double)it;
  /* Accept at the residual's rounding floor ~ eps |J| |q_k| too: R sums terms of size |M/dt| |q|, which
   * exceeds any fixed tolerance on long chains at small dt (seed 001 §4 sizes). The configuration before the
   * step, not the root found: a huge |y| must not excuse its own residual (NewtonSettings). */
  const double floor_r = 64.0 * DBL_EPSILON * vi_norm1(J, ny) * (1.0 + vi_maxabs(q, nq));
  if (!(rnorm <= fmax(tol * scale, floor_r))) return 1;
  if (chord) {
    /* A contracting iteration ends within about its first update of the guess; a chord iteration that
     * travelled further left the guess's basin (a stale Jacobian can overshoot to another root of the DEL
     * equation): report non-convergence, and the caller re-solves with exact Newton from the same guess. */
    double dist = 0.0;
    for (long long i = 0; i < ny; i++) dist = fmax(dist, fabs(y[i] - y0[i]));
    if (dist > 2.0 * first_update + 1e-12 * (1.0 + vi_maxabs(y, ny))) return 1;
  }
  /* The converged Jacobian must be well-conditioned too, or the linearization is garbage. */
  double rc = vi_factor(J, ny, piv, ex, sg);
  info[2] = rc;
  if (!(rc >= rcond_min)) return 2;
  if (chord) {
    /* One exact Newton update with the Jacobian just factored at the root: chord stops just below tol
     * (linear rate), this takes y to the root's round-off like exact Newton's last quadratic step. */
    vi_lu_solve(J, ny, piv, R);
    for (long long i = 0; i < ny; i++) { ex[i] = R[i]; y[i] -= R[i]; }
    if (residual_only(arg, res, iw, w, 0)) return 1;
    const double rpol = vi_maxabs(R, ny);
    if (rpol <= fmax(rnorm, floor_r)) info[0] = rpol;
    else for (long long i = 0; i < ny; i++) y[i] += ex[i]; /* keep the accepted iterate */
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
