/* ---- vi_control: the second-order term of the midpoint DEL step over a kinematic tree, by recursion ----
 * For a tree of 1-DOF joints (revolute, continuous, prismatic) with L = T − V_gravity and the midpoint discrete
 * Lagrangian L_d(q0, q1) = Δt L((q0 + q1)/2, (q1 − q0)/Δt) (Johnson2015, eq. 3a), the contraction
 *   mu·D1L_d(q0, q1) + nu·D2L_d(q0, q1) = ψ(q̄, v̄),  ψ(q, v) = L_q(q, v)·a + L_v(q, v)·b,
 *   a = Δt (mu + nu)/2, b = nu − mu,
 * is the directional derivative of L along (a, b), and its Hessian over (q0, q1) is J' ∇²ψ J with J the midpoint map —
 * the only nonzero part of the second-order term V'_x·∂²f of a step without constraints or prescribed joints
 * (Johnson2015, eqs. 16-27, as the covector contraction planning/csrc/ddp_kernel.c takes). The step's forcing is
 * linear in (q, u) and adds nothing.
 *
 * ∇²ψ (q and v blocks, 3 n² entries) comes from world-frame spatial quantities in O(n) per joint plus O(1) per pair
 * of joints on one root path (none for joints on different branches): joint twists S_j, path sums V_j = Σ_{i⪯j} S_i v_i
 * (and A_j, B_j for a, b), C_j = Σ_{i⪯j} [V_i, S_i] a_i, subtree sums of the body inertias I, momenta I V, I (C + B),
 * ad_Aᵀ I V, the operators I ad_A, the gravity wrenches and mass moments. A derivative ∂_k moves everything below
 * joint k by S_k (Lie bracket, coadjoint action); pairings are invariant under a common motion, so ∂_k of an
 * expression is the sum of each factor's departure from that motion — a few 6-vector terms per pair (k ⪯ l).
 * Independent of CasADi's automatic differentiation of the same L_d ('hessian' of mechanics.discrete), which the
 * tests hold it to (test/mechanics/test_tree_derivatives.py).
 *
 * Model: ti = (n, nu, parent_j (−1: the root), prismatic_j, actuated joint of input a) int64; td = (g (3), damping_j,
 * then per joint: joint placement rotation (9, row-major) and translation (3), axis (3), mass, centre of mass (3),
 * inertia about it (9, row-major)) float64 — Pinocchio's model, as mechanics.symbolic.build_tree reads it
 * (discrete.tree_model). Twists (ω, v), wrenches (n, f), all in the world frame about its origin.
 *
 * vi_tree_linearize gives the step's first derivatives the same way, one order lower (the Hessian of L_d). */
#include <math.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("O3")
#endif

#define VI_TREE_JOINT 28 /* doubles per joint in td */

static inline void vt_cross(const double* a, const double* b, double* o) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}
static inline double vt_dot3(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static inline double vt_dot6(const double* a, const double* b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}
/* [x, y] = (ωx × ωy, ωx × vy + vx × ωy) */
static inline void vt_br(const double* x, const double* y, double* o) {
  double t[3], s[3];
  vt_cross(x, y, o);
  vt_cross(x, y + 3, t);
  vt_cross(x + 3, y, s);
  o[3] = t[0] + s[0]; o[4] = t[1] + s[1]; o[5] = t[2] + s[2];
}
/* ad_xᵀ F = (n × ω + f × v, f × ω): ⟨ad_xᵀF, y⟩ = ⟨F, [x, y]⟩ */
static inline void vt_adT(const double* x, const double* F, double* o) {
  double t[3];
  vt_cross(F, x, o);
  vt_cross(F + 3, x + 3, t);
  o[0] += t[0]; o[1] += t[1]; o[2] += t[2];
  vt_cross(F + 3, x, o + 3);
}
static inline void vt_mv(const double* M, const double* x, double* o) { /* o = M x, M 6x6 row-major */
  for (int i = 0; i < 6; i++) o[i] = vt_dot6(M + 6 * i, x);
}
static inline void vt_mtv(const double* M, const double* x, double* o) { /* o = Mᵀ x */
  for (int j = 0; j < 6; j++) o[j] = 0.0;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) o[j] += M[6 * i + j] * x[i];
}
static inline void vt_sub6(const double* a, const double* b, double* o) {
  for (int i = 0; i < 6; i++) o[i] = a[i] - b[i];
}

