/* ---- vi_control: Newton solve of the forced (constrained) DEL equations, Johnson2015, eqs. 2a, 28a-b ----
 * One call per step: initial guess q1 = q + dt M(q)^-1 p, Newton with the exact Jacobian (M_{k+1}
 * bordered by constraint Jacobians) or chord Newton (that Jacobian factored once, refreshed only when
 * the updates contract slower than theta_max, residual-only evaluations in between), LU with partial
 * pivoting, Higham's 1-norm condition estimate (the algorithm LAPACK's dgecon uses) on every
 * factorization and on the Jacobian at the root, then the output map (eq. 2b / 28c). With constraints the
 * estimate is that of the equilibrated bordered matrix and the residual's constraint rows count in momentum units
 * (vi_border_exponent, vi_residual_norm): neither depends on the unit of mass.
 * Return codes: 0 ok, 1 not converged, 2 singular Jacobian (info[2] = rcond), 3 non-finite input,
 * 4 singular mass matrix in the initial guess, 5 a configuration beyond the stated range (info[2] = its
 * index), 6 a root that cannot be vouched for: a dynamic revolute joint turning more than max_rotation in
 * one step, or q_{k+1} beyond the range (info[2] = the dynamic coordinate's index).
 * info = (residual norm, iterations, rcond). */

/* The dense helpers (vi_lu, vi_lu_solve, vi_factor, ...) come from dense_lu.c, prepended to this source. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O3")
#endif

long long vi_newton_workspace(long long nq, long long ny) { return ny * ny + 4 * ny + 2 * nq * nq + 2 * nq; }

/* The residual's infinity-norm with its constraint rows (nd..ny: h(q_{k+1}) in metres, eq. 28b; the GNI's rows in
 * velocity, Kobilarov2010, eq. 5b) x w = 2^2e (vi_border_exponent of the step's first Jacobian): in the momentum units of the
 * dynamic rows (eq. 28a), so the stopping rule tol (p1 + |p_k|) asks the same of them at any unit of mass. */
static double vi_residual_norm(const double* R, long long nd, long long ny, double w) {
  const double a = vi_maxabs(R, nd), b = w * vi_maxabs(R + nd, ny - nd);
  return a != a || a > b ? a : b;
}

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
  if (vi_cholesky(Mdd, nd)) return 1;
  vi_cholesky_solve(Mdd, nd, v);
  return 0;
}

