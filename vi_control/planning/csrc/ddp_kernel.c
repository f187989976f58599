/* ---- vi_control: whole-horizon DDP stages in C (vi_control.planning.compiled) ----
 * One call per pass over all N stages of a trajectory, for a discrete system whose step is the implicit map
 * R(y, z) = 0, x_{k+1} = O(y, z) (Johnson2015, eqs. 2, 28) solved by the generated Newton driver:
 *   vi_plan_rollout    closed-loop rollout u_k = clip(U_k + K_k (x_k - X_k)), one Newton step per stage
 *                      (chord Newton re-solved by exact Newton when it does not converge, as MidpointVI.solve);
 *   vi_plan_linearize  A_k, B_k by the implicit-function theorem (Johnson2015, eqs. 8-15, 29-30), LU of R_y kept;
 *                      R_y, R_z, O_y, O_z by the tree's recursion (tree_derivatives.c) or the generated 'linearize';
 *   vi_plan_backward   the DDP backward pass, its one implementation (also for the numpy stages of any other system,
 *                      whose V'_x . d2f comes back from Python): Riccati recursion with the second-order terms
 *                      V'_x . d2f (Johnson2015, eqs. 16-27 as a covector contraction), Tassa's regularization
 *                      V'_xx + mu I, and the box QP of the input bounds by projected Newton.
 * The model's functions are called through pointers (the generated 'linearize' and 'hessian' CasADi functions and
 * vi_newton_step of the model's own library) or computed from its tree's numbers (tree_derivatives.c), so this
 * library is the same for every model and compiled once.
 * Storage: trajectories, A, B, gains and cost derivatives row-major (numpy); CasADi outputs, LU factors and
 * dy/dz column-major (as generated). The rollout and linearization are the numpy stages' operations (shooting.rollout,
 * linearization.linearize) in the same order where they decide a branch: the results agree to round-off
 * (test/planning/test_planning_compiled.py; the backward pass against the tests' numpy oracle). */
/* The dense helpers come from mechanics' dense_lu.c (vi_lu, vi_lu_solve, vi_lu_solve_t, vi_factor, vi_maxabs) and
 * dense_mm.c (vi_mm, vi_row, vi_lu_solve_rows), a tree's derivatives from tree_derivatives.c (vi_tree_linearize,
 * vi_tree_hessian), prepended. */
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O3")
#endif

typedef int (*vi_casadi_fn)(const double** arg, double** res, long long* iw, double* w, int mem);
typedef int (*vi_newton_fn)(const double* z, double* y, double* xn, const long long* ip, const double* dp,
                            const long long* idx, long long* iw, double* w, double* ws, long long* piv, double* info,
                            const long long* rot);

/* Context c (void**): c[0] kp = (N, nq, nd, nk, nc, ny, nx, nu, nz, max_iterations, chord, bounded, root_check),
 * c[1] kd = (dt, tol, rcond_min, theta_max, max_rotation, max_q, p₁), c[2] vi_newton_step, c[3] linearize, c[4] hessian, c[5] idx =
 * (idx_d, idx_k), c[6] CasADi int work, c[7] CasADi real work, c[8] Newton workspace, c[9] pivots (ny),
 * c[10] real scratch (vi_plan_workspace), c[11] int scratch (2 nu), c[12] lo, c[13] hi (nu; +-inf: none),
 * c[14] rot (nd + 1): the Newton driver's revolute flags (its untrusted-root check), c[15], c[16] the tree of
 * mechanics' tree_derivatives.c (ints, reals) and c[17] its workspace (vi_tree_workspace), where c[3] or c[4] is NULL:
 * that derivative is the tree's recursion. */
typedef struct {
  long long N, nq, nd, nk, nc, ny, nx, nu, nz, max_it, chord, bounded, root_check;
  double dt, tol, rcond_min, theta_max, max_rotation, max_q, p_unit;
  vi_newton_fn newton;
  vi_casadi_fn lin, hess;
  const long long *idx, *rot;
  long long *iw, *piv, *iscr;
  double *w, *nws, *scr;
  const double *lo, *hi;
  const long long* tree_i;
  const double* tree_d;
  double* tree_w;
} vi_plan_ctx;

