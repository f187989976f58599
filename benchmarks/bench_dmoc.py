"""DMOC on Lie groups (Jimenez2013, Alg. 5.2) side by side with the usual alternative, on the §6.1 vehicle.

For every rest-to-rest maneuver of config/vehicle_uuv.yaml (N = 32, T = 10 s), in interleaved rounds in this
process (CPU time, median and min over rounds, machine load reported):
  - DMOC: Newton on the discrete necessary conditions (31), split inputs u_k^± (the paper's) and held inputs;
  - IPOPT on the identical discrete problem (planning.dmoc_nlp), the cost check;
  - the usual alternative: direct transcription with classical RK4 on (p, q, ω, v), q a unit quaternion that
    nobody renormalizes, piecewise-constant thrust, cost (h/2)Σ‖u_k‖², solved by IPOPT (CasADi, exact Hessian).
Reported per method: iterations, CPU ms, cost, the largest | |q_k| − 1 | (or the rotation's distance from SO(3)),
and the terminal pose error when the plan's inputs drive the continuous dynamics (scipy DOP853 at 1e-12).
Energy behaviour: from the forward_yaw plan's fastest state, drag and thrust off, 10⁴ steps at the plan's
Δt by each method's integrator. Also the L1 problem of §6.2 (Fig. 3) and plots of both.

The scan: random rest-to-rest maneuvers from the origin (translation uniform in direction and in length
up to 2 m, rotation up to 60° about a uniformly random axis; N = 32, T = 10 s, Cayley), split and held inputs,
on the bundled vehicle and on ``OTHER_BODY`` (a body no test or config was tuned on: full inertia tensor, full drag
matrix, five thrusters off the centre and off the axes, one unactuated wrench direction that is no body axis).
Per body and mode: the share solved by Newton from the geodesic guess, by Newton from the solution at N/2, by Newton
through the relaxed-body continuation (both ``planning.dmoc_continuation``), by IPOPT (fallback, or the recovery
from a saddle), the share whose answer is a verified minimum (``planning.dmoc_check``), the saddles rejected on the
way, how the answer's cost compares with IPOPT's from the same geodesic (both are local minima; which one a method
reaches depends on its path), and the CPU time.

    .venv/bin/python benchmarks/bench_dmoc.py      # 5 rounds; writes results/dmoc.{md,png}, dmoc_uuv.png, l1_so3.png
    .venv/bin/python benchmarks/bench_dmoc.py --rounds 1 --maneuvers 2 --coast 200   # quick look
    .venv/bin/python benchmarks/bench_dmoc.py --scan 25 --only-scan                   # the scan: results/dmoc_scan.md
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

# Before numpy loads OpenBLAS: the matrices are small, and CPU time (process_time) counts the spinning of idle
# BLAS threads on a loaded machine (a check timed 0.5-1.3 s with threads, 0.09 s with one).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

from vi_control.integrators import make_integrator
from vi_control.mechanics.groups import SE3, SO3, quaternion_from_rotation, rotation_from_quaternion
from vi_control.model.rigid_body import RigidBodyModel, load_rigid_body
from vi_control.planning.dmoc import DMOCProblem, geodesic_guess, solve_dmoc
from vi_control.planning.dmoc_nlp import solve_ipopt
from vi_control.planning.vehicle import maneuver_settings, maneuvers

RESULTS = Path(__file__).resolve().parent / "results"


# ---- continuous dynamics (the peer's model and the replay reference) ---------------------------------------
def _quat_mul(a, b):
    """Hamilton product of (x, y, z, w) quaternions (numpy or CasADi)."""
    sym = isinstance(a, (ca.SX, ca.DM)) or isinstance(b, (ca.SX, ca.DM))
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    if sym:
        return ca.vertcat(aw * bv + bw * av + ca.cross(av, bv), aw * bw - ca.dot(av, bv))
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - av @ bv]])


def vehicle_rhs(body, s, u):
    """ṡ for s = (p, q, ω, v): ṗ = R(q)v, q̇ = ½q⊗(ω, 0), ν̇ = ad_ξᵀν + Hξ + Bu with ν = 𝕀ξ (Kirchhoff)."""
    sym = isinstance(s, ca.SX)
    q, xi = s[3:7], s[7:13]
    Iinv = np.linalg.inv(body.spatial_inertia)
    I, H, B = body.spatial_inertia, body.drag_matrix, body.input_matrix
    if sym:
        I, H, B, Iinv = (ca.DM(a) for a in (I, H, B, Iinv))
    R = rotation_from_quaternion(q) if sym else rotation_from_quaternion(q, normalize_tol=None)
    nu = I @ xi
    adT = SE3.ad(xi).T
    dxi = Iinv @ (adT @ nu + H @ xi + B @ u)
    zero = ca.SX(0) if sym else np.zeros(1)
    dq = 0.5 * _quat_mul(q, ca.vertcat(xi[:3], zero) if sym else np.concatenate([xi[:3], zero]))
    parts = [R @ xi[3:], dq, dxi]
    return ca.vertcat(*parts) if sym else np.concatenate(parts)


def _state(g: np.ndarray, xi: np.ndarray | None = None) -> np.ndarray:
    return np.concatenate([g[:3, 3], quaternion_from_rotation(g[:3, :3]), np.zeros(6) if xi is None else xi])


def rk4_transcription(body, prob: DMOCProblem, tol: float = 1e-10) -> dict:
    """Direct transcription, classical RK4 per interval, unit quaternion (not renormalized), IPOPT."""
    t_build = time.process_time()
    N, h, m = prob.horizon, prob.dt, body.input_matrix.shape[1]
    S = ca.SX.sym("s", 13, N)
    U = ca.SX.sym("u", m, N)
    s_prev = ca.SX(ca.DM(_state(prob.g0)))
    g = []
    for k in range(N):
        f = lambda s, u=U[:, k]: vehicle_rhs(body, s, u)  # noqa: E731
        k1 = f(s_prev)
        k2 = f(s_prev + 0.5 * h * k1)
        k3 = f(s_prev + 0.5 * h * k2)
        k4 = f(s_prev + h * k3)
        g.append(s_prev + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4) - S[:, k])
        s_prev = S[:, k]
    qT = quaternion_from_rotation(prob.gT[:3, :3])
    conj = ca.DM(np.concatenate([-qT[:3], qT[3:]]))
    g += [S[:3, -1] - ca.DM(prob.gT[:3, 3]), _quat_mul(conj, S[3:7, -1])[:3], S[7:, -1]]
    w = ca.vertcat(ca.vec(S), ca.vec(U))
    # the same guess as DMOC: the geodesic with a sin² speed profile, zero thrust
    xi = geodesic_guess(prob)
    gk, s0 = prob.g0, []
    for x in xi:
        gk = gk @ SE3.cay(h * x)
        s0.append(_state(gk, x))
    w0 = np.concatenate([np.array(s0).ravel(), np.zeros(m * N)])
    solver = ca.nlpsol(
        "rk4",
        "ipopt",
        {"x": w, "f": 0.5 * h * ca.sumsqr(U), "g": ca.vertcat(*g)},
        {"ipopt.print_level": 0, "print_time": 0, "ipopt.sb": "yes", "ipopt.tol": tol},
    )
    t_build = time.process_time() - t_build
    t0 = time.process_time()
    sol = solver(x0=w0, lbg=0.0, ubg=0.0)
    cpu = time.process_time() - t0
    wv = np.array(sol["x"]).ravel()
    Sv = wv[: 13 * N].reshape(N, 13)
    st = solver.stats()
    return dict(
        cpu=cpu,
        build=t_build,
        iterations=int(st["iter_count"]),
        success=bool(st["success"]),
        cost=float(sol["f"]),
        U=wv[13 * N :].reshape(N, m),
        off_group=float(np.abs(np.linalg.norm(Sv[:, 3:7], axis=1) - 1.0).max()),
    )


def replay_error(body, prob: DMOCProblem, U: np.ndarray) -> float:
    """Terminal pose error (max over rotation [rad] and position [m]) when the held inputs U_k drive the
    continuous dynamics from g(0) (DOP853, 1e-12)."""
    s = _state(prob.g0)
    for u in U:
        s = solve_ivp(
            lambda t, y, u=u: vehicle_rhs(body, y, u), (0, prob.dt), s, method="DOP853", rtol=1e-12, atol=1e-12
        ).y[:, -1]
    g = np.eye(4)
    g[:3, :3], g[:3, 3] = rotation_from_quaternion(s[3:7] / np.linalg.norm(s[3:7])), s[:3]
    return float(np.abs(SE3.log(SE3.inverse(prob.gT) @ g)).max())


# ---- the benchmark -------------------------------------------------------------------------------------------
def run_benchmark(rounds: int = 5, n_maneuvers: int | None = None, coast_steps: int = 10_000) -> dict:
    body = load_rigid_body("vehicle_uuv")
    st = maneuver_settings(body)
    chosen = maneuvers(body)[:n_maneuvers]
    probs = {
        (name, mode): DMOCProblem(body, g0, gT, st.horizon, st.duration, st.retraction, inputs=mode)
        for name, g0, gT in chosen
        for mode in ("split", "hold")
    }
    for p in probs.values():  # build and compile once, outside the timing
        solve_dmoc(p)
    times: dict[tuple, list[float]] = {}
    rows: dict[tuple, dict] = {}
    for _ in range(rounds):
        for name, _, _ in chosen:
            for mode in ("split", "hold"):
                # Newton alone, timed without the second-order check (the scan times the checked solve)
                r = solve_dmoc(probs[name, mode], continuation=False, fallback=None, check=False)
                times.setdefault((name, f"dmoc-{mode}"), []).append(r.solve_time)
                rows[name, f"dmoc-{mode}"] = dict(
                    iterations=r.iterations,
                    cost=r.cost,
                    converged=r.stationary,
                    residual=r.residual,
                    pose=r.pose_error,
                    unactuated=r.unactuated,
                    off_group=max(SE3.distance_from_group(g) for g in r.g),
                    U=r.u_minus,
                )
            ip = solve_ipopt(probs[name, "split"], tolerance=1e-10)
            times.setdefault((name, "ipopt"), []).append(ip.solve_time)
            rows[name, "ipopt"] = dict(iterations=ip.iterations, cost=ip.cost, converged=ip.success)
            rk = rk4_transcription(body, probs[name, "hold"])
            times.setdefault((name, "rk4"), []).append(rk["cpu"])
            rows[name, "rk4"] = dict(
                iterations=rk["iterations"],
                cost=rk["cost"],
                converged=rk["success"],
                off_group=rk["off_group"],
                U=rk["U"],
            )
    for (name, method), r in rows.items():
        r["cpu_median"], r["cpu_min"] = float(np.median(times[name, method])), float(np.min(times[name, method]))
        if method in ("dmoc-hold", "rk4"):
            r["replay"] = replay_error(body, probs[name, "hold"], r["U"])
    example = {name: solve_dmoc(probs[name, "split"]) for name, _, _ in chosen[:3]}
    return dict(
        rows=rows,
        maneuvers=[c[0] for c in chosen],
        rounds=rounds,
        load=os.getloadavg(),
        coast=coast(body, probs[chosen[0][0], "hold"], coast_steps),
        settings=st,
        example=example,
    )


def coast(body, prob: DMOCProblem, steps: int) -> dict:
    """Energy of a drag-free, thrust-free coast from the plan's fastest state: VI vs RK4-quaternion, same Δt."""
    res = solve_dmoc(prob)
    k = int(np.argmax(np.abs(res.xi).sum(axis=1)))
    free = load_rigid_body(dict(name="coast", group="SE3", mass=body.mass, inertia=body.inertia.tolist()))
    vi = make_integrator("lie_group", free, prob.dt)
    X, _ = vi.simulate(vi.state_from_pose(res.g[k], res.xi[k]), steps=steps)
    E_vi = np.array([vi.energy(x) for x in X])
    s = _state(res.g[k], res.xi[k])
    E_rk, qn = [], []
    h = prob.dt
    for _ in range(steps + 1):
        xi = s[7:]
        E_rk.append(0.5 * xi @ free.spatial_inertia @ xi)
        qn.append(abs(np.linalg.norm(s[3:7]) - 1.0))
        f = lambda y: vehicle_rhs(free, y, np.zeros(0))  # noqa: E731
        k1 = f(s)
        k2 = f(s + 0.5 * h * k1)
        k3 = f(s + 0.5 * h * k2)
        k4 = f(s + h * k3)
        s = s + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    t = h * np.arange(steps + 1)
    out = {}
    for name, E in (("vi", E_vi), ("rk4", np.array(E_rk))):
        rel = (E - E[0]) / E[0]
        out[name] = dict(t=t, rel=rel, max=float(np.abs(rel).max()), drift=float(np.polyfit(t, rel, 1)[0]))
    out["rk4"]["quat"] = float(np.max(qn))
    out["vi"]["quat"] = float(max(SE3.distance_from_group(vi.pose(x)) for x in X[::10]))
    return out


