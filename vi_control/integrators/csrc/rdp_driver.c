/* ---- vi_control: the reduced d'Alembert–Pontryagin integrator's steps (Kobilarov2010, eqs. 27–28) in one call ----
 * Step k: Newton on z = (u_k, s_k) with the generated rdp_residual (R and its exact Jacobian, eq. 27) from the
 * previous step's z, stopping when |R|inf <= tol (p1 + |(pi+_k, mu+_k)|inf); then rdp_update gives
 * (g_{k+1}, r_{k+1}, pi+_{k+1}, mu+_{k+1}, xi_k) (eq. 28). The Python loop of ReducedDAlembertPontryagin.simulate
 * step for step, LU with partial pivoting (dense_lu.c) where it calls LAPACK's dgesv: the same iterations, roots equal
 * to round-off.
 * ip = (N, n_shape, nz, max_iterations); dp = (tol, p1); P (3 n_shape + 3) holds (r_0, pi+_0, mu+_0, .) on entry;
 * F (N, n_shape) the shape forces; z (nz) the first guess, the last root on return; G (N + 1, 3) with G[0] set,
 * Rr (N + 1, n_shape) with Rr[0] set, U (N, n_shape), XI (N, 3), its (N) filled. iw, w: vi_rdp_workspace's sizes
 * plus the generated functions' work. Return codes: 0 ok; 1 not converged, 2 singular Jacobian, 3 a generated
 * function failed — info = (step, residual, iterations). */

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O3")
#endif

long long vi_rdp_workspace(long long ns, long long nz) { return nz + nz * nz + 9 + 2 * ns; }

int vi_rdp_simulate(const long long* ip, const double* dp, double* P, const double* F, double* z, double* G,
                    double* Rr, double* U, double* XI, long long* its, long long* iw, double* w, double* info) {
  const long long N = ip[0], ns = ip[1], nz = ip[2], max_it = ip[3];
  const double tol = dp[0], p1 = dp[1];
  double* R = w;
  double* J = R + nz;
  double* out = J + nz * nz;
  double* cw = out + 9 + 2 * ns; /* the generated functions' work */
  long long* piv = iw;
  long long* ciw = iw + nz;
  for (long long k = 0; k < N; k++) {
    for (long long i = 0; i < ns; i++) { P[i] = Rr[k * ns + i]; P[2 * ns + 3 + i] = F[k * ns + i]; }
    const double scale = p1 + vi_maxabs(P + ns, ns + 3);
    long long it = 0;
    double rnorm = 0.0;
    for (;; it++) {
      const double* arg[2] = {z, P};
      double* res[2] = {R, J};
      if (rdp_residual(arg, res, ciw, cw, 0)) { info[0] = (double)k; info[1] = NAN; info[2] = (double)it; return 3; }
      rnorm = vi_maxabs(R, nz);
      if (rnorm <= tol * scale) break;
      if (it == max_it || !isfinite(rnorm)) { info[0] = (double)k; info[1] = rnorm; info[2] = (double)it; return 1; }
      if (vi_lu(J, nz, piv)) { info[0] = (double)k; info[1] = rnorm; info[2] = (double)it; return 2; }
      vi_lu_solve(J, nz, piv, R);
      for (long long i = 0; i < nz; i++) z[i] -= R[i];
    }
    its[k] = it;
    const double* arg[3] = {z, P, G + 3 * k};
    double* res[1] = {out};
    if (rdp_update(arg, res, ciw, cw, 0)) { info[0] = (double)k; info[1] = rnorm; info[2] = (double)it; return 3; }
    for (long long i = 0; i < 3; i++) { G[3 * (k + 1) + i] = out[i]; XI[3 * k + i] = out[6 + 2 * ns + i]; }
    for (long long i = 0; i < ns; i++) {
      Rr[(k + 1) * ns + i] = out[3 + i];
      P[ns + i] = out[3 + ns + i];
      U[k * ns + i] = z[i];
    }
    for (long long i = 0; i < 3; i++) P[2 * ns + i] = out[3 + 2 * ns + i];
  }
  info[0] = (double)N; info[1] = 0.0; info[2] = 0.0;
  return 0;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