static vi_plan_ctx vi_plan_unpack(void** c) {
  const long long* kp = (const long long*)c[0];
  const double* kd = (const double*)c[1];
  vi_plan_ctx m;
  m.N = kp[0]; m.nq = kp[1]; m.nd = kp[2]; m.nk = kp[3]; m.nc = kp[4]; m.ny = kp[5]; m.nx = kp[6]; m.nu = kp[7];
  m.nz = kp[8]; m.max_it = kp[9]; m.chord = kp[10]; m.bounded = kp[11]; m.root_check = kp[12];
  m.dt = kd[0]; m.tol = kd[1]; m.rcond_min = kd[2]; m.theta_max = kd[3];
  m.max_rotation = kd[4]; m.max_q = kd[5]; m.p_unit = kd[6]; m.rot = (const long long*)c[14];
  m.newton = (vi_newton_fn)c[2]; m.lin = (vi_casadi_fn)c[3]; m.hess = (vi_casadi_fn)c[4];
  m.idx = (const long long*)c[5]; m.iw = (long long*)c[6]; m.w = (double*)c[7]; m.nws = (double*)c[8];
  m.piv = (long long*)c[9]; m.scr = (double*)c[10]; m.iscr = (long long*)c[11];
  m.lo = (const double*)c[12]; m.hi = (const double*)c[13];
  m.tree_i = (const long long*)c[15]; m.tree_d = (const double*)c[16]; m.tree_w = (double*)c[17];
  return m;
}

long long vi_plan_workspace(long long nx, long long nu, long long ny, long long nz) {
  const long long nw = ny + nz;
  return 12 * nx * nx + 8 * nx * nu + 10 * nu * nu + nw * nw + 5 * ny * nz + 3 * nz * nz + 2 * nx * nz
         + 5 * ny * ny + 10 * (nx + nu + ny + nz) + 64;
}

/* numpy's clip: NaN stays NaN (the step then reports a non-finite input). */
static double vi_clip(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* ---------------------------------------------------------------------------------------------------------
 * Rollout. a: x0, U, X_nom (guess and feedback reference, or NULL), K (or NULL) | X, Ua, Y (solved unknowns
 * per stage), info (stage, Newton code) | mode (int64, or NULL for 0). Returns 0, 1 (a step failed: the caller
 * rejects the trial) or 2 (singular M(q_k) in the driver's own initial guess: the Python path handles that rare
 * retry). Mode bits: 1 (PREDICT) X_nom is the feedback reference only, Newton starts at the driver's predictor (a
 * reference that need not satisfy the dynamics is no guess: shooting.rollout with X_guess None); 2 (STAGEWISE)
 * every stage steps from X_nom's own state X_nom,k under U_k as given (no feedback, no clip), from the predictor
 * and zero multipliers, as linearize(vi, X_nom,k, U_k) solves it: Y of a reference, for vi_plan_linearize. */