def run_l1() -> dict:
    """Jimenez2013, §6.2: L1 control of config/spacecraft_l1.yaml by IPOPT (u_k⁻, u_k⁺ separate)."""
    body = load_rigid_body("spacecraft_l1")
    st = maneuver_settings(body)
    _, g0, gT = maneuvers(body)[0]
    prob = DMOCProblem(body, g0, gT, st.horizon, st.duration, st.retraction, inputs="split")
    r = solve_ipopt(prob, cost="l1", bounds=body.effort_limits, tolerance=1e-10)
    U = np.concatenate([r.u_minus, r.u_plus])
    lim = body.effort_limits[0]
    frac = float(np.mean(np.min(np.abs(U[..., None] - np.array([-lim, 0.0, lim])), axis=-1) <= 1e-6))
    g = [g0]
    for xi in r.xi:
        g.append(g[-1] @ SO3.cay(prob.dt * xi))
    return dict(result=r, prob=prob, bang_fraction=frac, R=np.array(g), limit=lim)


# ---- the scan -------------------------------------------------------------------------------------
def _unit(v) -> list[float]:
    v = np.asarray(v, float)
    return (v / np.linalg.norm(v)).tolist()


# A body no test or YAML was tuned on: full inertia tensor (principal axes off the body axes), full drag matrix,
# five thrusters off the centre with tilted directions; the unactuated wrench direction is a mix of all six.
OTHER_BODY = dict(
    name="skewed_auv",
    group="SE3",
    mass=5.0,
    inertia=[[0.08, 0.012, -0.006], [0.012, 0.22, 0.009], [-0.006, 0.009, 0.25]],
    drag=[
        [0.3, 0.02, 0.0, 0.01, 0.0, 0.0],
        [0.02, 0.5, 0.03, 0.0, 0.02, 0.0],
        [0.0, 0.03, 0.5, 0.0, 0.0, 0.02],
        [0.01, 0.0, 0.0, 3.0, 0.2, 0.1],
        [0.0, 0.02, 0.0, 0.2, 6.0, 0.3],
        [0.0, 0.0, 0.02, 0.1, 0.3, 6.0],
    ],
    actuators=[
        dict(name="surge_l", direction=[1.0, 0.0, 0.0], position=[-0.3, 0.12, 0.02], limit=5.0),
        dict(name="surge_r", direction=[1.0, 0.0, 0.0], position=[-0.3, -0.12, -0.02], limit=5.0),
        dict(name="vert_f", direction=_unit([0.0, 0.2, 0.98]), position=[0.25, 0.0, 0.05], limit=5.0),
        dict(name="vert_r", direction=_unit([0.0, -0.2, 0.98]), position=[-0.25, 0.03, 0.0], limit=5.0),
        dict(name="lateral", direction=[0.0, 1.0, 0.0], position=[0.2, 0.0, -0.04], limit=5.0),
    ],
)


