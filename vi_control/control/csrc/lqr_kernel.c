/* ---- vi_control: TV-LQR and DLQR gains in C, the package's one implementation (vi_control.control.lqr) ----
 * Appended after mechanics' dense_lu.c (vi_lu) and dense_mm.c (vi_mm, vi_lu_solve_rows). The tests compare it with
 * the numpy oracle test/support/lqr_oracle.py (the same formulas) and with scipy's solve_discrete_are. */

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O3")
#endif

/* ---------------------------------------------------------------------------------------------------------
 * Time-varying LQR gains along a trajectory (control.lqr.tv_lqr, Johnson2015, eq. 36):
 * K_k = [R + B'P B]^-1 B'P A by LU of the symmetrized matrix, P_k = Q + (A - BK)'P(A - BK) + K'RK, symmetrized.
 * sizes = (N, nx, nu, sQ, sR): the weights' strides per stage, 0 for one weight of every stage (Q (nx, nx),
 * R (nu, nu)) or nx^2 / nu^2 for stacks (N, nx, nx) / (N, nu, nu) — only the address of stage k's weight depends on
 * them, the arithmetic is the same either way. a: A (N, nx, nx), B (N, nx, nu), Q, R, Qf (nx, nx) | K (N, nu, nx),
 * P (N+1, nx, nx), scratch (5 nx^2 + 2 nx nu + 2 nu^2), pivots (nu), step (1). Returns 0; 1 if R + B'PB is
 * singular, 2 if P_k or K_k left double range (no finite gains), with step[0] = k, the recursion stopped there. */
