/* ---- vi_control: the DDP iteration loop in C (vi_control.planning.compiled.CompiledStages.iterate) ----
 * Appended after ddp_kernel.c (the passes it calls); vi_plan_call dispatches every pass. */

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O3")
#endif

/* ---------------------------------------------------------------------------------------------------------
 * The DDP iterations of planning/ddp.py (``ddp``, metric None) for a QuadraticTrackingCost, every decision the
 * same: linearize; backward pass (Newton, or Gauss-Newton where the second-order Q_uu is not positive definite,
 * which also skips the Newton attempt in the next iteration; mu x10 where neither is, up to mu_max); stop when
 * |d1| < tol; line search alpha = 1, 1/2, ... > 1e-4 on the closed-loop rollout, accepting J_new < J with a
 * decrease of at least 10 % of the model's; mu /10 after a full step, x10 after a failed search. Python keeps the
 * loop of record for every other case and builds the result (and the log) from the histories written here.
 * a: X, U, Y (in: the initial rollout; out: the result), Xt, Ut, Yt (trial), X_ref, U_ref, Q, R, Qf,
 * A, B, rcond, LU, piv, dy/dz, O_y (the last linearization), kff, K, kff_t, K_t (N, nu[, nx]), l_x, l_u, V_x,
 * scratch info (2), par = (mu, tol, the unit of mu (ddp.regularization_unit); out: the last mu) | histories: J (max_it + 1), d1, mu, alpha (max_it), kind
 * (max_it; 1 Newton, 0 Gauss-Newton), out = (iterations, converged, reason, entries of the J/mu/alpha, kind and d1
 * histories) (6); ipar = (max_it, second order).
 * reason: 0 max_iterations, 1 converged, 2 regularization exceeded in the backward pass, 3 line search failed at
 * maximum regularization; returns 1 with reason 4 where a rollout needs the Python path (the caller then runs the
 * Python loop) or 5 where R_y is singular (info = stage, rcond: the caller raises, as ``linearize``). */
static double vi_plan_cost(const vi_plan_ctx* m, const double* X, const double* U, const double* Xr, const double* Ur,
                           const double* Q, const double* R, const double* Qf, double* t) {
  const long long N = m->N, nx = m->nx, nu = m->nu;
  double run_x = 0.0, run_u = 0.0, term = 0.0;
  for (long long k = 0; k < N; k++) {
    const double *x = X + k * nx, *xr = Xr + k * nx, *u = U + k * nu, *ur = Ur + k * nu;
    for (long long i = 0; i < nx; i++) t[i] = x[i] - xr[i];
    for (long long i = 0; i < nx; i++) {
      double s = 0.0;
      for (long long j = 0; j < nx; j++) s += t[j] * Q[j * nx + i];
      run_x += s * t[i];
    }
    for (long long i = 0; i < nu; i++) t[i] = u[i] - ur[i];
    for (long long i = 0; i < nu; i++) {
      double s = 0.0;
      for (long long j = 0; j < nu; j++) s += t[j] * R[j * nu + i];
      run_u += s * t[i];
    }
  }
  for (long long i = 0; i < nx; i++) t[i] = X[N * nx + i] - Xr[N * nx + i];
  for (long long i = 0; i < nx; i++) {
    double s = 0.0;
    for (long long j = 0; j < nx; j++) s += t[j] * Qf[j * nx + i];
    term += s * t[i];
  }
  return 0.5 * (run_x + run_u) + 0.5 * term;
}