/* Doubles of workspace vi_tree_hessian and vi_tree_linearize need for n joints. */
long long vi_tree_workspace(long long n) { return n * 170 + 7 * n * n + 64; }

/* Per-joint layout of the workspace (offsets in doubles). */
enum { T_R = 0, T_P = 9, T_S = 12, T_I = 18, T_V = 54, T_A = 60, T_B = 66, T_C = 72, T_X = 78, T_E = 84, T_BK = 90,
       T_Y = 96, T_PC = 102, T_WC = 108, T_NC = 114, T_Z = 120, T_F = 156, T_U = 162, T_M = 165, T_H = 166,
       T_STRIDE = 170 };

/* The tree at the midpoint (q̄, v̄) of (q0, q1): placements, twists, path sums and per-body quantities summed over
 * subtrees, into w (T_STRIDE per joint). second: also the path sums of the directions a = Δt (mu + nu)/2 and
 * b = nu − mu and what the second-order term pairs with them (mu, nu unread otherwise). */
static void vt_tree_pass(const long long* ti, const double* td, double dt, const double* q0, const double* q1,
                         const double* mu, const double* nu, double* w, int second) {
  const long long n = ti[0];
  const long long *par = ti + 2, *prism = ti + 2 + n;
  const double* g = td;
  static const double zero6[6] = {0, 0, 0, 0, 0, 0};
  /* Forward pass: placements, twists, path sums, per-body quantities (summed over subtrees below). */
  for (long long j = 0; j < n; j++) {
    const double* d = td + 3 + n + j * VI_TREE_JOINT;
    const double *Rpl = d, *ppl = d + 9, *ax = d + 12, *lever = d + 16, *Icom = d + 19;
    const double mass = d[15];
    double* J = w + j * T_STRIDE;
    const long long pa = par[j];
    const double* Jp = pa >= 0 ? w + pa * T_STRIDE : 0;
    static const double eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const double *Rp = Jp ? Jp + T_R : eye, *pp = Jp ? Jp + T_P : zero6;
    const double qb = 0.5 * (q0[j] + q1[j]), vb = (q1[j] - q0[j]) / dt;
    const double aj = second ? 0.5 * dt * (mu[j] + nu[j]) : 0.0, bj = second ? nu[j] - mu[j] : 0.0;
    double Rl[9], pl[3];
    if (prism[j]) {
      memcpy(Rl, Rpl, sizeof Rl);
      for (int i = 0; i < 3; i++) pl[i] = ppl[i] + qb * vt_dot3(Rpl + 3 * i, ax);
    } else { /* Rpl · Rodrigues(axis, q̄) */
      const double s = sin(qb), c1 = 1.0 - cos(qb);
      const double K[9] = {0, -ax[2], ax[1], ax[2], 0, -ax[0], -ax[1], ax[0], 0};
      double KK[9], Rq[9];
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) KK[3 * r + c] = K[3 * r] * K[c] + K[3 * r + 1] * K[3 + c] + K[3 * r + 2] * K[6 + c];
      for (int i = 0; i < 9; i++) Rq[i] = eye[i] + s * K[i] + c1 * KK[i];
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) Rl[3 * r + c] = Rpl[3 * r] * Rq[c] + Rpl[3 * r + 1] * Rq[3 + c] + Rpl[3 * r + 2] * Rq[6 + c];
      memcpy(pl, ppl, sizeof pl);
    }
    double *R = J + T_R, *p = J + T_P, *S = J + T_S;
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++) R[3 * r + c] = Rp[3 * r] * Rl[c] + Rp[3 * r + 1] * Rl[3 + c] + Rp[3 * r + 2] * Rl[6 + c];
      p[r] = pp[r] + vt_dot3(Rp + 3 * r, pl);
    }
    double wax[3];
    for (int r = 0; r < 3; r++) wax[r] = vt_dot3(R + 3 * r, ax);
    if (prism[j]) {
      S[0] = S[1] = S[2] = 0.0;
      S[3] = wax[0]; S[4] = wax[1]; S[5] = wax[2];
    } else {
      S[0] = wax[0]; S[1] = wax[1]; S[2] = wax[2];
      vt_cross(p, wax, S + 3);
    }
    /* Path sums */
    const double *Vp = Jp ? Jp + T_V : zero6, *Ap = Jp ? Jp + T_A : zero6, *Bp = Jp ? Jp + T_B : zero6,
                 *Cp = Jp ? Jp + T_C : zero6;
    double *V = J + T_V, *A = J + T_A, *B = J + T_B, *C = J + T_C, *X = J + T_X, *E = J + T_E, *Bk = J + T_BK,
           *Y = J + T_Y;
    for (int i = 0; i < 6; i++) { V[i] = Vp[i] + S[i] * vb; A[i] = Ap[i] + S[i] * aj; B[i] = Bp[i] + S[i] * bj; }
    double t6[6], u6[6];
    vt_br(S, V, X);
    if (second) {
      vt_br(V, S, t6);
      for (int i = 0; i < 6; i++) C[i] = Cp[i] + t6[i] * aj;
      vt_br(S, A, E);
      vt_br(S, B, Bk);
      for (int i = 0; i < 6; i++) t6[i] = Cp[i] + B[i];
      vt_br(S, t6, Y);
      vt_br(X, Ap, u6);
      for (int i = 0; i < 6; i++) Y[i] -= u6[i];
    }
    /* Body j: world spatial inertia about the origin (as build_tree: a massless body carries nothing) */
    double* I = J + T_I;
    double *F = J + T_F, *u = J + T_U, *h = J + T_H;
    const double m = mass > 0 ? mass : 0.0;
    double c[3], Ic[9], RI[9];
    for (int r = 0; r < 3; r++) c[r] = p[r] + vt_dot3(R + 3 * r, lever);
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < 3; k++) RI[3 * r + k] = R[3 * r] * Icom[k] + R[3 * r + 1] * Icom[3 + k] + R[3 * r + 2] * Icom[6 + k];
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < 3; k++) Ic[3 * r + k] = m > 0 ? vt_dot3(RI + 3 * r, R + 3 * k) : 0.0;
    const double cc[9] = {0, -c[2], c[1], c[2], 0, -c[0], -c[1], c[0], 0};
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < 3; k++) {
        const double ccrk = cc[3 * r] * cc[k] + cc[3 * r + 1] * cc[3 + k] + cc[3 * r + 2] * cc[6 + k];
        I[6 * r + k] = Ic[3 * r + k] - m * ccrk;
        I[6 * r + 3 + k] = m * cc[3 * r + k];
        I[6 * (3 + r) + k] = -m * cc[3 * r + k];
        I[6 * (3 + r) + 3 + k] = r == k ? m : 0.0;
      }
    double* Pc = J + T_PC;
    double* Wc = J + T_WC;
    double* Nc = J + T_NC;
    double* Z = J + T_Z;
    vt_mv(I, V, Pc);
    double mg[3] = {m * g[0], m * g[1], m * g[2]};
    vt_cross(c, mg, F);
    F[3] = mg[0]; F[4] = mg[1]; F[5] = mg[2];
    for (int r = 0; r < 3; r++) h[r] = m * c[r];
    if (second) {
      for (int i = 0; i < 6; i++) t6[i] = C[i] + B[i];
      vt_mv(I, t6, Wc);
      vt_adT(A, Pc, Nc);
      /* Z = I ad_A, ad_A = [[ω̂, 0], [v̂, ω̂]] */
      const double *wa = A, *va = A + 3;
      const double W3[9] = {0, -wa[2], wa[1], wa[2], 0, -wa[0], -wa[1], wa[0], 0};
      const double V3[9] = {0, -va[2], va[1], va[2], 0, -va[0], -va[1], va[0], 0};
      for (int r = 0; r < 6; r++)
        for (int k = 0; k < 3; k++) {
          const double* Ir = I + 6 * r;
          Z[6 * r + k] = Ir[0] * W3[k] + Ir[1] * W3[3 + k] + Ir[2] * W3[6 + k] + Ir[3] * V3[k] + Ir[4] * V3[3 + k] +
                         Ir[5] * V3[6 + k];
          Z[6 * r + 3 + k] = Ir[3] * W3[k] + Ir[4] * W3[3 + k] + Ir[5] * W3[6 + k];
        }
      for (int r = 0; r < 6; r++) /* Zs = Z + Zᵀ: the only combination the entries use */
        for (int k = r; k < 6; k++) Z[6 * r + k] = Z[6 * k + r] = Z[6 * r + k] + Z[6 * k + r];
      vt_cross(A, c, u);
      for (int r = 0; r < 3; r++) u[r] = m * (u[r] + A[3 + r]);
    }
    J[T_M] = m;
  }
  /* Backward pass: subtree sums (in place: I → I^c, I V → P^c, …) */
  for (long long j = n - 1; j >= 0; j--) {
    const long long pa = par[j];
    if (pa < 0) continue;
    double *J = w + j * T_STRIDE, *P = w + pa * T_STRIDE;
    for (int i = 0; i < 36; i++) P[T_I + i] += J[T_I + i];
    for (int i = 0; i < 6; i++) { P[T_PC + i] += J[T_PC + i]; P[T_F + i] += J[T_F + i]; }
    for (int i = 0; i < 3; i++) P[T_H + i] += J[T_H + i];
    P[T_M] += J[T_M];
    if (!second) continue;
    for (int i = 0; i < 36; i++) P[T_Z + i] += J[T_Z + i];
    for (int i = 0; i < 6; i++) { P[T_WC + i] += J[T_WC + i]; P[T_NC + i] += J[T_NC + i]; }
    for (int i = 0; i < 3; i++) P[T_U + i] += J[T_U + i];
  }
}