/* ip = (nq, nd, nk, nc, nz, max_iterations, use_guess, chord, root_check);
 * dp = (dt, tol, rcond_min, theta_max, max_rotation, max_q, p₁); idx = (idx_d, idx_k);
 * rot (nd): 1 for a dynamic coordinate that is an angle (revolute joint).
 * y holds the warm start (or just λ's guess when use_guess); on success y is the solution, xn = x_{k+1}.
 *
 * Chord Newton (MidpointVI docstring, docs/benchmarks/step.md): updates with a factored matrix and residual-only
 * evaluations. The matrix is Δt⁻¹ M(q_k)_dd for an unconstrained step (the impulse-based quasi-Newton matrix of
 * Lee2016, eq. 25; the guess factored it already), else M_{k+1} at the guess. M_{k+1} is evaluated, checked and
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
  const double scale = dp[6] + vi_maxabs(p, nq); /* p₁ + |p_k|∞ (NewtonSettings.momentum_scale) */
  /* 0: no matrix factored yet, 1: Δt⁻¹ M(q_k)_dd in Mdd (quasi-Newton), 2: M_{k+1} in J */
  int mat = 0;
  double mnorm = 0.0; /* ||M(q_k)_dd||_1 */
  const int quasi = chord && nc == 0;

  if (ip[6]) { /* q_{k+1} guess from the continuous Legendre transform: q + dt M^-1 p */
    if (vi_mass_chol(q, p, nq, nd, nk, idx_d, idx_k, M, Mdd, v, iw, w, &mnorm)) return 4;
    /* Beside a singularity of M(q_k) the predicted turn can be huge where the root is not: a guess no accepted
     * root can be near (a turn beyond max_rotation, q beyond max_q, NaN) is replaced by q_k (MidpointVI.initial_guess). */
    double keep = 1.0;
    for (long long a = 0; a < nd; a++)
      if ((rot[a] && !(fabs(dt * v[a]) <= max_rotation)) || !(fabs(q[idx_d[a]] + dt * v[a]) <= max_q)) keep = 0.0;
    for (long long a = 0; a < nd; a++) y[a] = q[idx_d[a]] + keep * dt * v[a];
    if (quasi) mat = 1;
  }

  arg[0] = y; arg[1] = z; res[0] = R; res[1] = J;
  double rnorm = INFINITY, dnorm_prev = INFINITY, first_update = INFINITY, anorm = 0.0, rc = 0.0;
  double wc = 0.0; /* the constraint rows' weight (vi_residual_norm), from the step's first Jacobian */
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
    if (wc == 0.0) wc = nc && with_jac ? ldexp(1.0, 2 * vi_border_exponent(J, ny, nd)) : 1.0;
    rnorm = vi_residual_norm(R, nd, ny, wc);
    if (!isfinite(rnorm) || rnorm <= tol * scale || it == max_it) break;
    if (!with_jac && mat == 0) { /* warm start of an unconstrained step: the quasi-Newton matrix on first use */
      if (vi_mass_chol(q, p, nq, nd, nk, idx_d, idx_k, M, Mdd, v, iw, w, &mnorm)) {
        if (residual(arg, res, iw, w, 0)) return 1; /* M(q_k) singular: M_{k+1} instead */
        j_at_y = with_jac = 1;
      } else mat = 1;
    }
    if (with_jac) {
      anorm = vi_norm1(J, ny);
      rc = vi_factor(J, ny, nd, piv, ex, sg);
      j_at_y = 0;
      if (!(rc >= rcond_min)) { /* chord, away from the root: not this step's verdict (the caller retries exact) */
        info[0] = rnorm; info[1] = (double)it; info[2] = rc;
        return chord && !(predicted || rnorm <= eta) ? 1 : 2;
      }
      mat = 2;
      if (predicted || rnorm <= eta) near = 1;
    }
    if (mat == 2) vi_lu_solve(J, ny, piv, R);
    else { vi_cholesky_solve(Mdd, nd, R); for (long long i = 0; i < nd; i++) R[i] *= -dt; }
    for (long long i = 0; i < ny; i++) y[i] -= R[i];
    const double dnorm = vi_maxabs(R, ny);
    if (it == 0) first_update = dnorm;
    if (dnorm < 1e-15 * (1.0 + vi_maxabs(y, ny))) { /* stalled at round-off */
      j_at_y = !(qonly && mat == 1);
      if (j_at_y ? residual(arg, res, iw, w, 0) : residual_only(arg, res, iw, w, 0)) return 1;
      rnorm = vi_residual_norm(R, nd, ny, wc);
      break;
    }
    /* Chord: keep the factored matrix while the updates contract by theta_max or better, and evaluate M_{k+1}
     * once near the root (the residual predicted below eta, the first contraction ratio taken as theta_max). */
    const double ratio = it == 0 ? theta_max : dnorm / dnorm_prev;
    predicted = chord && !qonly && !near && ratio * rnorm <= eta;
    with_jac = !chord || !(dnorm <= theta_max * dnorm_prev) || predicted;
    dnorm_prev = dnorm;
  }
  /* Converged on Δt⁻¹M(q_k)_dd alone: its condition stands in for M_{k+1}'s (docs/benchmarks/step.md). */
  int qfinal = qonly && mat == 1 && !j_at_y && isfinite(rnorm);
  if (qfinal) {
    rc = vi_rcond(Mdd, nd, 0, mnorm, ex, sg, nd, 0);
    qfinal = rc >= rcond_min;
    anorm = mnorm / dt;
  }
  /* Without a factorization near the returned y, the acceptance floor and the condition check need M_{k+1} there. */
  const int final_check = !qfinal && (!near || j_at_y);
  if (final_check && !j_at_y && isfinite(rnorm)) {
    if (residual(arg, res, iw, w, 0)) return 1;
    rnorm = vi_residual_norm(R, nd, ny, wc);
  }
  info[0] = rnorm; info[1] = (double)it;
  /* Accept at the residual's rounding floor ~ eps |J| |q_k| too: R sums terms of size |M/dt| |q|, which
   * exceeds any fixed tolerance on long chains at small dt (Lee2016, §4 sizes). The configuration before the
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
    rc = vi_factor(J, ny, nd, piv, ex, sg);
    info[2] = rc;
    if (!(rc >= rcond_min)) return 2;
    if (chord) {
      /* One exact Newton update with the Jacobian just factored at the root: chord stopped just below tol
       * (linear rate), this takes y to the root's round-off like exact Newton's last quadratic step. */
      vi_lu_solve(J, ny, piv, R);
      for (long long i = 0; i < ny; i++) { ex[i] = R[i]; y[i] -= R[i]; }
      if (residual_only(arg, res, iw, w, 0)) return 1;
      const double rpol = vi_residual_norm(R, nd, ny, wc);
      if (rpol <= fmax(rnorm, floor_r)) info[0] = rpol;
      else for (long long i = 0; i < ny; i++) y[i] += ex[i]; /* keep the accepted iterate */
    }
  } else {
    info[2] = rc;
    for (int k = 0; qfinal && k < 2; k++) { /* quasi-Newton updates below tol, each kept if not worse */
      for (long long i = 0; i < nd; i++) ex[i] = R[i];
      vi_cholesky_solve(Mdd, nd, ex);
      for (long long i = 0; i < nd; i++) { ex[i] *= -dt; y[i] -= ex[i]; }
      if (residual_only(arg, res, iw, w, 0)) return 1;
      const double rpol = vi_residual_norm(R, nd, ny, wc);
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