int vi_lqr_tv(const long long* sizes, void** a) {
  const long long N = sizes[0], nx = sizes[1], nu = sizes[2], sQ = sizes[3], sR = sizes[4];
  const double *AA = a[0], *BB = a[1], *QQ = a[2], *RR = a[3], *Qf = a[4];
  double *KK = a[5], *PP = a[6], *Sraw = a[7], *S = Sraw + nu * nu, *BtP = S + nu * nu, *Acl = BtP + nu * nx;
  double *AtP = Acl + nx * nx, *Pk = AtP + nx * nx, *KtR = Pk + nx * nx, *T1 = KtR + nx * nu, *T2 = T1 + nx * nx;
  long long *piv = a[8], *step = a[9];
  for (long long i = 0; i < nx * nx; i++) PP[N * nx * nx + i] = Qf[i];
  for (long long k = N - 1; k >= 0; k--) {
    const double *A = AA + k * nx * nx, *B = BB + k * nx * nu, *P = PP + (k + 1) * nx * nx;
    const double *Q = QQ + k * sQ, *R = RR + k * sR;
    double* K = KK + k * nu * nx;
    step[0] = k;
    vi_mm(B, P, BtP, nu, nx, nx, 1, 0); /* B'P */
    vi_mm(BtP, B, Sraw, nu, nx, nu, 0, 0); /* S = R + (B'P) B, then symmetrized (column-major for the LU) */
    for (long long i = 0; i < nu * nu; i++) Sraw[i] = R[i] + Sraw[i];
    for (long long i = 0; i < nu; i++)
      for (long long j = 0; j < nu; j++) S[i + j * nu] = 0.5 * (Sraw[i * nu + j] + Sraw[j * nu + i]);
    if (vi_lu(S, nu, piv)) return 1;
    vi_mm(BtP, A, K, nu, nx, nx, 0, 0); /* K = S^-1 (B'P) A, all columns at once */
    vi_lu_solve_rows(S, nu, piv, K, nx, 0);
    vi_mm(B, K, Acl, nx, nu, nx, 0, 0); /* Acl = A - B K */
    for (long long i = 0; i < nx * nx; i++) Acl[i] = A[i] - Acl[i];
    vi_mm(Acl, P, AtP, nx, nx, nx, 1, 0); /* Acl'P */
    vi_mm(K, R, KtR, nx, nu, nu, 1, 0); /* K'R */
    vi_mm(AtP, Acl, T1, nx, nx, nx, 0, 0);
    vi_mm(KtR, K, T2, nx, nu, nx, 0, 0);
    for (long long i = 0; i < nx * nx; i++) Pk[i] = Q[i] + T1[i] + T2[i];
    double* Pout = PP + k * nx * nx;
    int finite = 1;
    for (long long i = 0; i < nx; i++)
      for (long long j = 0; j < nx; j++) {
        Pout[i * nx + j] = 0.5 * (Pk[i * nx + j] + Pk[j * nx + i]);
        if (!isfinite(Pout[i * nx + j])) finite = 0;
      }
    for (long long i = 0; i < nu * nx; i++)
      if (!isfinite(K[i])) finite = 0;
    if (!finite) return 2; /* an overflow would only turn every earlier stage into NaN: stop and say where */
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------
 * Infinite-horizon discrete LQR (control.lqr.dlqr): P, the fixed point of eq. 36a, by the structure-preserving
 * doubling algorithm (Chu, Fan, Lin 2005) — A_0 = A, G_0 = B R^-1 B', H_0 = Q; W = I + G H,
 * H' = H + A' H W^-1 A, G' = G + A W^-1 G A', A' = A W^-1 A, until max|H' - H| <= tol max|H'| — then
 * K = [R + B'PB]^-1 B'PA (vi_lqr_tv's gain). sizes = (nx, nu, max_iterations); tol; a: A (nx, nx), B (nx, nu),
 * Q, R | K (nu, nx), P (nx, nx), scratch (9 nx^2 + 2 nx nu + 2 nu^2), pivots (nx + nu). Row-major like numpy.
 * Returns 0, 1 if R or W is singular, 2 if the iteration did not converge (or blew up: an unstabilizable mode). */
int vi_lqr_dare(const long long* sizes, const double* tol, void** a) {
  const long long nx = sizes[0], nu = sizes[1], max_it = sizes[2];
  const double *A = a[0], *B = a[1], *Q = a[2], *R = a[3];
  double *K = a[4], *P = a[5], *Ak = a[6], *G = Ak + nx * nx, *H = G + nx * nx, *W = H + nx * nx, *T = W + nx * nx;
  double *U = T + nx * nx, *V = U + nx * nx, *Hn = V + nx * nx, *Wc = Hn + nx * nx, *RB = Wc + nx * nx;
  double *Rc = RB + nx * nu, *BtP = Rc + nu * nu, *S = BtP + nx * nu;
  long long* piv = a[7];
  for (long long i = 0; i < nu * nu; i++) Rc[(i % nu) * nu + i / nu] = R[i]; /* column-major */
  if (vi_lu(Rc, nu, piv)) return 1;
  for (long long i = 0; i < nx; i++) /* RB = R^-1 B' (nu, nx) */
    for (long long l = 0; l < nu; l++) RB[l * nx + i] = B[i * nu + l];
  vi_lu_solve_rows(Rc, nu, piv, RB, nx, 0);
  vi_mm(B, RB, G, nx, nu, nx, 0, 0);
  for (long long i = 0; i < nx * nx; i++) { Ak[i] = A[i]; H[i] = Q[i]; }
  for (long long it = 0; it < max_it; it++) {
    vi_mm(G, H, W, nx, nx, nx, 0, 0);
    for (long long i = 0; i < nx; i++) W[i * nx + i] += 1.0;
    for (long long i = 0; i < nx * nx; i++) Wc[(i % nx) * nx + i / nx] = W[i];
    if (vi_lu(Wc, nx, piv)) return 1;
    for (long long i = 0; i < nx; i++) /* T = A_k W^-1: T' = W'^-1 A_k', every row of A_k at once */
      for (long long j = 0; j < nx; j++) V[j * nx + i] = Ak[i * nx + j];
    vi_lu_solve_rows(Wc, nx, piv, V, nx, 1);
    for (long long i = 0; i < nx; i++)
      for (long long j = 0; j < nx; j++) T[i * nx + j] = V[j * nx + i];
    for (long long i = 0; i < nx * nx; i++) U[i] = Ak[i]; /* U = W^-1 A_k, every column at once */
    vi_lu_solve_rows(Wc, nx, piv, U, nx, 0);
    vi_mm(H, U, V, nx, nx, nx, 0, 0); /* H' = H + A_k' (H W^-1 A_k) */
    vi_mm(Ak, V, Hn, nx, nx, nx, 1, 0);
    for (long long i = 0; i < nx * nx; i++) Hn[i] += H[i];
    vi_mm(T, G, V, nx, nx, nx, 0, 0); /* G' = G + (A_k W^-1 G) A_k' */
    for (long long i = 0; i < nx; i++)
      for (long long j = 0; j < nx; j++) {
        double s = 0.0;
        for (long long l = 0; l < nx; l++) s += V[i * nx + l] * Ak[j * nx + l];
        U[i * nx + j] = G[i * nx + j] + s;
      }
    for (long long i = 0; i < nx * nx; i++) G[i] = U[i];
    vi_mm(T, Ak, U, nx, nx, nx, 0, 0); /* A_k' = A_k W^-1 A_k */
    for (long long i = 0; i < nx * nx; i++) Ak[i] = U[i];
    double dmax = 0.0, hmax = 0.0;
    int finite = 1;
    for (long long i = 0; i < nx * nx; i++) {
      const double d = fabs(Hn[i] - H[i]), h = fabs(Hn[i]);
      if (d > dmax || d != d) dmax = d;
      if (h > hmax || h != h) hmax = h;
    }
    const int done = dmax <= *tol * hmax; /* relative: K is invariant under (sQ, sR) */
    for (long long i = 0; i < nx; i++)
      for (long long j = 0; j < nx; j++) {
        H[i * nx + j] = 0.5 * (Hn[i * nx + j] + Hn[j * nx + i]);
        if (!isfinite(H[i * nx + j])) finite = 0;
      }
    if (!finite) return 2;
    if (done) {
      for (long long i = 0; i < nx * nx; i++) P[i] = H[i];
      vi_mm(B, P, BtP, nu, nx, nx, 1, 0); /* K = sym(R + B'PB)^-1 B'PA */
      for (long long i = 0; i < nu; i++)
        for (long long j = 0; j < nu; j++) {
          double s = 0.0;
          for (long long l = 0; l < nx; l++) s += BtP[i * nx + l] * B[l * nu + j];
          S[i * nu + j] = R[i * nu + j] + s;
        }
      for (long long i = 0; i < nu; i++)
        for (long long j = 0; j < nu; j++) Rc[i + j * nu] = 0.5 * (S[i * nu + j] + S[j * nu + i]);
      if (vi_lu(Rc, nu, piv)) return 1;
      vi_mm(BtP, A, K, nu, nx, nx, 0, 0);
      vi_lu_solve_rows(Rc, nu, piv, K, nx, 0);
      return 0;
    }
  }
  return 2;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