/* G (2n x 2n, row-major, rows and columns (q0, q1)) = scale · J' [[Hqq, Hqv], [Hqvᵀ, Hvv]] J of the midpoint map
 * q̄ = (q0 + q1)/2, v̄ = (q1 − q0)/Δt. */
static void vt_midpoint(long long n, double dt, double scale, const double* Hqq, const double* Hqv,
                        const double* Hvv, double* G) {
  const double s[2] = {-1.0 / dt, 1.0 / dt};
  for (int x = 0; x < 2; x++)
    for (int y = 0; y < 2; y++)
      for (long long i = 0; i < n; i++)
        for (long long j = 0; j < n; j++)
          G[(x * n + i) * 2 * n + y * n + j] = scale * (0.25 * Hqq[i * n + j] + 0.5 * s[y] * Hqv[i * n + j] +
                                                        0.5 * s[x] * Hqv[j * n + i] + s[x] * s[y] * Hvv[i * n + j]);
}

/* H (nw x nw, column-major, zero outside the (q1, q0) blocks): the Hessian over w = (q1 at y_at, q0 at z_at) of
 * mu·D1L_d(q0, q1) + nu·D2L_d(q0, q1). Returns 0. */
int vi_tree_hessian(const long long* ti, const double* td, double dt, const double* q0, const double* q1,
                    const double* mu, const double* nu, double* H, long long nw, long long y_at, long long z_at,
                    double* w) {
  const long long n = ti[0];
  const long long* par = ti + 2;
  const double* g = td;
  double *Hqq = w + n * T_STRIDE, *Hqv = Hqq + n * n, *Hvv = Hqv + n * n, *G = Hvv + n * n;
  static const double zero6[6] = {0, 0, 0, 0, 0, 0};
  for (long long i = 0; i < 3 * n * n; i++) Hqq[i] = 0.0; /* pairs on different branches stay 0 */
  vt_tree_pass(ti, td, dt, q0, q1, mu, nu, w, 1);
  /* Pairs k ⪯ l (l and its ancestors). Every term of an entry is a pairing of a vector of joint k (X_k, Y_k, S_k,
   * E_k, ω_k) with one of joint l and its subtree: the latter are formed once per l (G…), then 8 dot products. */
  for (long long l = 0; l < n; l++) {
    const double* L = w + l * T_STRIDE;
    const long long pl_ = par[l];
    const double *Al = pl_ >= 0 ? w + pl_ * T_STRIDE + T_A : zero6, *Cl = pl_ >= 0 ? w + pl_ * T_STRIDE + T_C : zero6;
    const double *Sl = L + T_S, *Xl = L + T_X, *El = L + T_E, *Bl = L + T_B, *Yl = L + T_Y;
    const double *Ic = L + T_I, *Pc = L + T_PC, *Wc = L + T_WC, *Nc = L + T_NC, *Zs = L + T_Z, *Fc = L + T_F;
    const double *uc = L + T_U, *hc = L + T_H, mc = L[T_M];
    double GX[6], GY[6], GE[6], Gw[3], QS[6], IcSl[6], M1[6];
    double Q[6], SWN[6], t6[6], r6[6], a3[3], b3[3], wg[3];
    /* Q = ad_{S_l}ᵀ P^c; X_k's vector: ad_{S_l}ᵀ(W^c − N^c) − Zs X_l + I^c [S_l, C_λ(l) + B_l] − I^c [X_l, A_λ(l)]
     * + ad_{S_l}ᵀ ad_{A_λ(l)}ᵀ P^c − ad_{A_λ(l)}ᵀ Q (Zs = Σ I ad_A + (I ad_A)ᵀ over the subtree) */
    vt_adT(Sl, Pc, Q);
    vt_sub6(Wc, Nc, t6);
    vt_adT(Sl, t6, SWN); /* ad_{S_l}ᵀ(W^c − N^c): in X_k's vector and, negated, in S_k's (qv) */
    double ZX[6], G4[6], AQ[6];
    vt_mv(Zs, Xl, ZX);
    for (int i = 0; i < 6; i++) t6[i] = Cl[i] + Bl[i];
    vt_br(Sl, t6, r6);
    vt_mv(Ic, r6, t6);
    for (int i = 0; i < 6; i++) GX[i] = SWN[i] + (t6[i] - ZX[i]);
    vt_br(Xl, Al, r6);
    vt_mv(Ic, r6, t6);
    vt_adT(Al, Pc, r6);
    vt_adT(Sl, r6, G4);
    vt_adT(Al, Q, AQ);
    for (int i = 0; i < 6; i++) GX[i] += G4[i] - t6[i] - AQ[i];
    /* Y_k's: I^c X_l + Q */
    double IcXl[6];
    vt_mv(Ic, Xl, IcXl);
    for (int i = 0; i < 6; i++) GY[i] = IcXl[i] + Q[i];
    /* ω_k's (gravity): g × (ω_{E_l} × h^c + m^c v_{E_l}) − u^c × (ω_l × g) + (g × u^c) × ω_l */
    vt_cross(El, hc, a3);
    for (int i = 0; i < 3; i++) a3[i] += mc * El[3 + i];
    vt_cross(g, a3, Gw);
    vt_cross(Sl, g, wg);
    vt_cross(uc, wg, a3);
    vt_cross(g, uc, b3);
    double c3[3];
    vt_cross(b3, Sl, c3);
    for (int i = 0; i < 3; i++) Gw[i] += c3[i] - a3[i];
    /* E_k's: ad_{S_l}ᵀ F^c + (h^c × (ω_l × g), m^c ω_l × g) */
    vt_adT(Sl, Fc, GE);
    vt_cross(hc, wg, a3);
    for (int i = 0; i < 3; i++) { GE[i] += a3[i]; GE[3 + i] += mc * wg[i]; }
    /* ∂_{v_k}∂_{q_l}ψ (k ⪯ l): S_k's −ad_{S_l}ᵀ(W^c − N^c) + Zs X_l − I^c Y_l + ad_{A_λ(l)}ᵀQ − G4; E_k's I^c X_l + Q,
     * which is Y_k's GY */
    vt_mv(Ic, Yl, t6);
    for (int i = 0; i < 6; i++) QS[i] = -SWN[i] + ZX[i] - t6[i] + AQ[i] - G4[i];
    /* ∂_{q_k}∂_{v_l}ψ (k ≺ l) and ∂_a M: Zs S_l + I^c E_l, I^c S_l */
    vt_mv(Zs, Sl, M1);
    vt_mv(Ic, El, t6);
    for (int i = 0; i < 6; i++) M1[i] += t6[i];
    vt_mv(Ic, Sl, IcSl);
    for (long long k = l; k >= 0; k = par[k]) {
      const double* K = w + k * T_STRIDE;
      const double *Sk = K + T_S, *Xk = K + T_X, *Ek = K + T_E, *Yk = K + T_Y;
      const double h = vt_dot6(Xk, GX) + vt_dot6(Yk, GY) + vt_dot3(Sk, Gw) + vt_dot6(Ek, GE);
      Hqq[k * n + l] = Hqq[l * n + k] = h;
      Hvv[k * n + l] = Hvv[l * n + k] = -vt_dot6(Sk, M1) - vt_dot6(Ek, IcSl);
      Hqv[l * n + k] = vt_dot6(Sk, QS) + vt_dot6(Ek, GY);
      if (k != l) Hqv[k * n + l] = vt_dot6(Xk, M1) - vt_dot6(Yk, IcSl);
    }
  }
  vt_midpoint(n, dt, 1.0, Hqq, Hqv, Hvv, G);
  for (long long i = 0; i < nw * nw; i++) H[i] = 0.0;
  const long long at[2] = {z_at, y_at};
  for (int x = 0; x < 2; x++)
    for (int y = 0; y < 2; y++)
      for (long long i = 0; i < n; i++)
        for (long long j = 0; j < n; j++) H[(at[x] + i) + (at[y] + j) * nw] = G[(x * n + i) * 2 * n + y * n + j];
  return 0;
}

