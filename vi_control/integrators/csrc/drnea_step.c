/* vi_control: compiled step of the linear-time variational integrator (Lee2016), our own code.
 * DRNEA (Alg. 2), RIQN (Alg. 3, eq. 25), exact Newton with the Jacobian by subtree sums or by Alg. 4 as
 * printed. Loaded and documented by vi_control/integrators/drnea_c.py, which compiles this file once per
 * source hash. */
#include <math.h>
#include <string.h>
#ifdef LTVI_DEBUG
#include <stdio.h>
#endif
#define BODY 72
#define WORK 192
typedef long long ll;
/* model per body: XR 0, Xp 9, S 12, G 18, mass 54, com 55, damping 58, revolute 59, I_c 60 */
/* work per body: R 0, p 9, Sw 12, ap 18, R1 21, p1 30, Sw1 33, Rm 39, t 48, xi 51, mw 57, W 63,
   Iw 69, IA 105, U 141, D 147, c 148, pA 154, v 160, a 166, u 172, ΔR − I 178, Δp 187 */
typedef struct { ll n, method, ig, max_it; const ll* par; const double *dp, *B; double* w; } Ctx;
#define BD(i) (c->B + (i) * BODY)
#define WK(i) (c->w + (i) * WORK)

static void cross3(const double* a, const double* b, double* o) {
  double x = a[1]*b[2] - a[2]*b[1], y = a[2]*b[0] - a[0]*b[2], z = a[0]*b[1] - a[1]*b[0];
  o[0] = x; o[1] = y; o[2] = z;
}
static void mv3(const double* A, const double* b, double* o) {  /* o = A b, A row-major */
  for (int r = 0; r < 3; r++) o[r] = A[3*r]*b[0] + A[3*r+1]*b[1] + A[3*r+2]*b[2];
}
static void mtv3(const double* A, const double* b, double* o) { /* o = A^T b */
  for (int r = 0; r < 3; r++) o[r] = A[r]*b[0] + A[3+r]*b[1] + A[6+r]*b[2];
}
static void mm3(const double* A, const double* B, double* o) {
  double t[9];
  for (int r = 0; r < 3; r++) for (int k = 0; k < 3; k++)
    t[3*r+k] = A[3*r]*B[k] + A[3*r+1]*B[3+k] + A[3*r+2]*B[6+k];
  memcpy(o, t, sizeof t);
}
static void mtm3(const double* A, const double* B, double* o) { /* o = A^T B */
  for (int r = 0; r < 3; r++) for (int k = 0; k < 3; k++)
    o[3*r+k] = A[r]*B[k] + A[3+r]*B[3+k] + A[6+r]*B[6+k];
}
static void mm6(const double* A, const double* B, double* o) {
  double t[36];
  for (int r = 0; r < 6; r++) for (int k = 0; k < 6; k++) {
    double s = 0; for (int j = 0; j < 6; j++) s += A[6*r+j]*B[6*j+k];
    t[6*r+k] = s;
  }
  memcpy(o, t, sizeof t);
}
static void mv6(const double* A, const double* b, double* o) {
  double t[6];
  for (int r = 0; r < 6; r++) { double s = 0; for (int j = 0; j < 6; j++) s += A[6*r+j]*b[j]; t[r] = s; }
  memcpy(o, t, sizeof t);
}
static double dot6(const double* a, const double* b) {
  return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3] + a[4]*b[4] + a[5]*b[5];
}
static void hat(const double* w, double* W) {
  W[0] = 0; W[1] = -w[2]; W[2] = w[1]; W[3] = w[2]; W[4] = 0; W[5] = -w[0]; W[6] = -w[1]; W[7] = w[0]; W[8] = 0;
}
static void put3(double* A, int r0, int c0, const double* M, double s) { /* 6x6 block = s M */
  for (int r = 0; r < 3; r++) for (int k = 0; k < 3; k++) A[6*(r0+r)+c0+k] = s * M[3*r+k];
}
/* exp(ŵ) − I by Rodrigues (lie.exp_so3_minus_identity) */
static void exp_m(const double* w, double* Rm) {
  double th = sqrt(w[0]*w[0] + w[1]*w[1] + w[2]*w[2]), a, b, W[9], W2[9];
  if (th < 1e-4) { a = 1.0 - th*th/6.0; b = 0.5 - th*th/24.0; }
  else { double s = sin(0.5*th)/th; a = sin(th)/th; b = 2.0*s*s; }
  hat(w, W); mm3(W, W, W2);
  for (int k = 0; k < 9; k++) Rm[k] = a*W[k] + b*W2[k];
}
/* ξ = log(I + Rm, p) (lie.log_se3); 1 if the rotation is near π */
static int log_se3(const double* Rm, const double* p, double* xi) {
  double ax[3] = {0.5*(Rm[7]-Rm[5]), 0.5*(Rm[2]-Rm[6]), 0.5*(Rm[3]-Rm[1])};
  double s = sqrt(ax[0]*ax[0] + ax[1]*ax[1] + ax[2]*ax[2]);
  double th = atan2(s, 1.0 + 0.5*(Rm[0] + Rm[4] + Rm[8])), k, beta, Wp[3], WWp[3];
  if (th > 3.0) return 1;
  if (th < 1e-2) { double t2 = th*th; k = 1.0 + t2/6.0 + 7.0*t2*t2/360.0; beta = 1.0/12.0 + t2/720.0 + t2*t2/30240.0; }
  else { k = th/s; beta = (1.0 - 0.5*th/tan(0.5*th))/(th*th); }
  for (int r = 0; r < 3; r++) xi[r] = k*ax[r];
  cross3(xi, p, Wp); cross3(xi, Wp, WWp);
  for (int r = 0; r < 3; r++) xi[3+r] = p[r] - 0.5*Wp[r] + beta*WWp[r];
  return 0;
}
/* ad_ξᵀ y = (−w×y_w − v×y_v, −w×y_v) */
static void adT(const double* xi, const double* y, double* o) {
  double a[3], b[3], d[3];
  cross3(xi, y, a); cross3(xi+3, y+3, b); cross3(xi, y+3, d);
  for (int r = 0; r < 3; r++) { o[r] = -a[r] - b[r]; o[3+r] = -d[r]; }
}
static void ad_mat(const double* xi, double s, double* A) { /* s [ad_ξ] */
  double W[9], V[9];
  hat(xi, W); hat(xi+3, V); memset(A, 0, 36*sizeof(double));
  put3(A, 0, 0, W, s); put3(A, 3, 3, W, s); put3(A, 3, 0, V, s);
}
static int n_terms(const Ctx* c) { /* lie.n_series_terms over all bodies */
  double m = 0;
  for (ll i = 0; i < c->n; i++) for (int r = 0; r < 3; r++) { double a = fabs(WK(i)[51+r]); if (a > m) m = a; }
  double th = m*sqrt(3.0) + 1e-300;
  if (!(th < 1.5)) return 12; /* (also a NaN: casting it to int below is undefined) */
  int k = (int)ceil(log(1e-18)/(2.0*log(th/(2*M_PI))));
  return k < 1 ? 1 : (k > 12 ? 12 : k);
}
/* [Ad_{T^{-1}}] = [[Rᵀ, 0], [−Rᵀp̂, Rᵀ]] */
static void adinv(const double* R, const double* p, double* A) {
  double Rt[9], P[9], M[9];
  for (int r = 0; r < 3; r++) for (int k = 0; k < 3; k++) Rt[3*r+k] = R[3*k+r];
  hat(p, P); mm3(Rt, P, M); memset(A, 0, 36*sizeof(double));
  put3(A, 0, 0, Rt, 1.0); put3(A, 3, 3, Rt, 1.0); put3(A, 3, 0, M, -1.0);
}
static void transpose6(const double* A, double* o) {
  for (int r = 0; r < 6; r++) for (int k = 0; k < 6; k++) o[6*k+r] = A[6*r+k];
}
/* world twists Sw = (R S_w, p × R S_w + R S_v) at frames (R, p) stored at offsets oR, op, into oS */
static void twists(const Ctx* c, int oR, int op, int oS) {
  for (ll i = 0; i < c->n; i++) {
    double* w = WK(i); double t[3];
    mv3(w+oR, BD(i)+12, w+oS); cross3(w+op, w+oS, t); mv3(w+oR, BD(i)+15, w+oS+3);
    for (int r = 0; r < 3; r++) w[oS+3+r] += t[r];
  }
}
/* Σ_i J_iᵀ w_i for world impulses w_i at offset ow (subtree sums into W), twists at oS */
static void project(const Ctx* c, int ow, int oS, double* out) {
  for (ll i = 0; i < c->n; i++) memcpy(WK(i)+63, WK(i)+ow, 6*sizeof(double));
  for (ll i = c->n - 1; i >= 0; i--) if (c->par[i] >= 0) for (int r = 0; r < 6; r++) WK(c->par[i])[63+r] += WK(i)[63+r];
  for (ll i = 0; i < c->n; i++) out[i] = dot6(WK(i)+oS, WK(i)+63);
}
/* gravity wrenches (−x_c × m g, −m g) at frames (oR, op) into offset o */
static void gravity(const Ctx* c, int oR, int op, int o) {
  for (ll i = 0; i < c->n; i++) {
    double xc[3], mg[3], t[3]; const double* b = BD(i); double* w = WK(i);
    mv3(w+oR, b+55, xc);
    for (int r = 0; r < 3; r++) { xc[r] += w[op+r]; mg[r] = b[54]*c->dp[3+r]; }
    cross3(xc, mg, t);
    for (int r = 0; r < 3; r++) { w[o+r] = -t[r]; w[o+3+r] = -mg[r]; }
  }
}
/* T_{λ(i),i} = X_i exp([S_i] q_i) as (R, p) into o[0..11] */
static void local_transform(const Ctx* c, ll i, double qi, double* o) {
  const double* b = BD(i); double ws[3], sv[3], E[9];
  for (int r = 0; r < 3; r++) { ws[r] = b[12+r]*qi; sv[r] = b[15+r]*qi; }
  exp_m(ws, E); E[0] += 1; E[4] += 1; E[8] += 1;
  mm3(b, E, o); mv3(b, sv, o+9);
  for (int r = 0; r < 3; r++) o[9+r] += b[9+r];
}
static void fk(const Ctx* c, const double* q) { /* eq. 18 */
  for (ll i = 0; i < c->n; i++) {
    double* w = WK(i); double L[12];
    local_transform(c, i, q[i], L);
    if (c->par[i] < 0) memcpy(w, L, sizeof L);
    else {
      const double* a = WK(c->par[i]);
      mm3(a, L, w); mv3(a, L+9, w+9);
      for (int r = 0; r < 3; r++) w[9+r] += a[9+r];
    }
  }
  twists(c, 0, 9, 12);
  for (ll i = 0; i < c->n; i++) cross3(WK(i)+12, WK(i)+15, WK(i)+18);
}
/* DRNEA residual f(q1) (eqs. 19, 21) with the q1-independent part cst; also frames at q1 and world momenta */
static int residual(const Ctx* c, const double* q0, const double* q1, const double* cst, double* f) {
  double dt = c->dp[0];
  for (ll i = 0; i < c->n; i++) {
    const double* b = BD(i); double* w = WK(i);
    double dq = q1[i] - q0[i], ws[3], Rm[9], t[3], RmR[9], tw[3], Rb[9], pb[3];
    for (int r = 0; r < 3; r++) ws[r] = w[12+r]*dq;
    exp_m(ws, Rm);
    if (b[59] != 0) { mv3(Rm, w+18, t); for (int r = 0; r < 3; r++) t[r] = -t[r]; }
    else for (int r = 0; r < 3; r++) t[r] = w[15+r]*dq;
    if (c->par[i] >= 0) {
      const double* a = WK(c->par[i]); double P[9], pt[3];
      mm3(a+39, Rm, P); mv3(a+39, t, pt);
      for (int k = 0; k < 9; k++) Rm[k] = a[39+k] + Rm[k] + P[k];
      for (int r = 0; r < 3; r++) t[r] = a[48+r] + t[r] + pt[r];
    }
    memcpy(w+39, Rm, sizeof Rm); memcpy(w+48, t, sizeof t);
    mm3(Rm, w, RmR); mv3(Rm, w+9, tw);
    for (int r = 0; r < 3; r++) tw[r] += t[r];
    mtm3(w, RmR, Rb); mtv3(w, tw, pb);
    if (log_se3(Rb, pb, w+51)) return 1;
    memcpy(w+178, Rb, sizeof Rb); memcpy(w+187, pb, sizeof pb);  /* ΔT_i − (I, 0), for Alg. 4 */
    for (int k = 0; k < 9; k++) w[21+k] = w[k] + RmR[k];
    for (int r = 0; r < 3; r++) w[30+r] = w[9+r] + tw[r];
  }
  int K = n_terms(c);
  for (ll i = 0; i < c->n; i++) {  /* μ = dlogᵀ_ξ Gξ / Δt (eq. 21b), Horner in (ad_ξᵀ)², then to the world frame */
    double* w = WK(i); const double* xi = w+51; double y[6], acc[6], t1[6], t2[6], mu[6], Rw[3], Rv[3], pc[3];
    mv6(BD(i)+18, xi, y);
    for (int r = 0; r < 6; r++) acc[r] = c->dp[6+K]*y[r];
    for (int k = K - 1; k >= 0; k--) {
      adT(xi, acc, t1); adT(xi, t1, t2);
      for (int r = 0; r < 6; r++) acc[r] = c->dp[6+k]*y[r] + t2[r];
    }
    adT(xi, y, t1);
    for (int r = 0; r < 6; r++) mu[r] = (acc[r] - 0.5*t1[r])/dt;
    mv3(w, mu, Rw); mv3(w, mu+3, Rv); cross3(w+9, Rv, pc);
    for (int r = 0; r < 3; r++) { w[57+r] = Rw[r] + pc[r]; w[60+r] = Rv[r]; }
  }
  project(c, 57, 12, f);
  for (ll i = 0; i < c->n; i++) f[i] = f[i] + cst[i] + BD(i)[58]*q1[i];
  return 0;
}
/* articulated inertias at q_k (world frame): Iw = Ad_{T⁻¹}ᵀ G Ad_{T⁻¹}, U = IA S, D = Sᵀ U */
static void aba_setup(const Ctx* c) {
  for (ll i = 0; i < c->n; i++) {  /* Ad_{T⁻¹}ᵀ G Ad_{T⁻¹} by blocks: [[R I_c Rᵀ − m ĉĉ, m ĉ], [−m ĉ, m 1]], c = p + R c_b */
    double* w = WK(i); const double* b = BD(i); double m = b[54], cw[3], C[9], CC[9], RI[9], Icw[9];
    mv3(w, b+55, cw);
    for (int r = 0; r < 3; r++) cw[r] += w[9+r];
    hat(cw, C); mm3(C, C, CC); mm3(w, b+60, RI);
    for (int r = 0; r < 3; r++) for (int k = 0; k < 3; k++)
      Icw[3*r+k] = RI[3*r]*w[3*k] + RI[3*r+1]*w[3*k+1] + RI[3*r+2]*w[3*k+2];
    double* I = w+69; memset(I, 0, 36*sizeof(double));
    for (int r = 0; r < 3; r++) for (int k = 0; k < 3; k++) {
      I[6*r+k] = Icw[3*r+k] - m*CC[3*r+k]; I[6*r+3+k] = m*C[3*r+k]; I[6*(3+r)+k] = -m*C[3*r+k];
    }
    for (int r = 3; r < 6; r++) I[7*r] = m;
    memcpy(w+105, w+69, 36*sizeof(double));
  }
  for (ll i = c->n - 1; i >= 0; i--) {
    double* w = WK(i);
    mv6(w+105, w+12, w+141); w[147] = dot6(w+12, w+141);
    if (c->par[i] >= 0) { double* IA = WK(c->par[i])+105;
      for (int r = 0; r < 6; r++) for (int k = 0; k < 6; k++) IA[6*r+k] += w[105+6*r+k] - w[141+r]*w[141+k]/w[147]; }
  }
}
/* ABA: qdd = M⁻¹(tau − C(q, qd) qd − g(q)); qd == 0 for none, grav 0/1 */
static void aba_solve(const Ctx* c, const double* qd, const double* tau, int grav, double* qdd) {
  for (ll i = 0; i < c->n; i++) {
    double* w = WK(i);
    memset(w+148, 0, 12*sizeof(double)); memset(w+160, 0, 6*sizeof(double));
    if (!qd) continue;
    double sq[6], t[6], a[3], b[3];
    if (c->par[i] >= 0) memcpy(w+160, WK(c->par[i])+160, 6*sizeof(double));
    for (int r = 0; r < 6; r++) { sq[r] = w[12+r]*qd[i]; w[160+r] += sq[r]; }
    cross3(w+160, sq, w+148); cross3(w+163, sq, a); cross3(w+160, sq+3, b);   /* c = v ×m S q̇ */
    for (int r = 0; r < 3; r++) w[151+r] = a[r] + b[r];
    mv6(w+69, w+160, t); cross3(w+160, t, a); cross3(w+163, t+3, b);             /* pA = v ×* I v */
    for (int r = 0; r < 3; r++) w[154+r] = a[r] + b[r];
    cross3(w+160, t+3, w+157);
  }
  for (ll i = c->n - 1; i >= 0; i--) {
    double* w = WK(i); double Ic[6] = {0, 0, 0, 0, 0, 0}, uc = 0.0;
    w[172] = tau[i] - dot6(w+12, w+154);
    if (c->par[i] < 0) continue;
    if (qd) { mv6(w+105, w+148, Ic); uc = dot6(w+141, w+148); }  /* c = 0 without velocities (RIQN, IG2) */
    double* pp = WK(c->par[i])+154;
    for (int r = 0; r < 6; r++) pp[r] += w[154+r] + Ic[r] - w[141+r]*uc/w[147] + w[141+r]*w[172]/w[147];
  }
  for (ll i = 0; i < c->n; i++) {
    double* w = WK(i); double a[6] = {0, 0, 0, 0, 0, 0};
    if (c->par[i] >= 0) memcpy(a, WK(c->par[i])+166, sizeof a);
    else if (grav) for (int r = 0; r < 3; r++) a[3+r] = -c->dp[3+r];
    for (int r = 0; r < 6; r++) a[r] += w[148+r];
    qdd[i] = (w[172] - dot6(w+141, a))/w[147];
    for (int r = 0; r < 6; r++) w[166+r] = a[r] + w[12+r]*qdd[i];
  }
}
/* exact ∂f/∂q_{k+1} (Alg. 4, BodyTree.momentum_jacobian) into J (row-major), Nw scratch n×36 */
static void jacobian(const Ctx* c, double* J, double* Nw) {
  ll n = c->n; int K = n_terms(c); double dt = c->dp[0];
  twists(c, 21, 30, 33);
  for (ll i = 0; i < n; i++) {
    double* w = WK(i); const double* xi = w+51; const double* G = BD(i)+18;
    double At[36], Ad[36], bb[6], y[6], D[36], T[36], Bm[36], Y[9], F[9], A2[36], acc[36], N[36], A0[36], A1[36];
    ad_mat(xi, 1.0, Ad); transpose6(Ad, At); mv6(G, xi, bb);
    double cf[25]; memset(cf, 0, sizeof cf);
    for (int k = 0; k <= K; k++) cf[2*k] = c->dp[6+k];
    cf[1] = -0.5;
    for (int r = 0; r < 6; r++) y[r] = cf[2*K]*bb[r];
    for (int k = 0; k < 36; k++) D[k] = cf[2*K]*G[k];
    for (int j = 2*K - 1; j >= 0; j--) {  /* D_j = c_j G + ad_ξᵀ D_{j+1} + B(y_{j+1}); y_j = c_j Gξ + ad_ξᵀ y_{j+1} */
      mm6(At, D, T); hat(y, Y); hat(y+3, F); memset(Bm, 0, sizeof Bm);
      put3(Bm, 0, 0, Y, 1.0); put3(Bm, 0, 3, F, 1.0); put3(Bm, 3, 0, F, 1.0);
      for (int k = 0; k < 36; k++) D[k] = cf[j]*G[k] + T[k] + Bm[k];
      mv6(At, y, T); for (int r = 0; r < 6; r++) y[r] = cf[j]*bb[r] + T[r];
    }
    ad_mat(xi, -1.0, Ad); mm6(Ad, Ad, A2);  /* dlog_{−ξ} */
    memset(acc, 0, sizeof acc); for (int r = 0; r < 6; r++) acc[7*r] = c->dp[6+K];
    for (int k = K - 1; k >= 0; k--) {
      mm6(A2, acc, T); memcpy(acc, T, sizeof T);
      for (int r = 0; r < 6; r++) acc[7*r] += c->dp[6+k];
    }
    for (int k = 0; k < 36; k++) acc[k] -= 0.5*Ad[k];
    mm6(D, acc, N); for (int k = 0; k < 36; k++) N[k] /= dt;
    adinv(w, w+9, A0); transpose6(A0, T); adinv(w+21, w+30, A1);
    mm6(T, N, acc); mm6(acc, A1, Nw + 36*i);
  }
  for (ll i = n - 1; i >= 0; i--) if (c->par[i] >= 0) for (int k = 0; k < 36; k++) Nw[36*c->par[i]+k] += Nw[36*i+k];
  memset(J, 0, n*n*sizeof(double));  /* bodies on different branches do not couple */
  for (ll l = 0; l < n; l++) {  /* J[j,l], j ancestor of l or l itself: Sw_jᵀ C_l Sw1_l */
    double y[6]; mv6(Nw + 36*l, WK(l)+33, y);
    for (ll j = l; j >= 0; j = c->par[j]) J[n*j+l] = dot6(WK(j)+12, y);
  }
  for (ll j = 0; j < n; j++) {  /* J[j,l], l a strict ancestor of j: Sw_jᵀ C_j Sw1_l */
    double z[6], Ct[36]; transpose6(Nw + 36*j, Ct); mv6(Ct, WK(j)+12, z);
    for (ll l = c->par[j]; l >= 0; l = c->par[l]) J[n*j+l] = dot6(z, WK(l)+33);
  }
  for (ll j = 0; j < n; j++) J[n*j+j] += BD(j)[58];
}
/* ad_ξ y = (w × y_w, v × y_w + w × y_v) */
static void ad_apply(const double* xi, const double* y, double* o) {
  double a[3], b[3], d[3];
  cross3(xi, y, a); cross3(xi+3, y, b); cross3(xi, y+3, d);
  for (int r = 0; r < 3; r++) { o[r] = a[r]; o[3+r] = b[r] + d[r]; }
}
/* Lee2016, Alg. 4 as printed (drnea.drnea_derivative_recursive): column j of ∂f/∂q_{k+1} by one forward
   pass (lines 3-5: ∂ΔT_i, ∂ξ_i = dlog_ξ(∂ΔT ΔT⁻¹)) and one backward pass (lines 8-10: ∂μ_i by the tangent of
   the Horner evaluation of dlogᵀ_ξ Gξ, ∂F_i, S_iᵀ ∂F_i); O(n) per column, O(n²) in all. Both passes run
   over every body as printed (lines 2 and 7, i = 1 → n), zero tangents outside j's subtree included; the
   shortcuts are what our subtree Jacobian (jacobian()) takes. Needs the residual at q1 first (ξ_i, ΔT_i).
   Scratch sc: 48 doubles per body. */