int vi_plan_ddp(void** c, void** a) {
  vi_plan_ctx m = vi_plan_unpack(c);
  const long long N = m.N, nx = m.nx, nu = m.nu, ny = m.ny;
  double *X = a[0], *U = a[1], *Y = a[2], *Xt = a[3], *Ut = a[4], *Yt = a[5];
  const double *Xr = a[6], *Ur = a[7], *Q = a[8], *R = a[9], *Qf = a[10];
  double *kff = a[18], *K = a[19], *kff_t = a[20], *K_t = a[21], *LX = a[22], *LU = a[23], *Vx = a[24];
  double *info = a[25], *par = a[26], *Jh = a[27], *dh = a[28], *muh = a[29], *ah = a[30];
  long long *kind = a[31], *out = a[32];
  const long long* ipar = a[33];
  const long long max_it = ipar[0], second_order = ipar[1];
  const double tol = par[1], unit = par[2], mu_min = 1e-9 * unit, mu_max = 1e10 * unit, mu_floor = 1e-6 * unit;
  double mu = par[0], d[2] = {0.0, 0.0};
  double* tt = m.scr; /* the cost's scratch, free between the passes */
  long long secflag = 0, wait = 0, it = 0, n_kinds = 0, n_hist = 0, n_dec = 0, reason = 0, converged = 0;
  void* la[11] = {X, U, Y, a[11], a[12], a[13], a[14], a[15], a[16], a[17], info};
  void* ba[20] = {X, U, Y, a[11], a[12], a[14], a[15], a[16], a[17], LX, LU, Vx, (void*)Qf, (void*)Q, (void*)R,
                  &mu, &secflag, kff_t, K_t, d};
  double J = vi_plan_cost(&m, X, U, Xr, Ur, Q, R, Qf, tt);
  Jh[0] = J;
  for (it = 1; it <= max_it; it++) {
    if (vi_plan_linearize(c, la)) { out[0] = it; out[2] = 5; return 1; } /* singular R_y: the caller raises */
    /* local model: l_x = (x_k - x_ref,k) Q, l_u = (u_k - u_ref,k) R, V_x = Qf (x_N - x_ref,N) */
    for (long long k = 0; k < N; k++) {
      for (long long j = 0; j < nx; j++) {
        double s = 0.0;
        for (long long i = 0; i < nx; i++) s += (X[k * nx + i] - Xr[k * nx + i]) * Q[i * nx + j];
        LX[k * nx + j] = s;
      }
      for (long long j = 0; j < nu; j++) {
        double s = 0.0;
        for (long long i = 0; i < nu; i++) s += (U[k * nu + i] - Ur[k * nu + i]) * R[i * nu + j];
        LU[k * nu + j] = s;
      }
    }
    for (long long i = 0; i < nx; i++) {
      double s = 0.0;
      for (long long j = 0; j < nx; j++) s += Qf[i * nx + j] * (X[N * nx + j] - Xr[N * nx + j]);
      Vx[i] = s;
    }
    long long newton = second_order && wait == 0;
    wait = wait > 1 ? wait - 1 : 0;
    int ok = 0;
    for (;;) {
      secflag = newton;
      if (!vi_plan_backward(c, ba)) { ok = 1; break; }
      if (newton) { newton = 0; wait = 1; continue; }
      mu = mu * 10 > mu_floor ? mu * 10 : mu_floor;
      if (mu > mu_max) break;
    }
    kind[n_kinds++] = newton;
    if (!ok) { reason = 2; it -= 1; break; }
    for (long long i = 0; i < N * nu; i++) kff[i] = kff_t[i];
    for (long long i = 0; i < N * nu * nx; i++) K[i] = K_t[i];
    const double d1 = d[0], d2 = d[1];
    dh[n_dec++] = d1;
    if (fabs(d1) < tol) { converged = 1; reason = 1; it -= 1; break; }
    double alpha = 1.0, Jn = 0.0;
    int accepted = 0;
    while (alpha > 1e-4) {
      for (long long i = 0; i < N * nu; i++) Ut[i] = U[i] + alpha * kff[i];
      void* ra[8] = {X, Ut, X, K, Xt, Ut, Yt, info};
      const int code = vi_plan_rollout(c, ra);
      if (code == 2) { out[0] = it; out[2] = 4; return 1; }
      if (code == 0) {
        Jn = vi_plan_cost(&m, Xt, Ut, Xr, Ur, Q, R, Qf, tt);
        const double expected = alpha * d1 + alpha * alpha * d2;
        if (Jn < J && (expected >= 0 || (Jn - J) / expected >= 0.1)) { accepted = 1; break; }
      }
      alpha *= 0.5;
    }
    if (accepted) {
      for (long long i = 0; i < (N + 1) * nx; i++) X[i] = Xt[i];
      for (long long i = 0; i < N * nu; i++) U[i] = Ut[i];
      for (long long i = 0; i < N * ny; i++) Y[i] = Yt[i];
      J = Jn;
      if (alpha == 1.0) mu = mu / 10 > mu_min ? mu / 10 : mu_min;
    } else {
      mu = mu * 10 > mu_floor ? mu * 10 : mu_floor;
      if (mu > mu_max) { reason = 3; break; }
    }
    Jh[1 + n_hist] = J;
    muh[n_hist] = mu;
    ah[n_hist++] = accepted ? alpha : 0.0;
  }
  if (it > max_it) it = max_it;
  out[0] = it; out[1] = converged; out[2] = reason; out[3] = n_hist; out[4] = n_kinds; out[5] = n_dec;
  par[0] = mu;
  return 0;
}

/* One ctypes argument per call: (context, arguments). */
int vi_plan_call(long long which, void** c, void** a) {
  switch (which) {
    case 0: return vi_plan_rollout(c, a);
    case 1: return vi_plan_linearize(c, a);
    case 2: return vi_plan_backward(c, a);
    case 3: return vi_plan_ddp(c, a);
    default: return -1;
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