int vi_plan_rollout(void** c, void** a) {
  vi_plan_ctx m = vi_plan_unpack(c);
  const long long N = m.N, nx = m.nx, nu = m.nu, ny = m.ny, nd = m.nd, nc = m.nc, nz = m.nz;
  const double *x0 = a[0], *U = a[1], *Xg = a[2], *K = a[3];
  double *X = a[4], *Ua = a[5], *Y = a[6], *info = a[7];
  const long long mode = a[8] ? *(const long long*)a[8] : 0;
  const int stagewise = (mode & 2) != 0, guess = Xg && !(mode & 3);
  double *z = m.scr, *y0 = z + nz, *lam = y0 + ny, *dx = lam + nc + 1, *ninfo = dx + nx;
  long long ip[9] = {m.nq, nd, m.nk, nc, nz, m.max_it, 0, m.chord, m.root_check}; /* newton_driver.c's ip */
  const double dp[7] = {m.dt, m.tol, m.rcond_min, m.theta_max, m.max_rotation, m.max_q, m.p_unit};
  info[0] = -1.0; info[1] = 0.0;
  for (long long i = 0; i < nx; i++) X[i] = x0[i];
  for (long long i = 0; i < nc; i++) lam[i] = 0.0;
  for (long long k = 0; k < N; k++) {
    const double* xk = stagewise ? Xg + k * nx : X + k * nx;
    double* u = Ua + k * nu;
    double* y = Y + k * ny;
    for (long long i = 0; i < nu; i++) u[i] = U[k * nu + i];
    if (stagewise)
      for (long long i = 0; i < nc; i++) lam[i] = 0.0;
    else if (K) {
      for (long long j = 0; j < nx; j++) dx[j] = xk[j] - Xg[k * nx + j];
      for (long long i = 0; i < nu; i++) {
        double s = 0.0;
        for (long long j = 0; j < nx; j++) s += K[(k * nu + i) * nx + j] * dx[j];
        u[i] += s;
      }
    }
    if (m.bounded && !stagewise)
      for (long long i = 0; i < nu; i++) u[i] = vi_clip(u[i], m.lo[i], m.hi[i]);
    for (long long i = 0; i < nx; i++) z[i] = xk[i];
    for (long long i = 0; i < nu; i++) z[nx + i] = u[i];
    /* Warm start (shooting.rollout): the guess's next state shifted by x_k - X_guess,k, and the last multipliers. */
    if (guess)
      for (long long a_ = 0; a_ < nd; a_++) {
        const long long j = m.idx[a_];
        y0[a_] = Xg[(k + 1) * nx + j] + (xk[j] - Xg[k * nx + j]);
      }
    for (long long i = 0; i < nc; i++) y0[nd + i] = lam[i];
    ip[6] = guess ? 0 : 1; /* no guess: the driver predicts q_{k+1} from M(q_k)^-1 p_k */
    int code = 1;
    for (int exact = m.chord ? 0 : 1; exact < 2; exact++) {
      ip[7] = exact ? 0 : 1;
      for (long long i = guess ? 0 : nd; i < ny; i++) y[i] = y0[i];
      code = m.newton(z, y, X + (k + 1) * nx, ip, dp, m.idx, m.iw, m.w, m.nws, m.piv, ninfo, m.rot);
      if (code != 1) break; /* only non-convergence of chord Newton is retried by exact Newton */
    }
    if (code == 4) { info[0] = (double)k; info[1] = 4.0; return 2; }
    if (code) { info[0] = (double)k; info[1] = (double)code; return 1; }
    if (!stagewise && !(vi_maxabs(X + (k + 1) * nx, nx) < 1e8)) { info[0] = (double)k; info[1] = 5.0; return 1; } /* also NaN */
    for (long long i = 0; i < nc; i++) lam[i] = y[nd + i];
  }
  return 0;
}

/* The upper triangle (j >= i) of Z (n, n) = X'Y (+ Z if acc), X and Y (m, n): for products known to be symmetric
 * (A'V_xx A) or whose sum is (K'T + Q_ux'K); vi_mirror then copies it below the diagonal. Half the work. */
static void vi_mm_upper(const double* X, const double* Y, double* Z, long long n, long long m, int acc) {
  for (long long i = 0; i < n; i++) vi_row(X + i, n, Y, n, m, Z + i * n, acc, i);
}

static void vi_mirror(double* Z, long long n) {
  for (long long i = 0; i < n; i++)
    for (long long j = i + 1; j < n; j++) Z[j * n + i] = Z[i * n + j];
}

/* ---------------------------------------------------------------------------------------------------------
 * Linearization along the trajectory. a: X, U, Y | A (N, nx, nx), B (N, nx, nu), rcond (N: of the equilibrated
 * R_y with constraints, vi_factor), LU of R_y (N, ny, ny),
 * pivots (N, ny), dy/dz (N, ny, nz), O_y (N, nx, ny), info (stage, rcond). Returns 0, or 1 where R_y is singular
 * to rcond_min (linearize raises SingularityError there: the map has no derivative, Johnson2015, §VII). */