/* The step's first derivatives (Johnson2015, eqs. 8-15, the midpoint step's R(y, z) = p0 + D1L_d(q0, q1) + F and
 * O = (q1, D2L_d(q0, q1)) with y = q1, z = (q0, p0, u), F = Δt S u − c (q1 − q0)), column-major as the generated
 * 'linearize' writes them: R_y (n x n), R_z (n x nz), O_y (2n x n), O_z (2n x nz), from the Hessian of L_d, Δt J' ∇²L J,
 * whose entries pair a vector of joint k with one of joint l ⪯-below it (∂_k of ∂_l L = −⟨P^c_l, X_l⟩ + ⟨F^c_l, S_l⟩,
 * ∂L/∂v_l = ⟨S_l, P^c_l⟩). Returns 0. */
int vi_tree_linearize(const long long* ti, const double* td, double dt, const double* q0, const double* q1,
                      double* Ry, double* Rz, double* Oy, double* Oz, double* w) {
  const long long n = ti[0], nu = ti[1];
  const long long *par = ti + 2, *act = ti + 2 + 2 * n;
  const double *g = td, *damping = td + 3;
  const long long nz = 2 * n + nu, nx = 2 * n;
  double *Hqq = w + n * T_STRIDE, *Hqv = Hqq + n * n, *Hvv = Hqv + n * n, *G = Hvv + n * n;
  for (long long i = 0; i < 3 * n * n; i++) Hqq[i] = 0.0;
  vt_tree_pass(ti, td, dt, q0, q1, 0, 0, w, 0);
  for (long long l = 0; l < n; l++) {
    const double* L = w + l * T_STRIDE;
    const double *Sl = L + T_S, *Xl = L + T_X, *Ic = L + T_I, *Pc = L + T_PC, *hc = L + T_H, mc = L[T_M];
    double GX[6], Gw[3], IcSl[6], t6[6], a3[3];
    vt_adT(Sl, Pc, t6); /* Q_l = ad_{S_l}ᵀ P^c */
    vt_mv(Ic, Xl, GX);
    for (int i = 0; i < 6; i++) GX[i] += t6[i]; /* I^c X_l + Q_l */
    vt_cross(Sl, hc, a3); /* (ω_l × h^c + m^c v_l) × g: gravity's torque change */
    for (int i = 0; i < 3; i++) a3[i] += mc * Sl[3 + i];
    vt_cross(a3, g, Gw);
    vt_mv(Ic, Sl, IcSl);
    for (long long k = l; k >= 0; k = par[k]) {
      const double* K = w + k * T_STRIDE;
      const double *Sk = K + T_S, *Xk = K + T_X;
      Hqq[k * n + l] = Hqq[l * n + k] = vt_dot6(Xk, GX) + vt_dot3(Sk, Gw);
      Hvv[k * n + l] = Hvv[l * n + k] = vt_dot6(Sk, IcSl);
      Hqv[l * n + k] = -vt_dot6(Sk, GX);
      if (k != l) Hqv[k * n + l] = -vt_dot6(Xk, IcSl);
    }
  }
  vt_midpoint(n, dt, dt, Hqq, Hqv, Hvv, G); /* ∂²L_d, rows and columns (q0, q1) */
  const long long m2 = 2 * n;
  for (long long j = 0; j < n; j++)
    for (long long i = 0; i < n; i++) {
      Ry[i + j * n] = G[i * m2 + n + j] - (i == j ? damping[i] : 0.0);
      Rz[i + j * n] = G[i * m2 + j] + (i == j ? damping[i] : 0.0);
      Rz[i + (n + j) * n] = i == j ? 1.0 : 0.0;
      Oy[i + j * nx] = i == j ? 1.0 : 0.0;
      Oy[n + i + j * nx] = G[(n + i) * m2 + n + j];
    }
  for (long long a = 0; a < nu; a++)
    for (long long i = 0; i < n; i++) Rz[i + (2 * n + a) * n] = i == act[a] ? dt : 0.0;
  for (long long j = 0; j < nz; j++)
    for (long long i = 0; i < n; i++) {
      Oz[i + j * nx] = 0.0;
      Oz[n + i + j * nx] = j < n ? G[(n + i) * m2 + j] : 0.0;
    }
  return 0;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