def random_goals(count: int, seed: int = 0, max_translation: float = 2.0, max_angle_deg: float = 60.0) -> list:
    """Goal poses (4×4) from the origin: translation uniform in direction and length ≤ ``max_translation``,
    rotation by an angle uniform in [0, ``max_angle_deg``] about a uniformly random axis."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        d, a = rng.normal(size=3), rng.normal(size=3)
        g = np.eye(4)
        g[:3, 3] = d / np.linalg.norm(d) * rng.uniform(0.0, max_translation)
        g[:3, :3] = SO3.exp(a / np.linalg.norm(a) * np.radians(rng.uniform(0.0, max_angle_deg)))
        out.append(g)
    return out


def run_scan(
    count: int = 25,
    seed: int = 0,
    modes: tuple[str, ...] = ("split", "hold"),
    bodies: dict[str, RigidBodyModel] | None = None,
    log=print,
) -> dict:
    """``solve_dmoc`` (defaults: continuation, IPOPT fallback, second-order check) on ``count`` random goals per
    body and mode (module docstring); rows per (body, mode) and every result."""
    bodies = bodies or {"vehicle_uuv": load_rigid_body("vehicle_uuv"), "skewed_auv": load_rigid_body(OTHER_BODY)}
    goals = random_goals(count, seed)
    results, rows = {}, {}
    for bname, body in bodies.items():
        for mode in modes:
            rs, excess = [], []
            for i, gT in enumerate(goals):
                prob = DMOCProblem(body, np.eye(4), gT, 32, 10.0, "cayley", inputs=mode)
                r = solve_dmoc(prob)
                ip = solve_ipopt(prob, tolerance=1e-10)  # IPOPT from the same geodesic: which local minimum it finds
                excess.append(r.cost / ip.cost - 1.0 if ip.success else np.nan)
                rs.append(r)
                if log is not None:
                    log(
                        f"[scan] {bname} {mode} {i}: {r.status} by {r.path}, cost {r.cost:.4g} (IPOPT from the "
                        f"geodesic {ip.cost:.4g}), {r.iterations} Newton + {r.fallback_iterations} IPOPT iterations, "
                        f"{r.solve_time:.2f} s"
                    )
            results[bname, mode] = rs
            n = len(rs)

            def share(pred, rs=rs, n=n) -> float:
                return sum(map(pred, rs)) / n

            rows[bname, mode] = dict(
                n=n,
                geodesic=share(lambda r: r.path == "newton"),
                coarse=share(lambda r: r.path == "newton-coarse"),
                split=share(lambda r: r.path == "newton-split"),
                continuation=share(lambda r: r.path == "newton-continuation"),
                newton_alone=share(lambda r: r.path.startswith("newton")),
                ipopt=share(lambda r: r.path.startswith("ipopt")),
                verified=share(lambda r: r.converged),
                saddles=sum(len(r.rejected) for r in rs),
                cpu_median=float(np.median([r.solve_time for r in rs])),
                cpu_max=float(np.max([r.solve_time for r in rs])),
                check_median=float(np.median([r.check_time for r in rs])),
                dearer=float(np.mean(np.array(excess) > 1e-3)),
                cheaper=float(np.mean(np.array(excess) < -1e-3)),
                worst=float(np.nanmax(excess)),
            )
    return dict(rows=rows, results=results, count=count, seed=seed, load=os.getloadavg())


def scan_table(scan: dict) -> str:
    lines = [
        f"Random rest-to-rest maneuvers (seed {scan['seed']}, {scan['count']} per body and mode; translation "
        "≤ 2 m, rotation ≤ 60°; N = 32, T = 10 s, Cayley); machine load "
        f"{scan['load'][0]:.1f}",
        "",
        "| body | inputs | Newton from the geodesic | Newton from N/2 | Newton from split inputs "
        "| Newton by continuation | Newton alone "
        "| IPOPT (fallback or from a saddle) | verified minima | saddles rejected | cost vs IPOPT from the "
        "geodesic: dearer / cheaper (> 0.1 %), worst | CPU s median (max) | check s median |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    pct = lambda x: f"{100 * x:.0f} %"  # noqa: E731
    for (bname, mode), r in scan["rows"].items():
        lines.append(
            f"| {bname} | {mode} | {pct(r['geodesic'])} | {pct(r['coarse'])} | {pct(r['split'])} | "
            f"{pct(r['continuation'])} | "
            f"**{pct(r['newton_alone'])}** | {pct(r['ipopt'])} | **{pct(r['verified'])}** | {r['saddles']} | "
            f"{pct(r['dearer'])} / {pct(r['cheaper'])}, {100 * r['worst']:+.1f} % | "
            f"{r['cpu_median']:.2f} ({r['cpu_max']:.2f}) | {r['check_median']:.2f} |"
        )
    return "\n".join(lines)


def table(res: dict) -> str:
    st = res["settings"]
    lines = [
        f"Vehicle of Jimenez2013, §6.1 (config/vehicle_uuv.yaml), N = {st.horizon}, T = {st.duration:g} s; "
        f"{res['rounds']} interleaved rounds, CPU ms median (min); machine load {res['load'][0]:.1f}",
        "",
        "| maneuver | DMOC split: it, ms | DMOC hold: it, ms | IPOPT identical: it, ms, ΔJ | "
        "RK4-quaternion + IPOPT: it, ms | max \\| \\|q\\| − 1 \\| (RK4) / off SO(3) (VI) | "
        "replay pose error: RK4 / DMOC hold |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in res["maneuvers"]:
        r = {m: res["rows"][name, m] for m in ("dmoc-split", "dmoc-hold", "ipopt", "rk4")}
        fmt = lambda x: f"{x['iterations']}, {1e3 * x['cpu_median']:.0f} ({1e3 * x['cpu_min']:.0f})"  # noqa: E731
        lines.append(
            f"| {name} | {fmt(r['dmoc-split'])} | {fmt(r['dmoc-hold'])} | {fmt(r['ipopt'])}, "
            f"{r['ipopt']['cost'] - r['dmoc-split']['cost']:+.0e} | {fmt(r['rk4'])} | "
            f"{r['rk4']['off_group']:.1e} / {r['dmoc-hold']['off_group']:.0e} | "
            f"{r['rk4']['replay']:.1e} / {r['dmoc-hold']['replay']:.1e} |"
        )
    c = res["coast"]
    n = len(c["vi"]["t"]) - 1
    lines += [
        "",
        f"Coast (no drag, no thrust) from the fastest state of {res['maneuvers'][0]}, {n} steps at Δt = {st.dt:g} s:",
        "",
        "| integrator | max \\|ΔE\\|/E₀ | drift [1/s] | off the group |",
        "|---|---|---|---|",
        f"| Lie-group VI (Cayley) | {c['vi']['max']:.1e} | {c['vi']['drift']:+.1e} | {c['vi']['quat']:.0e} |",
        f"| RK4 on quaternions | {c['rk4']['max']:.1e} | {c['rk4']['drift']:+.1e} | {c['rk4']['quat']:.1e} |",
    ]
    return "\n".join(lines)


def plot(res: dict, l1: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    c = res["coast"]
    for key, col, lab in (("vi", "C0", "Lie-group VI"), ("rk4", "C3", "RK4 on quaternions")):
        ax[0].plot(c[key]["t"], c[key]["rel"], color=col, lw=0.7, label=lab)
    ax[0].set(xlabel="t [s]", ylabel="(E − E₀)/E₀", title="vehicle coasting at the plan's Δt")
    ax[0].legend(fontsize=8)
    r = l1["result"]
    h = l1["prob"].dt
    t = np.arange(len(r.u_minus)) * h
    for i, col in enumerate(("C0", "C1")):  # u⁻ on [t_k, t_k + h/2), u⁺ on [t_k + h/2, t_{k+1}): the trapezoid
        ts = np.ravel(np.column_stack([t, t + h / 2]))
        us = np.ravel(np.column_stack([r.u_minus[:, i], r.u_plus[:, i]]))
        ax[1].step(ts, us, where="post", color=col, label=f"u_{'xy'[i]}")
    ax[1].set(
        xlabel="t [s]",
        ylabel="torque [N·m]",
        title=f"L1 control on SO(3): {100 * l1['bang_fraction']:.1f} % of samples in {{±u_max, 0}}",
    )
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "dmoc.png", dpi=110)
    # Jimenez2013, Fig. 1 (b) / Fig. 2: paths with the body x axis, and the five thrusts of one maneuver
    fig = plt.figure(figsize=(11, 4.2))
    a3 = fig.add_subplot(1, 2, 1, projection="3d")
    for (name, r), col in zip(res["example"].items(), ("C0", "C1", "C2")):
        p = r.g[:, :3, 3]
        a3.plot(p[:, 0], p[:, 1], p[:, 2], color=col, label=name)
        for g in r.g[::4]:
            a3.quiver(*g[:3, 3], *(0.25 * g[:3, 0]), color=col, lw=0.8)
    a3.set(xlabel="x [m]", ylabel="y [m]", zlabel="z [m]", title="DMOC maneuvers (body x axis every 4th step)")
    a3.legend(fontsize=7)
    ax2 = fig.add_subplot(1, 2, 2)
    name, r = next(iter(res["example"].items()))
    h = res["settings"].dt
    tt = np.arange(len(r.u_minus)) * h
    for i in range(r.u_minus.shape[1]):
        ts = np.ravel(np.column_stack([tt, tt + h / 2]))
        ax2.step(ts, np.ravel(np.column_stack([r.u_minus[:, i], r.u_plus[:, i]])), where="post", label=f"u{i + 1}")
    ax2.set(xlabel="t [s]", ylabel="thrust [N]", title=f"{name}: u_k⁻, u_k⁺ (minimum effort, N = 32)")
    ax2.legend(fontsize=7, ncol=5)
    fig.tight_layout()
    fig.savefig(out / "dmoc_uuv.png", dpi=110)
    fig = plt.figure(figsize=(4.5, 4.2))
    a3 = fig.add_subplot(projection="3d")
    for i, col in enumerate(("C0", "C1", "C2")):  # tips of the body axes on the unit sphere (Fig. 3 a)
        tips = l1["R"][:, :, i]
        a3.plot(tips[:, 0], tips[:, 1], tips[:, 2], color=col, label=f"body {'xyz'[i]}")
    a3.set_title("Jimenez2013, Fig. 3 (a): body axes")
    a3.legend(fontsize=7)
    fig.savefig(out / "l1_so3.png", dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--maneuvers", type=int, default=None)
    ap.add_argument("--coast", type=int, default=10_000)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--scan", type=int, default=25, help="random maneuvers per body and mode (0: no scan)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only-scan", action="store_true")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.scan:
        text = scan_table(run_scan(a.scan, a.seed))
        print(text)
        (out / "dmoc_scan.md").write_text(text + "\n")
    if a.only_scan:
        return
    res = run_benchmark(a.rounds, a.maneuvers, a.coast)
    l1 = run_l1()
    text = table(res) + (
        f"\n\nL1 on SO(3) (config/spacecraft_l1.yaml, N = {l1['prob'].horizon}): IPOPT "
        f"{l1['result'].iterations} iterations, {1e3 * l1['result'].solve_time:.0f} ms, "
        f"{100 * l1['bang_fraction']:.1f} % of the 2N·m input samples within 1e-6 of "
        f"{{−u_max, 0, u_max}}"
    )
    print(text)
    (out / "dmoc.md").write_text(text + "\n")
    plot(res, l1, out)


if __name__ == "__main__":
    main()