static void jacobian_alg4(const Ctx* c, const double* q0, const double* q1, double* J, double* sc) {
  ll n = c->n; int K = n_terms(c); double dt = c->dp[0];
  for (ll i = 0; i < n; i++) { local_transform(c, i, q0[i], sc + 48*i); local_transform(c, i, q1[i], sc + 48*i + 12); }
  for (ll j = 0; j < n; j++) {
    for (ll i = 0; i < n; i++) {
      double *s = sc + 48*i, *dR = s+24, *dp = s+33, *w = WK(i); const double* xi = w+51; const double* b = BD(i);
      double dRn[9], DR[9], M[9], t[3], z[6], dxi[6], acc[6], dacc[6], y[6], dy[6], t1[6], dt1[6], t2[6], e[6];
      ll lam = c->par[i];
      memset(dRn, 0, sizeof dRn); memset(t, 0, sizeof t);
      if (lam >= 0) {  /* line 4: T_{λ,i}^{k −1} ∂ΔT_λ T_{λ,i}^{k+1} */
        const double* P = sc + 48*lam; double X[9], u[3];
        mm3(P+24, s+12, X); mv3(P+24, s+21, u);
        for (int r = 0; r < 3; r++) u[r] += P[33+r];
        mtm3(s, X, dRn); mtv3(s, u, t);
      }
      for (int k = 0; k < 9; k++) DR[k] = w[178+k]; DR[0] += 1; DR[4] += 1; DR[8] += 1;
      if (i == j) {  /* + ΔT_i [S_i] */
        double W[9], P[9], v[3]; hat(b+12, W); mm3(DR, W, P); mv3(DR, b+15, v);
        for (int k = 0; k < 9; k++) dRn[k] += P[k];
        for (int r = 0; r < 3; r++) t[r] += v[r];
      }
      memcpy(dR, dRn, sizeof dRn); memcpy(dp, t, sizeof t);
      /* line 5: ζ = (∂ΔT ΔT⁻¹)^∨ = (vee(∂R ΔRᵀ), ∂p − ∂R ΔRᵀ Δp); ∂ξ = dlog_ξ ζ (Horner in ad_ξ²) */
      for (int r = 0; r < 3; r++) for (int k = 0; k < 3; k++)
        M[3*r+k] = dR[3*r]*DR[3*k] + dR[3*r+1]*DR[3*k+1] + dR[3*r+2]*DR[3*k+2];
      z[0] = 0.5*(M[7]-M[5]); z[1] = 0.5*(M[2]-M[6]); z[2] = 0.5*(M[3]-M[1]);
      mv3(M, w+187, e);
      for (int r = 0; r < 3; r++) z[3+r] = dp[r] - e[r];
      for (int r = 0; r < 6; r++) acc[r] = c->dp[6+K]*z[r];
      for (int k = K - 1; k >= 0; k--) {
        ad_apply(xi, acc, t1); ad_apply(xi, t1, t2);
        for (int r = 0; r < 6; r++) acc[r] = c->dp[6+k]*z[r] + t2[r];
      }
      ad_apply(xi, z, t1);
      for (int r = 0; r < 6; r++) dxi[r] = acc[r] - 0.5*t1[r];
      /* line 8: ∂μ = (∂dlogᵀ_ξ) Gξ/Δt + dlogᵀ_ξ G ∂ξ/Δt, the tangent of the Horner evaluation of μ */
      mv6(b+18, xi, y); mv6(b+18, dxi, dy);
      for (int r = 0; r < 6; r++) { acc[r] = c->dp[6+K]*y[r]; dacc[r] = c->dp[6+K]*dy[r]; }
      for (int k = K - 1; k >= 0; k--) {
        adT(xi, acc, t1); adT(xi, dacc, dt1); adT(dxi, acc, e);
        for (int r = 0; r < 6; r++) dt1[r] += e[r];
        adT(xi, t1, t2); adT(xi, dt1, dacc); adT(dxi, t1, e);
        for (int r = 0; r < 6; r++) { dacc[r] = c->dp[6+k]*dy[r] + dacc[r] + e[r]; acc[r] = c->dp[6+k]*y[r] + t2[r]; }
      }
      adT(dxi, y, t1); adT(xi, dy, t2);
      for (int r = 0; r < 6; r++) s[36+r] = (dacc[r] - 0.5*(t1[r] + t2[r]))/dt;
    }
    for (ll i = n - 1; i >= 0; i--) {  /* lines 9-10: ∂F_i = ∂μ_i + Σ_c Ad_{T_{i,c}^{k −1}}ᵀ ∂F_c, column j */
      double *s = sc + 48*i, *F = s+36;
      J[n*i+j] = dot6(BD(i)+12, F) + (i == j ? BD(i)[58] : 0.0);
      if (c->par[i] < 0) continue;
      double *Fp = sc + 48*c->par[i] + 36, a[3], v[3], pv[3];
      mv3(s, F, a); mv3(s, F+3, v); cross3(s+9, v, pv);
      for (int r = 0; r < 3; r++) { Fp[r] += a[r] + pv[r]; Fp[3+r] += v[r]; }
    }
  }
}
static int lu_solve(double* A, ll n, ll* piv, double* b) { /* row-major LU, partial pivoting; b <- A⁻¹ b */
  for (ll k = 0; k < n; k++) {
    ll p = k; double amax = fabs(A[n*k+k]);
    for (ll i = k + 1; i < n; i++) if (fabs(A[n*i+k]) > amax) { amax = fabs(A[n*i+k]); p = i; }
    if (amax == 0.0) return 1;
    piv[k] = p;
    if (p != k) { for (ll j = 0; j < n; j++) { double t = A[n*k+j]; A[n*k+j] = A[n*p+j]; A[n*p+j] = t; }
                  double t = b[k]; b[k] = b[p]; b[p] = t; }
    for (ll i = k + 1; i < n; i++) {
      double l = A[n*i+k] / A[n*k+k];
      if (l != 0.0) { for (ll j = k + 1; j < n; j++) A[n*i+j] -= l*A[n*k+j]; b[i] -= l*b[k]; }
    }
  }
  for (ll k = n - 1; k >= 0; k--) {
    double s = b[k];
    for (ll j = k + 1; j < n; j++) s -= A[n*k+j]*b[j];
    b[k] = s/A[n*k+k];
  }
  return 0;
}
static double amax(const double* a, ll n) { /* ∞-norm; NaN propagates like numpy's max */
  double m = 0;
  for (ll i = 0; i < n; i++) { double t = fabs(a[i]); if (!(t <= m)) m = t; }
  return m;
}