int vi_plan_linearize(void** c, void** a) {
  vi_plan_ctx m = vi_plan_unpack(c);
  const long long N = m.N, nx = m.nx, nu = m.nu, ny = m.ny, nz = m.nz;
  const double *X = a[0], *U = a[1], *Y = a[2];
  double *A = a[3], *B = a[4], *rc = a[5], *LU = a[6], *DY = a[8], *OY = a[9], *info = a[10];
  long long* PIV = a[7];
  double *z = m.scr, *Rz = z + nz, *Oz = Rz + ny * nz, *ex = Oz + nx * nz, *sg = ex + ny, *D = sg + ny;
  double* F = D + ny * nz;
  info[0] = -1.0; info[1] = 0.0;
  for (long long k = 0; k < N; k++) {
    double *lu = LU + k * ny * ny, *dydz = DY + k * ny * nz, *Oy = OY + k * nx * ny;
    long long* piv = PIV + k * ny;
    for (long long i = 0; i < nx; i++) z[i] = X[k * nx + i];
    for (long long i = 0; i < nu; i++) z[nx + i] = U[k * nu + i];
    if (!m.lin) {
      if (!m.tree_i) { info[0] = (double)k; return 1; }
      vi_tree_linearize(m.tree_i, m.tree_d, m.dt, z, Y + k * ny, lu, Rz, Oy, Oz, m.tree_w);
    } else {
      const double* arg[2] = {Y + k * ny, z};
      double* res[4] = {lu, Rz, Oy, Oz};
      if (m.lin(arg, res, m.iw, m.w, 0)) { info[0] = (double)k; return 1; }
    }
    const double r = vi_factor(lu, ny, m.nd, piv, ex, sg);
    rc[k] = r;
    if (!(r >= m.rcond_min)) { info[0] = (double)k; info[1] = r; return 1; }
    for (long long i = 0; i < ny; i++) /* dy/dz = -R_y^-1 R_z, all nz columns at once (D: row-major) */
      for (long long j = 0; j < nz; j++) D[i * nz + j] = Rz[i + j * ny];
    vi_lu_solve_rows(lu, ny, piv, D, nz, 0);
    for (long long i = 0; i < ny; i++)
      for (long long j = 0; j < nz; j++) { D[i * nz + j] = -D[i * nz + j]; dydz[i + j * ny] = D[i * nz + j]; }
    vi_mm(Oy, D, F, nx, ny, nz, 1, 0); /* df/dz = O_z + O_y dy/dz = [A B] */
    for (long long i = 0; i < nx; i++)
      for (long long j = 0; j < nz; j++) {
        const double v = Oz[i + j * nx] + F[i * nz + j];
        if (j < nx) A[(k * nx + i) * nx + j] = v;
        else B[(k * nx + i) * nu + (j - nx)] = v;
      }
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------
 * Cholesky H = R^T R (upper, as LAPACK dpotrf with uplo 'U': the upper triangle of H is read) and solves. */
static int vi_chol(const double* H, long long n, double* R) {
  for (long long j = 0; j < n; j++) {
    double s = H[j * n + j];
    for (long long k = 0; k < j; k++) s -= R[k * n + j] * R[k * n + j];
    if (!(s > 0.0)) return 1; /* not positive definite (or NaN) */
    const double d = sqrt(s);
    R[j * n + j] = d;
    for (long long i = j + 1; i < n; i++) {
      double t = H[j * n + i];
      for (long long k = 0; k < j; k++) t -= R[k * n + j] * R[k * n + i];
      R[j * n + i] = t / d;
    }
  }
  return 0;
}

/* R^T R X = B in place for m right-hand sides at once (m = 1: a vector), B row-major (n, m): row i holds entry i of
 * every system, each solved by forward then back substitution, its terms in ascending order; the loop over the
 * systems innermost, so it vectorizes across them. */
static void vi_chol_solve(const double* R, long long n, double* B, long long m) {
  for (long long i = 0; i < n; i++) {
    double* bi = B + i * m;
    for (long long k = 0; k < i; k++) {
      const double r = R[k * n + i], *bk = B + k * m;
      for (long long c = 0; c < m; c++) bi[c] -= r * bk[c];
    }
    const double d = R[i * n + i];
    for (long long c = 0; c < m; c++) bi[c] /= d;
  }
  for (long long i = n - 1; i >= 0; i--) {
    double* bi = B + i * m;
    for (long long k = i + 1; k < n; k++) {
      const double r = R[i * n + k], *bk = B + k * m;
      for (long long c = 0; c < m; c++) bi[c] -= r * bk[c];
    }
    const double d = R[i * n + i];
    for (long long c = 0; c < m; c++) bi[c] /= d;
  }
}

static double vi_quad(const double* H, const double* g, const double* x, long long n) { /* 0.5 x'Hx + g'x */
  double q = 0.0, l = 0.0;
  for (long long j = 0; j < n; j++) {
    double s = 0.0;
    for (long long i = 0; i < n; i++) s += 0.5 * x[i] * H[i * n + j];
    q += s * x[j];
  }
  for (long long i = 0; i < n; i++) l += g[i] * x[i];
  return q + l;
}

/* min 0.5 x'Hx + g'x on lo <= x <= hi by projected Newton (ddp.box_qp, same steps and tests); x from 0.
 * free[i] = 1 for the inputs not clamped. Returns 0, or 1 if the free block of H is not positive definite. */
static int vi_box_qp(const double* H, const double* g, const double* lo, const double* hi, long long n, double* x,
                     long long* free_, double* scr) {
  double *R = scr, *grad = R + n * n, *dx = grad + n, *xn = dx + n, *Hf = xn + n;
  long long* fi = free_ + n;
  for (long long i = 0; i < n; i++) free_[i] = 1;
  if (!vi_chol(H, n, R)) { /* fast path: the unconstrained minimizer is feasible */
    int ok = 1;
    for (long long i = 0; i < n; i++) x[i] = g[i];
    vi_chol_solve(R, n, x, 1);
    for (long long i = 0; i < n; i++) { x[i] = -x[i]; if (!(x[i] >= lo[i] && x[i] <= hi[i])) ok = 0; }
    if (ok) return 0;
  }
  for (long long i = 0; i < n; i++) x[i] = vi_clip(0.0, lo[i], hi[i]);
  for (int it = 0; it < 50; it++) {
    long long nf = 0;
    for (long long i = 0; i < n; i++) {
      double s = 0.0;
      for (long long j = 0; j < n; j++) s += H[i * n + j] * x[j];
      grad[i] = g[i] + s;
    }
    for (long long i = 0; i < n; i++) {
      const int clamped = (x[i] <= lo[i] && grad[i] > 0) || (x[i] >= hi[i] && grad[i] < 0);
      free_[i] = !clamped;
      if (!clamped) fi[nf++] = i;
    }
    if (!nf) break;
    for (long long a = 0; a < nf; a++)
      for (long long b = 0; b < nf; b++) Hf[a * nf + b] = H[fi[a] * n + fi[b]];
    if (vi_chol(Hf, nf, R)) return 1;
    for (long long i = 0; i < n; i++) dx[i] = 0.0;
    for (long long a = 0; a < nf; a++) xn[a] = grad[fi[a]];
    vi_chol_solve(R, nf, xn, 1);
    for (long long a = 0; a < nf; a++) dx[fi[a]] = -xn[a];
    if (vi_maxabs(dx, n) < 1e-12 * (1.0 + vi_maxabs(x, n))) break;
    const double f0 = vi_quad(H, g, x, n);
    double step = 1.0, gd;
    for (;;) { /* projected Armijo search */
      gd = 0.0;
      for (long long i = 0; i < n; i++) { xn[i] = vi_clip(x[i] + step * dx[i], lo[i], hi[i]); gd += grad[i] * (xn[i] - x[i]); }
      if (vi_quad(H, g, xn, n) - f0 <= 0.1 * gd || step < 1e-12) break;
      step *= 0.5;
    }
    double dmax = 0.0;
    for (long long i = 0; i < n; i++) { const double d = fabs(xn[i] - x[i]); if (d > dmax) dmax = d; x[i] = xn[i]; }
    if (dmax < 1e-13) break;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------
 * Backward pass, the one implementation of DDP's (planning/ddp.py drives it for compiled and numpy stages alike).
 * a: X, U, Y, A, B, LU, piv, dy/dz, O_y (from vi_plan_linearize; NULL but U, A, B with a contract), l_x (N, nx),
 * l_u (N, nu), V_x(N), V_xx(N), W_x (nx, nx), W_u (nu, nu) (the local model's curvature: Q, R or a metric), mu,
 * flags (second order, fall back: see vi_plan_backward) | kff (N, nu), K (N, nu, nx) in rollout convention,
 * d = (d1, d2) | contract (vi_contract_fn, or NULL for vi_plan_contract over the generated 'hessian'). Returns 0, or 1
 * when Q_uu (or a free block of it) is not positive definite, the result is not finite or contract failed: the
 * caller changes the model (or raises). */
/* V'_x . d2f of stage k (Johnson2015, eqs. 16-27 as a covector contraction): Hz (nz x nz, z = (x, u), row-major,
 * symmetric) = T'(V'_x' d2O + mu' d2R)T with R_y' mu = -O_y' V'_x, from the linearization's R_y LU, dy/dz and O_y
 * (a[5..8]); H = V'_x' d2O + mu' d2R over (y, z) by the tree's recursion (vi_tree_hessian: then y = q_{k+1},
 * z = (q_k, p_k, u), and V'_x's momentum part pairs with D2L_d) or the model's generated 'hessian'; z, mua, H, W
 * (ny x nz) and E (nz^2 + 2 ny nz + ny^2) are scratch. */
static int vi_plan_contract(const vi_plan_ctx* mp, void** a, long long k, const double* Vx, double* z, double* mua,
                            double* H, double* W, double* Hz, double* E) {
  const vi_plan_ctx m = *mp;
  const long long nx = m.nx, nu = m.nu, ny = m.ny, nz = m.nz, nw = ny + nz;
  const double *X = a[0], *U = a[1], *Y = a[2], *LU = a[5], *DY = a[7], *OY = a[8];
  const long long* PIV = a[6];
  const double *lu = LU + k * ny * ny, *dydz = DY + k * ny * nz, *Oy = OY + k * nx * ny;
  double *T = E + nz * nz, *Hyy = T + ny * nz, *Hyz = Hyy + ny * ny;
  for (long long j = 0; j < ny; j++) {
    double s = 0.0;
    for (long long i = 0; i < nx; i++) s += Oy[i + j * nx] * Vx[i];
    mua[j] = s;
  }
  vi_lu_solve_t(lu, ny, PIV + k * ny, mua);
  for (long long j = 0; j < ny; j++) mua[j] = -mua[j];
  for (long long i = 0; i < nx; i++) z[i] = X[k * nx + i];
  for (long long i = 0; i < nu; i++) z[nx + i] = U[k * nu + i];
  if (!m.hess) {
    if (!m.tree_i) return 1;
    vi_tree_hessian(m.tree_i, m.tree_d, m.dt, z, Y + k * ny, mua, Vx + m.nq, H, nw, 0, ny, m.tree_w);
  } else {
    const double* arg[4] = {Y + k * ny, z, Vx, mua};
    double* res[1] = {H};
    if (m.hess(arg, res, m.iw, m.w, 0)) return 1;
  }
  /* Row-major copies (ny x ny, ny x nz) of H_yy, dy/dz and H_yz, so that the products below are vi_mm's (vectorized
   * across columns; each entry still sums over i = 0, 1, ... as a dot product would). */
  for (long long i = 0; i < ny; i++) {
    for (long long l = 0; l < ny; l++) Hyy[i * ny + l] = H[i + l * nw];
    for (long long j = 0; j < nz; j++) { T[i * nz + j] = dydz[i + j * ny]; Hyz[i * nz + j] = H[i + (ny + j) * nw]; }
  }
  vi_mm(Hyy, T, W, ny, ny, nz, 0, 0); /* W = H_yy dy/dz + H_yz (ny x nz) */
  for (long long i = 0; i < ny * nz; i++) W[i] += Hyz[i];
  vi_mm_upper(T, W, Hz, nz, ny, 0);     /* dy/dz' W: its upper triangle (the only one read below) */
  vi_mm_upper(Hyz, T, E, nz, ny, 0);    /* H_yz' dy/dz: the same */
  for (long long p = 0; p < nz; p++) /* Hz = dy/dz' W + H_yz' dy/dz + H_zz: symmetric, its upper triangle */
    for (long long q = p; q < nz; q++)
      Hz[p * nz + q] = Hz[q * nz + p] = (Hz[p * nz + q] + E[p * nz + q]) + H[(ny + p) + (ny + q) * nw];
  return 0;
}

/* The caller's second-order terms of stage k (the numpy stages' V'_x . d2f, computed in Python): Hz as above. */
typedef int (*vi_contract_fn)(long long k, const double* Vx, double* Hz);

static int vi_plan_sweep(void** c, void** a, const int second) {
  vi_plan_ctx m = vi_plan_unpack(c);
  const long long N = m.N, nx = m.nx, nu = m.nu, ny = m.ny, nz = m.nz, nw = ny + nz;
  const double *X = a[0], *U = a[1], *Y = a[2], *AA = a[3], *BB = a[4], *LU = a[5], *DY = a[7], *OY = a[8];
  const long long* PIV = a[6];
  const double *LX = a[9], *LUc = a[10], *VxN = a[11], *VxxN = a[12], *Wx = a[13], *Wu = a[14];
  const double mu = *(const double*)a[15];
  const vi_contract_fn contract = (vi_contract_fn)a[20];
  if (second && !m.hess && !m.tree_i && !contract) return 1;
  double *KFF = a[17], *KFB = a[18], *d = a[19];
  double *Vx = m.scr, *Vxx = Vx + nx, *VA = Vxx + nx * nx, *VB = VA + nx * nx, *Qx = VB + nx * nu, *Qu = Qx + nx;
  double *Qxx = Qu + nu, *Qux = Qxx + nx * nx, *Quu = Qux + nu * nx, *Quu_r = Quu + nu * nu, *Qux_r = Quu_r + nu * nu;
  double *z = Qux_r + nu * nx, *cov = z + nz, *mua = cov + ny, *H = mua + ny, *W = H + nw * nw, *Hz = W + ny * nz;
  double *Quu_k = Hz + nz * nz, *t = Quu_k + nu, *Vn = t + nx, *Vxxn = Vn + nx, *lo = Vxxn + nx * nx, *hi = lo + nu;
  double *rhs = hi + nu, *R = rhs + nu * (nx + 1), *qp = R + nu * nu, *T = qp + 4 * nu * nu + 8 * nu;
  double* E = T + nu * nx + nu * nu; /* the contraction's: nz^2 + 2 ny nz + ny^2 (vi_plan_contract) */
  double d1 = 0.0, d2 = 0.0;
  for (long long i = 0; i < nx; i++) Vx[i] = VxN[i];
  for (long long i = 0; i < nx * nx; i++) Vxx[i] = VxxN[i];
  for (long long k = N - 1; k >= 0; k--) {
    const double *A = AA + k * nx * nx, *B = BB + k * nx * nu;
    double *kk = KFF + k * nu, *KK = KFB + k * nu * nx;
    vi_mm(Vxx, A, VA, nx, nx, nx, 0, 0);
    vi_mm(Vxx, B, VB, nx, nx, nu, 0, 0);
    for (long long i = 0; i < nx; i++) {
      double s = 0.0;
      for (long long l = 0; l < nx; l++) s += A[l * nx + i] * Vx[l];
      Qx[i] = LX[k * nx + i] + s;
    }
    for (long long i = 0; i < nu; i++) {
      double s = 0.0;
      for (long long l = 0; l < nx; l++) s += B[l * nu + i] * Vx[l];
      Qu[i] = LUc[k * nu + i] + s;
    }
    vi_mm_upper(A, VA, Qxx, nx, nx, 0); /* A'V'_xx A: symmetric */
    vi_mirror(Qxx, nx);
    for (long long i = 0; i < nx * nx; i++) Qxx[i] = Wx[i] + Qxx[i];
    vi_mm(B, VA, Qux, nu, nx, nx, 1, 0);
    vi_mm(B, VB, Quu, nu, nx, nu, 1, 0);
    for (long long i = 0; i < nu * nu; i++) Quu[i] = Wu[i] + Quu[i];
    if (second) { /* + V'_x . d2f: Hz of this stage (vi_plan_contract, or the caller's contract) */
      if (contract ? contract(k, Vx, Hz) : vi_plan_contract(&m, a, k, Vx, z, mua, H, W, Hz, E)) return 1;
      for (long long i = 0; i < nx; i++)
        for (long long j = 0; j < nx; j++) Qxx[i * nx + j] += Hz[i * nz + j];
      for (long long i = 0; i < nu; i++) {
        for (long long j = 0; j < nx; j++) Qux[i * nx + j] += Hz[j * nz + nx + i];
        for (long long j = 0; j < nu; j++) Quu[i * nu + j] += Hz[(nx + i) * nz + nx + j];
      }
    }
    /* Regularize V'_xx + mu I (Tassa et al. 2012): Q_uu + mu B'B, Q_ux + mu B'A. */
    for (long long i = 0; i < nu; i++)
      for (long long j = 0; j < nu; j++) Quu_r[i * nu + j] = 0.5 * (Quu[i * nu + j] + Quu[j * nu + i]);
    for (long long i = 0; i < nu * nx; i++) Qux_r[i] = Qux[i];
    if (mu != 0.0) {
      vi_mm(B, B, T, nu, nx, nu, 1, 0);
      for (long long i = 0; i < nu * nu; i++) Quu_r[i] += mu * T[i];
      vi_mm(B, A, T, nu, nx, nx, 1, 0);
      for (long long i = 0; i < nu * nx; i++) Qux_r[i] = Qux[i] + mu * T[i];
    }
    if (m.bounded) {
      long long* free_ = m.iscr;
      for (long long i = 0; i < nu; i++) { lo[i] = m.lo[i] - U[k * nu + i]; hi[i] = m.hi[i] - U[k * nu + i]; }
      if (vi_box_qp(Quu_r, Qu, lo, hi, nu, kk, free_, qp)) return 1;
      long long nf = 0;
      long long* fi = free_ + nu;
      for (long long i = 0; i < nu; i++) if (free_[i]) fi[nf++] = i;
      for (long long i = 0; i < nu * nx; i++) KK[i] = 0.0;
      if (nf) { /* feedback on the free inputs only: K_f = -Q_uu,ff^-1 Q_ux,f */
        for (long long p = 0; p < nf; p++)
          for (long long q = 0; q < nf; q++) T[p * nf + q] = Quu_r[fi[p] * nu + fi[q]];
        if (vi_chol(T, nf, R)) return 1;
        for (long long p = 0; p < nf; p++)
          for (long long j = 0; j < nx; j++) rhs[p * nx + j] = Qux_r[fi[p] * nx + j];
        vi_chol_solve(R, nf, rhs, nx);
        for (long long p = 0; p < nf; p++)
          for (long long j = 0; j < nx; j++) KK[fi[p] * nx + j] = -rhs[p * nx + j];
      }
    } else {
      if (vi_chol(Quu_r, nu, R)) return 1;
      for (long long i = 0; i < nu; i++) kk[i] = Qu[i];
      vi_chol_solve(R, nu, kk, 1);
      for (long long i = 0; i < nu; i++) kk[i] = -kk[i];
      for (long long i = 0; i < nu * nx; i++) rhs[i] = Qux_r[i];
      vi_chol_solve(R, nu, rhs, nx);
      for (long long i = 0; i < nu * nx; i++) KK[i] = -rhs[i];
    }
    /* Expected decrease and the cost-to-go with the unregularized Q (ddp._backward). */
    for (long long i = 0; i < nu; i++) {
      double s = 0.0;
      for (long long j = 0; j < nu; j++) s += Quu[i * nu + j] * kk[j];
      Quu_k[i] = s;
    }
    double s1 = 0.0, s2 = 0.0;
    for (long long i = 0; i < nu; i++) { s1 += kk[i] * Qu[i]; s2 += 0.5 * kk[i] * Quu_k[i]; }
    d1 += s1;
    d2 += s2;
    for (long long i = 0; i < nx; i++) {
      double s = 0.0, r = 0.0;
      for (long long l = 0; l < nu; l++) { s += KK[l * nx + i] * (Quu_k[l] + Qu[l]); r += Qux[l * nx + i] * kk[l]; }
      Vn[i] = Qx[i] + s + r;
    }
    vi_mm(Quu, KK, T, nu, nu, nx, 0, 0); /* T = Q_uu K + Q_ux (nu, nx) */
    for (long long i = 0; i < nu * nx; i++) T[i] += Qux[i];
    vi_mm_upper(KK, T, Vxxn, nx, nu, 0); /* V'_xx = Q_xx + K'T + Q_ux'K, symmetric: its upper triangle */
    vi_mm_upper(Qux, KK, Vxxn, nx, nu, 1);
    for (long long i = 0; i < nx; i++)
      for (long long j = i; j < nx; j++) Vxxn[i * nx + j] = 0.5 * (Qxx[i * nx + j] + Qxx[j * nx + i]) + Vxxn[i * nx + j];
    vi_mirror(Vxxn, nx);
    for (long long i = 0; i < nx; i++) {
      Vx[i] = Vn[i];
      for (long long j = 0; j < nx; j++) Vxx[i * nx + j] = 0.5 * (Vxxn[i * nx + j] + Vxxn[j * nx + i]);
    }
  }
  d[0] = d1; d[1] = d2;
  if (!isfinite(d1)) return 1; /* NaN/inf anywhere propagates to here */
  for (long long i = 0; i < nx * nx; i++) if (!isfinite(Vxx[i])) return 1;
  return 0;
}

/* a[16] (int64, in/out): bit 0 second order, bit 1 fall back. A second-order pass that fails (its model not convex
 * here: Q_uu not positive definite, a contraction that failed, a result not finite) is then taken again as the
 * Gauss–Newton pass with the same mu in this call — what ddp does next, without a crossing — and bit 0 is cleared:
 * it says which pass the result (or the failure) is of. */
int vi_plan_backward(void** c, void** a) {
  long long* flags = (long long*)a[16];
  const int second = (int)(*flags & 1);
  int code = vi_plan_sweep(c, a, second);
  if (code && second && (*flags & 2)) {
    *flags = 0;
    code = vi_plan_sweep(c, a, 0);
  }
  return code;
}

/* One ctypes entry point for every pass: (which, context, arguments). */
int vi_plan_call(long long which, void** c, void** a) {
  switch (which) {
    case 0: return vi_plan_rollout(c, a);
    case 1: return vi_plan_linearize(c, a);
    case 2: return vi_plan_backward(c, a);
    default: return -1;
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