/* Every update is line-searched on |f|∞ (Armijo backtracking): the full update unless it takes a body's relative
   rotation out of the log map's domain or fails to decrease the residual; halvings down to 2^-LS_MAX. An update
   below √eps·(1 + |q|∞) is taken as it is: the residual is then at its rounding noise, where no decrease can be
   asked for. An iteration that reduces |f|∞ less than STAGNATION-fold over 3 updates (above that noise) gives up:
   a linear rate worse than 0.79 cannot reach tol within max_iterations, and a damped Newton that slows down like
   this is sliding into a local minimum of |f|, not towards a root. */
#define LS_MAX 20
#define LS_SUFFICIENT 1e-4
#define NOISE_UPDATE 1.5e-8
#define STAGNATION 2.0
/* Substeps of the last fallback: Δt/2 … Δt/2^MAX_DEPTH. */
#define MAX_DEPTH 10

/* Return codes (drnea_c.py). */
enum { LT_OK, LT_NOT_CONVERGED, LT_LOG_NEAR_PI, LT_SINGULAR, LT_LINE_SEARCH, LT_STAGNATED, LT_ALIASED };

/* Root of f(q1) from the guess in q1 by RIQN (method 0) or Newton (1: subtree Jacobian, 2: Alg. 4). f holds the
   residual at q1 on entry and on exit; the work arrays hold the frames at q1. info = (residual, iterations). */
static int ltvi_iterate(const Ctx* c, int method, const double* q0, double* q1, const double* cst, double scale,
                        double* f, double* info, double* J, double* Nw, double* dq, double* qt, double* ft, ll* iwork) {
  ll n = c->n; const double *dp = c->dp; double dt = dp[0];
  double rnorm = amax(f, n), prev = INFINITY, hist[3] = {INFINITY, INFINITY, INFINITY}; ll it = 0;
  int code = LT_NOT_CONVERGED;
  for (it = 0; it <= c->max_it; it++) {
    if (!isfinite(rnorm) || it == c->max_it) break;
    if (rnorm <= dp[1]*scale) { code = LT_OK; break; }
    if (method == 0) { aba_solve(c, 0, f, 0, dq); for (ll i = 0; i < n; i++) dq[i] *= dt; }
    else { if (method == 2) jacobian_alg4(c, q0, q1, J, Nw); else jacobian(c, J, Nw);
           memcpy(dq, f, n*sizeof(double)); if (lu_solve(J, n, iwork, dq)) { code = LT_SINGULAR; break; } }
    double dqn = amax(dq, n), alpha = 1.0, fn = INFINITY; int ok = 0;
    const double noise = NOISE_UPDATE*(1.0 + amax(q1, n));
    for (int ls = 0; ls <= LS_MAX; ls++, alpha *= 0.5) {
      for (ll i = 0; i < n; i++) qt[i] = q1[i] - alpha*dq[i];
      if (residual(c, q0, qt, cst, ft)) continue;  /* a relative rotation near π: shorter */
      fn = amax(ft, n);
      if (fn <= (1.0 - LS_SUFFICIENT*alpha)*rnorm || (alpha*dqn <= noise && isfinite(fn))) { ok = 1; break; }
    }
    if (!ok) { code = LT_LINE_SEARCH; break; }
    memcpy(q1, qt, n*sizeof(double)); memcpy(f, ft, n*sizeof(double));
    const double r3 = hist[(it + 1) % 3];  /* the residual 3 updates before the new one */
    hist[it % 3] = rnorm;
    rnorm = fn; dqn *= alpha;
    double qn = 1.0 + amax(q1, n);
    /* f at its rounding floor: accept the update size; for Newton also an update that no longer contracts
       once it is below √eps (quadratic convergence has ended in rounding noise: long chains, N ≳ 400) */
    int stalled = method != 0 && dqn >= 0.5*prev && dqn <= NOISE_UPDATE*qn;
    prev = dqn;
    if (dqn <= dp[2]*qn || stalled) { it++; code = LT_OK; break; }
    if (STAGNATION*rnorm > r3 && dqn > noise) { it++; code = LT_STAGNATED; break; }
  }
  info[0] = rnorm; info[1] = (double)it;
  if (code == LT_OK && !isfinite(rnorm)) code = LT_NOT_CONVERGED;
  return code;
}

/* One attempt at one step of c->dp[0] with `method`: guess (ig 0 given/1/2/3 = IG1..IG3), iterations, p_{k+1}.
   A guess outside the log map's domain (a relative rotation near π) is pulled towards q_k (IG1, always inside). */
static int ltvi_attempt(const Ctx* c, int method, int ig, const double* x, const double* tau, const double* guess,
                        double* xn, double* info, ll* iwork) {
  ll n = c->n; double dt = c->dp[0]; double* work = c->w;
  double *cst = work + n*WORK, *f = cst + n, *v = f + n, *dq = v + n, *g = dq + n, *J = g + 2*n, *Nw = J + n*n;
  double *qt = Nw + 48*n, *ft = qt + n;
  const double *q0 = x, *p0 = x + n; double *q1 = xn, *p1 = xn + n;
  fk(c, q0); aba_setup(c); gravity(c, 0, 9, 57); project(c, 57, 12, g);
  for (ll i = 0; i < n; i++) cst[i] = 0.5*dt*g[i] - p0[i] - dt*tau[i] - BD(i)[58]*q0[i];
  if (ig == 0) memcpy(q1, guess, n*sizeof(double));
  else if (ig == 1) memcpy(q1, q0, n*sizeof(double));
  else {  /* IG2: q + Δt M⁻¹p; IG3: semi-implicit Euler with q̈ = ABA(q, q̇, τ − c q̇) (§3.3) */
    aba_solve(c, 0, p0, 0, v);
    if (ig == 2) for (ll i = 0; i < n; i++) q1[i] = q0[i] + dt*v[i];
    else {
      for (ll i = 0; i < n; i++) dq[i] = tau[i] - BD(i)[58]*v[i];
      aba_solve(c, v, dq, 1, f);
      for (ll i = 0; i < n; i++) q1[i] = q0[i] + dt*(v[i] + dt*f[i]);
    }
    /* Beside a singularity of M(q_k) the predicted turn can be huge where the root is not (icub's neck at q = 0):
       a guess no accepted root can be near (a turn beyond max_rotation, NaN) is replaced by q_k (IG1), as in the
       midpoint VI's driver (LinearTimeVI.initial_guess alike). */
    const ll* rot_ = c->par + n + 2;
    for (ll i = 0; i < n; i++)
      if ((rot_[i] && !(fabs(q1[i] - q0[i]) <= c->dp[19])) || !isfinite(q1[i])) {
        memcpy(q1, q0, n*sizeof(double));
        break;
      }
  }
  int tries = 0;
  while (residual(c, q0, q1, cst, f)) {
    if (++tries > LS_MAX) { info[0] = INFINITY; info[1] = 0.0; return LT_LOG_NEAR_PI; }
    for (ll i = 0; i < n; i++) q1[i] = q0[i] + 0.5*(q1[i] - q0[i]);
  }
  /* the residual is a momentum: measured against p₁ + |p_k|∞, p₁ = dp[20] (NewtonSettings.momentum_scale) */
  int code = ltvi_iterate(c, method, q0, q1, cst, c->dp[20] + amax(p0, n), f, info, J, Nw, dq, qt, ft, iwork);
  if (code) return code;
  /* with the fallback chain, a root with a joint turning more than max_rotation (dp[19]) is an aliased one
     (NewtonSettings) for the chain to avoid; without it the caller refuses the step (UntrustedStepError) */
  const ll* rot = c->par + n + 2;
  if (c->par[n])
    for (ll i = 0; i < n; i++) if (rot[i] && !(fabs(q1[i] - q0[i]) <= c->dp[19])) return LT_ALIASED;
  /* p_{k+1} = D₂L_d(q_k, q_{k+1}) = Σ J_i(q1)ᵀ (momenta − Δt/2 ∂P_i(T_i^{k+1})) */
  twists(c, 21, 30, 33); gravity(c, 21, 30, 69);
  for (ll i = 0; i < n; i++) for (int r = 0; r < 6; r++) WK(i)[69+r] = WK(i)[57+r] - 0.5*dt*WK(i)[69+r];
  project(c, 69, 33, p1);
  return LT_OK;
}

/* The step x -> xn over c->dp[0] by the fallback chain (ip[4+n] != 0): the configured method; if RIQN fails, Newton
   with the exact Jacobian at the same Δt (the same discrete map); if that fails too, two substeps of Δt/2, each by
   the same chain without the Newton stage, recursively down to Δt/2^MAX_DEPTH. fb = (first failure code, Newton's
   code (-1 not tried), substeps taken, finest division Δt/substep); info accumulates iterations over substeps. */
static int ltvi_chain(const Ctx* c, int depth, const double* x, const double* tau, const double* guess, double* xn,
                      double* info, double* fb, ll* iwork, int fallback) {
  ll n = c->n;
  int ig = guess ? 0 : (int)c->par[c->n + 1];  /* substeps (and calls without a guess): the configured rule */
  int code = ltvi_attempt(c, (int)c->method, ig, x, tau, guess, xn, info, iwork);
  if (code == LT_OK) { if (depth) fb[2] += 1.0; return code; }
  if (!fallback) return code;
  if (depth == 0) fb[0] = code;
  if (depth == 0 && c->method == 0) {
    code = ltvi_attempt(c, 1, ig, x, tau, guess, xn, info, iwork);
    fb[1] = code;
    if (code == LT_OK) return code;
  }
  if (depth == MAX_DEPTH) return code;
  double dph[6 + 13 + 2]; memcpy(dph, c->dp, sizeof dph); dph[0] = 0.5*c->dp[0];
  Ctx h = *c; h.dp = dph;
  double* mid = c->w + n*WORK + 6*n + n*n + 48*n + 3*n + 2*n*depth;
  double it = 0.0;
  code = ltvi_chain(&h, depth + 1, x, tau, 0, mid, info, fb, iwork, fallback);
  it += info[1];
  if (code) return code;
  code = ltvi_chain(&h, depth + 1, mid, tau, 0, xn, info, fb, iwork, fallback);
  info[1] += it;
  if (code) return code;
  fb[3] = fmax(fb[3], ldexp(1.0, depth + 1));
  return LT_OK;
}

/* One step. ip = (n, method 0 riqn/1 newton/2 newton with Alg. 4, guess 0 given/1/2/3 = IG1..IG3, max_it, parents[n],
   fallback, configured guess rule 1/2/3, rotational[n]); dp = (dt, tol, step_tol, gravity[3], C_even[13],
   max_rotation, p₁); x = (q, p); tau full;
   guess used when ip[2] == 0.
   xn = (q1, p1); info = (residual, iterations); fb (4, see ltvi_chain). Work: n*WORK + 6n + n² + 48n + 3n
   + 2n MAX_DEPTH doubles, iwork n. */
int ltvi_step(const ll* ip, const double* dp, const double* body, const double* x, const double* tau,
              const double* guess, double* xn, double* info, double* work, ll* iwork, double* fb) {
  Ctx cx = {ip[0], ip[1], ip[2], ip[3], ip + 4, dp, body, work};
  fb[0] = 0.0; fb[1] = -1.0; fb[2] = 0.0; fb[3] = 1.0;
  return ltvi_chain(&cx, 0, x, tau, ip[2] == 0 ? guess : 0, xn, info, fb, iwork, (int)ip[4 + ip[0]]);
}

/* N steps from x0 with full joint torques taus (N×n): X ((N+1)×2n), iterations per step, fb per step (N×4); on
   failure info = (residual, iterations, step index) and the step's return code. */
int ltvi_rollout(const ll* ip, const double* dp, const double* body, const double* taus, ll N,
                 double* X, double* iters, double* info, double* work, ll* iwork, double* fbs) {
  ll n = ip[0];
  for (ll k = 0; k < N; k++) {
    int code = ltvi_step(ip, dp, body, X + 2*n*k, taus + n*k, 0, X + 2*n*(k+1), info, work, iwork, fbs + 4*k);
    iters[k] = info[1];
    if (code) { info[2] = (double)k; return code; }
  }
  return 0;
}

/* ∂f/∂q_{k+1} alone (tests): method 2 by Alg. 4, else by subtree sums; 1 if the log map fails */
int ltvi_jacobian(const ll* ip, const double* dp, const double* body, const double* q0, const double* q1,
                  double* J, double* work) {
  Ctx cx = {ip[0], ip[1], ip[2], ip[3], ip + 4, dp, body, work}; const Ctx* c = &cx;
  ll n = c->n; double *cst = work + n*WORK, *f = cst + n, *Nw = f + 5*n + n*n;
  memset(cst, 0, n*sizeof(double));
  fk(c, q0);
  if (residual(c, q0, q1, cst, f)) return 1;
  if (c->method == 2) jacobian_alg4(c, q0, q1, J, Nw); else jacobian(c, J, Nw);
  return 0;
}

/* ABA alone (tests): qdd = M(q)⁻¹(tau − C q̇ − g) with gravity when grav != 0 */
int ltvi_aba(const ll* ip, const double* dp, const double* body, const double* q, const double* qd,
             const double* tau, ll grav, double* qdd, double* work) {
  Ctx cx = {ip[0], ip[1], ip[2], ip[3], ip + 4, dp, body, work};
  fk(&cx, q); aba_setup(&cx); aba_solve(&cx, qd, tau, (int)grav, qdd);
  return 0;
}
