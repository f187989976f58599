"""Collocation benchmark (seed 004 §V, Fig. 2): LG vs LG2 on the pendulum minimum-time swing-up, Kelly's cart-pole
swing-up and the RABBIT biped's periodic gait — second-order dynamic error E^[2] (eqs. 17–21), IPOPT iterations and
solve time per N — beside Drake's DirectCollocation (Hermite–Simpson, SNOPT) at equal knot count and our DDP on the
VI, plus the gait replayed in the midpoint VI under TV-LQR.

Timing: CPU time (process time) of the solver call only (the transcriptions are built once), interleaved rounds
(LG, LG2, LG, LG2, …), median and minimum reported with the machine's load average. LG and LG2 start from the same
guess (problems.py); where their optima differ (|Δt_f| ≥ 1e-3, or objectives by ≥ 1 %) the row says so and no ratio
is taken. Drake runs in the planner benchmark's own venv (benchmarks/bench_planner.py's ``ensure_bench_venv``).
"Open-loop drift": each method's input trajectory replayed from x₀ by scipy's RK45 (rtol 1e-10) on the continuous
dynamics, distance of the end state from the goal — how far the plan's own inputs actually take the robot.

Usage: .venv/bin/python benchmarks/bench_collocation.py [--rounds 5] [--no-external] [--quick]
Writes benchmarks/results/collocation.md, collocation.json, collocation.png, collocation_error_time.png,
collocation_gait.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402
from scipy.interpolate import CubicHermiteSpline  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_planner import ensure_bench_venv, external  # noqa: E402

from vi_control.model.bundled import load_bundled  # noqa: E402
from vi_control.planning.collocation import SecondOrderDynamics, Transcription  # noqa: E402
from vi_control.planning.collocation import problems as P  # noqa: E402
from vi_control.planning.collocation.gait import BipedGait  # noqa: E402
from vi_control.planning.collocation.gait_pinned import ABSOLUTE, PinnedBipedGait  # noqa: E402
from vi_control.planning.collocation.metrics import dynamic_errors, error_split  # noqa: E402

DRAKE_TF_GUESS = 3.0  # from the 2 s guess SNOPT stops infeasible at t_f = 10 s for most N (measured)


def _timed(tr: Transcription, rounds: int, kwargs: dict) -> tuple:
    sols = [tr.solve(raise_on_failure=False, **kwargs) for _ in range(rounds)]
    return sols[-1], [s.solve_time for s in sols]


def sweep(name: str, dyn, make, kwargs: dict, Ns, rounds: int, same=lambda a, b: True, coordinates=None
          ) -> list[dict]:
    """LG and LG2 at each N from the same guess: E^[2] (of θ = coordinates·q if given), iterations, CPU times
    (interleaved rounds)."""
    rows = []
    for N in Ns:
        trs = {m: Transcription(make(dyn, m, N)) for m in ("lg", "lg2")}
        times = {m: [] for m in trs}
        sols = {}
        for _ in range(rounds):
            for m, tr in trs.items():
                sols[m], t = _timed(tr, 1, kwargs)
                times[m] += t
        row = dict(problem=name, N=N)
        for m, s in sols.items():
            E = dynamic_errors(s, dyn, coordinates=coordinates) if s.success else None
            split = ([x.tolist() for x in error_split(s, dyn, coordinates=coordinates)] if s.success
                     else [None, None])
            row[m] = dict(success=s.success, status=s.status, iterations=s.iterations, tf=s.tf, objective=s.objective,
                          E2=E.E2 if E else None, E2_q=E.E2_q.tolist() if E else None, E2_split=split,
                          t_med=float(np.median(times[m])), t_min=float(np.min(times[m])))
        ok = all(s.success for s in sols.values())
        row["same_optimum"] = bool(ok and same(sols["lg"], sols["lg2"]))
        rows.append(row)
        print(f"[{name}] N = {N}: " + ", ".join(f"{m} {row[m]['status']} it {row[m]['iterations']} E2 "
                                                 f"{row[m]['E2']} t {row[m]['t_med'] * 1e3:.1f} ms" for m in sols))
    return rows


def multistart(dyn, Ns, rounds: int) -> list[dict]:
    """Pendulum: both methods from each straight-line start (problems.PENDULUM_START_TIMES), interleaved rounds;
    E^[2] at each method's lowest-t_f optimum, the iterations of every start, CPU of all starts (median, min)."""
    rows = []
    for N in Ns:
        trs = {m: Transcription(P.pendulum_min_time(dyn, m, N)) for m in ("lg", "lg2")}
        cpu, out = {m: [] for m in trs}, {}
        for _ in range(rounds):
            for m, tr in trs.items():
                out[m] = P.best_of(tr, P.pendulum_starts(), **P.pendulum_boundary())
                cpu[m].append(sum(s.solve_time for s in out[m][1]))
        row = dict(N=N)
        for m, (best, sols) in out.items():
            row[m] = dict(tf=None if best is None else best.tf, iterations=[s.iterations for s in sols],
                          tfs=[round(s.tf, 4) if s.success else None for s in sols],
                          E2=None if best is None else dynamic_errors(best, dyn).E2,
                          t_med=float(np.median(cpu[m])), t_min=float(np.min(cpu[m])))
        a, b = row["lg"]["tf"], row["lg2"]["tf"]
        row["same_optimum"] = bool(a is not None and b is not None and abs(a - b) < 1e-3)
        rows.append(row)
        print(f"[pendulum, starts] N = {N}: " + ", ".join(f"{m} t_f {row[m]['tfs']} its {row[m]['iterations']} "
                                                          f"E2 {row[m]['E2']}" for m in trs))
    return rows


def replay_drift(dyn, t_u, U, x0, tf, goal, kind: str = "poly", u_fn=None) -> float:
    """Replay a plan's inputs from x0 with RK45 on the continuous dynamics: ‖x(t_f) − goal‖∞."""
    nq = dyn.nq
    if u_fn is None:
        u_fn = (lambda t: np.array([np.interp(t, t_u, U[:, j]) for j in range(U.shape[1])])) if kind == "foh" else \
            (lambda t: U[min(int(t / (t_u[1] - t_u[0])), len(U) - 1)])  # zoh on a uniform grid

    def f(t, x):
        return np.concatenate([x[nq:], dyn.acceleration(x[None, :nq], x[None, nq:], u_fn(t)[None])[0]])
    x = solve_ivp(f, (0.0, tf), x0, rtol=1e-10, atol=1e-10).y[:, -1]
    return float(np.abs(x - goal).max())


def hermite_simpson_errors(dyn, t, X, U) -> tuple[float, list[float]]:
    """E^[2] (eq. 21) of a Hermite–Simpson solution as Drake reconstructs it: q(t) the cubic Hermite spline with
    q̇_k = v_k at the knots, u(t) first-order hold; ε^[2] = q̈ − g(q, q̇, u) on 20 001 samples (trapezoid)."""
    nq = dyn.nq
    q_spline = CubicHermiteSpline(t, X[:, :nq], X[:, nq:])
    ts = np.linspace(t[0], t[-1], 20001)
    u = np.column_stack([np.interp(ts, t, U[:, j]) for j in range(U.shape[1])])
    e2 = q_spline(ts, 2) - dyn.acceleration(q_spline(ts), q_spline(ts, 1), u)
    E_q = np.trapezoid(np.abs(e2), ts, axis=0)
    return float(E_q.sum()), E_q.tolist()


def drake_own_errors(dyn, own: dict) -> tuple[float, list[float]]:
    """E^[2] (eq. 21) on Drake's own reconstruction (``ReconstructStateTrajectory``: cubic Hermite in x with
    ẋ_k = f(x_k, u_k); ``ReconstructInputTrajectory``: first-order hold): ε^[2] = q̈ − g(q, q̇, u) with q, q̇, q̈ of the
    configuration part of Drake's state trajectory, by composite Gauss quadrature on every knot interval."""
    nq = dyn.nq
    x, xd, xdd, u = (np.array(own[k]) for k in ("x", "xd", "xdd", "u"))
    e2 = xdd[:, :nq] - dyn.acceleration(x[:, :nq], xd[:, :nq], u)
    E_q = np.asarray(own["w"]) @ np.abs(e2)
    return float(E_q.sum()), E_q.tolist()


DRAKE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from pydrake.all import DirectCollocation, MultibodyPlant, Parser, PiecewisePolynomial, Solve
    from pydrake.examples import PendulumPlant
    spec = json.loads(sys.argv[1])
    def solve(plant, ctx, N, setup, rounds):
        best = None
        for _ in range(rounds):
            c0 = time.process_time()
            dc = setup(plant, ctx, N)
            res = Solve(dc.prog())
            cpu = time.process_time() - c0
            if best is None or cpu < best[0]:
                best = (cpu, res, dc)
        cpu, res, dc = best
        t = dc.GetSampleTimes(res)
        # Drake's own interpolation (ReconstructState/InputTrajectory: cubic Hermite state, first-order hold input)
        # at 3 Gauss points on 40 pieces of every knot interval, with the quadrature weights
        x, w = np.polynomial.legendre.leggauss(3)
        edges = np.concatenate([np.linspace(a, b, 41)[:-1] for a, b in zip(t[:-1], t[1:])] + [t[-1:]])
        mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * np.diff(edges)
        ts, ws = (mid[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()
        xt, ut = dc.ReconstructStateTrajectory(res), dc.ReconstructInputTrajectory(res)
        own = dict(t=ts.tolist(), w=ws.tolist(), u=ut.vector_values(ts).T.tolist(),
                   **{k: xt.derivative(d).vector_values(ts).T.tolist() if d else xt.vector_values(ts).T.tolist()
                      for k, d in (("x", 0), ("xd", 1), ("xdd", 2))})
        return dict(N=N, success=bool(res.is_success()), solver=res.get_solver_id().name(), cpu=cpu,
                    t=t.tolist(), X=dc.GetStateSamples(res).T.tolist(), own=own,
                    U=dc.GetInputSamples(res).T.tolist(), cost=float(res.get_optimal_cost()))
    def pendulum(plant, ctx, N):
        dc = DirectCollocation(plant, ctx, num_time_samples=N, minimum_time_step=0.1 / (N - 1),
                               maximum_time_step=10.0 / (N - 1))
        prog = dc.prog()
        dc.AddEqualTimeIntervalsConstraints()
        u = dc.input()
        dc.AddConstraintToAllKnotPoints(u[0] <= 5.0)
        dc.AddConstraintToAllKnotPoints(-5.0 <= u[0])
        prog.AddBoundingBoxConstraint([0, 0], [0, 0], dc.initial_state())
        prog.AddBoundingBoxConstraint([np.pi, 0], [np.pi, 0], dc.final_state())
        dc.AddFinalCost(dc.time()[0])
        tg = spec["tf_guess"]
        dc.SetInitialTrajectory(PiecewisePolynomial(), PiecewisePolynomial.FirstOrderHold(
            [0, tg], np.array([[0, np.pi], [np.pi / tg, np.pi / tg]])))
        return dc
    def cartpole(plant, ctx, N):
        h = 2.0 / (N - 1)
        dc = DirectCollocation(plant, ctx, num_time_samples=N, minimum_time_step=h, maximum_time_step=h,
                               input_port_index=plant.get_actuation_input_port().get_index())
        prog = dc.prog()
        u, x = dc.input(), dc.state()
        dc.AddConstraintToAllKnotPoints(u[0] <= 20.0)
        dc.AddConstraintToAllKnotPoints(-20.0 <= u[0])
        dc.AddConstraintToAllKnotPoints(x[0] <= 2.0)
        dc.AddConstraintToAllKnotPoints(-2.0 <= x[0])
        prog.AddBoundingBoxConstraint([0, 0, 0, 0], [0, 0, 0, 0], dc.initial_state())
        prog.AddBoundingBoxConstraint([1, np.pi, 0, 0], [1, np.pi, 0, 0], dc.final_state())
        dc.AddRunningCost(u[0] * u[0])
        dc.SetInitialTrajectory(PiecewisePolynomial(), PiecewisePolynomial.FirstOrderHold(
            [0, 2.0], np.array([[0, 1], [0, np.pi], [0, 0], [0, 0]])))
        return dc
    pend = PendulumPlant()
    pctx = pend.CreateDefaultContext()
    p = pend.get_mutable_parameters(pctx)
    p.set_mass(1.0); p.set_length(1.0); p.set_damping(0.0); p.set_gravity(9.8)
    cp = MultibodyPlant(0.0)
    Parser(cp).AddModels(spec["cartpole_urdf"])
    cp.WeldFrames(cp.world_frame(), cp.GetFrameByName("rail"))  # our URDF's root is fixed (vi_control's convention)
    cp.AddJointActuator("slider", cp.GetJointByName("slider"))
    cp.Finalize()
    cctx = cp.CreateDefaultContext()
    from importlib.metadata import version
    out = dict(version=version("drake"),
               pendulum=[solve(pend, pctx, N, pendulum, spec["rounds"]) for N in spec["pendulum"]],
               cartpole=[solve(cp, cctx, N, cartpole, spec["rounds"]) for N in spec["cartpole"]])
    print(json.dumps(out))
""")


def drake_rows(pend_dyn, cart_dyn, Ns_p, Ns_c, rounds) -> dict:
    py, err = ensure_bench_venv()
    if py is None or err:
        return dict(error=err or "no benchmark venv")
    spec = dict(pendulum=list(Ns_p), cartpole=list(Ns_c), rounds=rounds, tf_guess=DRAKE_TF_GUESS,
                cartpole_urdf=str(ROOT / "urdf" / "cartpole.urdf"))
    out = external(py, "drake", DRAKE, [json.dumps(spec)])
    if "pendulum" not in out:
        return dict(error=out.get("note", "drake failed"))
    for key, dyn, goal, tf_of in (("pendulum", pend_dyn, [np.pi, 0.0], lambda r: r["t"][-1]),
                                  ("cartpole", cart_dyn, [1.0, np.pi, 0.0, 0.0], lambda r: 2.0)):
        for r in out[key]:
            t, X, U = np.array(r["t"]), np.array(r["X"]), np.array(r["U"])
            r["tf"] = float(t[-1])
            if r["success"]:
                r["E2"], r["E2_q"] = drake_own_errors(dyn, r["own"])
                r["E2_spline"] = hermite_simpson_errors(dyn, t, X, U)[0]  # our reconstruction: the cross-check
                r["drift"] = replay_drift(dyn, t, U, X[0], tf_of(r), np.array(goal), kind="foh")
            for k in ("t", "X", "U", "own"):
                r.pop(k)
    return out


def ddp_rows(tf_pendulum: float, rounds: int, dt: float = 0.02) -> list[dict]:
    """Our DDP on the VI (Δt = 20 ms), same boundary conditions and bounds: the pendulum in LG2's minimum time
    (rounded up to the grid), Kelly's cart-pole in 2 s; cost R·Σ‖u‖² plus a stiff terminal cost on the goal."""
    from vi_control.planning import load_task, make_system, plan_task

    out = []
    for name, model, n, goal, R in (("pendulum", "pendulum", int(np.ceil(tf_pendulum / dt)), ["pi"], 0.01),
                                    ("cartpole", "cartpole", int(round(2.0 / dt)), [1.0, "pi"], 0.02)):
        nq = len(goal)
        task = load_task(dict(name=name, model=model, dt=dt, horizon=n, start={"q": [0.0] * nq},
                              goal={"q": goal}, reference={"type": "goal"}, weights={"Q": [0.0] * 2 * nq, "R": R,
                                                                                     "Qf": [1e5] * nq + [1e4] * nq},
                              input_limits="model", optimizer={"method": "ddp", "max_iterations": 300},
                              initial_guess="zero"))
        vi = make_system(task)
        cpu = []
        for _ in range(rounds):
            c0 = time.process_time()
            plan, res = plan_task(vi, task)
            cpu.append(time.process_time() - c0)
        dyn = SecondOrderDynamics(vi.robot)
        g = np.array([np.pi if v == "pi" else v for v in goal] + [0.0] * nq)
        drift = replay_drift(dyn, plan.times[:-1], plan.U, np.zeros(2 * nq), plan.times[-1], g)
        out.append(dict(problem=name, steps=n, dt=dt, iterations=res.iterations, converged=res.converged,
                        t_med=float(np.median(cpu)), t_min=float(np.min(cpu)), drift=drift,
                        q_end=plan.X[-1, :nq].tolist()))
        print(f"[ddp] {name}: {res}")
    return out


def colloc_drift(dyn, sol, goal) -> float:
    return replay_drift(dyn, None, None, np.concatenate([sol.Q[0], sol.V[0]]), sol.tf, np.asarray(goal),
                        u_fn=lambda t: sol.u([t])[0])


def gait_rows(Ns, rounds) -> tuple[list[dict], list[dict], dict]:
    """The gait sweep in both formulations (floating base + stance constraint, E^[2] over its 7 coordinates; stance
    foot as the root, E^[2] over the 5 absolute link angles as in seed 004), and the VI replay."""
    from vi_control.integrators.midpoint import MidpointVI

    gait = BipedGait(load_bundled("biped5_stance"))
    pinned = PinnedBipedGait(load_bundled("biped5_pinned"), floating=gait)
    same = lambda a, b: abs(a.objective - b.objective) < 0.01 * abs(b.objective)  # noqa: E731
    rows = {}
    for name, g, coords in (("biped", gait, None), ("biped_pinned", pinned, ABSOLUTE)):
        rows[name] = sweep(name, g.dynamics, lambda dyn, m, N, g=g: g.problem(m, N),
                           dict(tf=g.step_time, guess=g.guess()), Ns, rounds, same=same, coordinates=coords)
    N = 10 if 10 in Ns else Ns[-1]
    sol = gait.solve("lg2", N)
    vi = MidpointVI(gait.robot, 0.01)
    Q, R = np.diag([100.0] * 7 + [1.0] * 7), 0.01 * np.eye(4)
    cycle = gait.periodic_step(vi, sol, Q, R, 10 * Q)
    dev, walked = gait.replay(vi, cycle.X, cycle.U, cycle.K, steps=10)
    x0 = cycle.X[0].copy()
    x0[6] += 0.02  # the swing knee 0.02 rad off (the stance foot stays down)
    dev_perturbed = gait.replay(vi, cycle.X, cycle.U, cycle.K, steps=10, x0=x0)[0].tolist()
    try:
        dev_open = gait.replay(vi, cycle.X, cycle.U, None, steps=3, x0=x0)[0].tolist()
    except Exception as e:  # noqa: BLE001 — the open loop falls off the step's domain
        dev_open = f"fell ({type(e).__name__})"
    replay = dict(N=N, mismatch=cycle.polish_mismatch, newton=cycle.residuals, shift=cycle.shift,
                  deviation=dev.tolist(), perturbed=dev_perturbed, open_loop=dev_open, sol=sol, gait=gait,
                  walked=walked, vi=vi)
    return rows["biped"], rows["biped_pinned"], replay


def _f(v, fmt="{:.3g}") -> str:
    return "-" if v is None else fmt.format(v)


def _part(split: list | None, k: int, coord: int | None) -> float | None:
    """Part k of error_split's (q̈ − v̇, v̇ − g): of one coordinate, or summed over them as E^[2] (eq. 19)."""
    if split is None or split[k] is None:
        return None
    return sum(split[k]) if coord is None else split[k][coord]


def table(rows: list[dict], drake: dict | None, key: str, coord: int | None = None, split: bool = False,
          floor: dict | None = None) -> str:
    """Markdown rows: E^[2] (or E^[2]_q of one coordinate), ratio, iterations, CPU time (median) per method;
    ``split``: LG's E^[2] in its two parts (metrics.error_split) and LG2's residual part; ``floor`` (N → value):
    the interpolation error of gravity along the exact bang-bang motion (problems.py)."""
    dk = {r["N"]: r for r in (drake or {}).get(key, [])} if drake else {}
    head = ("| N | E² LG | E² LG2 | LG/LG2 | iterations LG / LG2 | CPU LG / LG2 [ms] | time LG2/LG | same optimum |"
            + (" E² Drake HS | t_f / J Drake | CPU Drake [ms] |" if dk else "")
            + (" LG's E² parts: q̈−v̇ / v̇−g | LG2's v̇−g |" if split else "")
            + (" I_N[a₀] on the exact motion |" if floor else ""))
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        a, b = r["lg"], r["lg2"]
        Ea = a["E2"] if coord is None or a["E2_q"] is None else a["E2_q"][coord]
        Eb = b["E2"] if coord is None or b["E2_q"] is None else b["E2_q"][coord]
        ratio = f"**{Ea / Eb:.1f}×**" if r["same_optimum"] and Ea and Eb else "-"
        same = "yes" if r["same_optimum"] else (f"**no** (t_f {a['tf']:.4f} / {b['tf']:.4f}, J {a['objective']:.4g} / "
                                                f"{b['objective']:.4g})")
        line = (f"| {r['N']} | {_f(Ea)} | {_f(Eb)} | {ratio} | {a['iterations']} / {b['iterations']} | "
                f"{a['t_med'] * 1e3:.1f} / {b['t_med'] * 1e3:.1f} | {b['t_med'] / a['t_med']:.2f} | {same} |")
        if dk:
            d = dk.get(r["N"], {})
            Ed = d.get("E2") if coord is None or d.get("E2_q") is None else d["E2_q"][coord]
            cpu = d.get("cpu")
            tfJ = None if "tf" not in d else (d["tf"] if key == "pendulum" else d["cost"])
            line += f" {_f(Ed)} | {_f(tfJ, '{:.4g}')} | {_f(None if cpu is None else cpu * 1e3, '{:.1f}')} |"
        if split:
            pa, pb = a.get("E2_split"), b.get("E2_split")
            line += f" {_f(_part(pa, 0, coord))} / {_f(_part(pa, 1, coord))} | {_f(_part(pb, 1, coord))} |"
        if floor:
            line += f" {_f(floor.get(r['N']))} |"
        out.append(line)
    return "\n".join(out)


def starts_table(rows: list[dict]) -> str:
    head = ("| N | t_f of each start LG | t_f of each start LG2 | E² LG | E² LG2 | LG/LG2 | iterations LG | "
            "iterations LG2 | CPU of all starts LG / LG2 [ms] | time LG2/LG |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        a, b = r["lg"], r["lg2"]
        ratio = f"**{a['E2'] / b['E2']:.1f}×**" if r["same_optimum"] else "- (different optima)"
        out.append(f"| {r['N']} | {' '.join(_f(t, '{:.4f}') for t in a['tfs'])} | "
                   f"{' '.join(_f(t, '{:.4f}') for t in b['tfs'])} | {_f(a['E2'])} | {_f(b['E2'])} | {ratio} | "
                   f"{' '.join(map(str, a['iterations']))} | {' '.join(map(str, b['iterations']))} | "
                   f"{a['t_med'] * 1e3:.1f} / {b['t_med'] * 1e3:.1f} | {b['t_med'] / a['t_med']:.2f} |")
    return "\n".join(out)


def plots(res: dict, replay: dict | None, pend_dyn, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vi_control.planning.collocation.metrics import plot_dynamic_error, plot_error_sweep

    fig, ax = plt.subplots(3, 2, figsize=(10, 11))
    for i, (key, coord, title) in enumerate((("pendulum", None, "pendulum minimum-time swing-up: $E^{[2]}$"),
                                             ("cartpole", 0, "cart-pole swing-up: $E^{[2]}_{q_1}$"),
                                             ("biped", None, "five-link biped gait: $E^{[2]}$"))):
        rows = res.get(key, [])
        if not rows:
            continue
        Ns = [r["N"] for r in rows]

        def col(m, c=coord, rows=rows):
            E = [(r[m]["E2"] if c is None or r[m]["E2_q"] is None else r[m]["E2_q"][c]) if r["same_optimum"]
                 else np.nan for r in rows]
            return [np.nan if e is None else e for e in E], [r[m]["t_med"] for r in rows]
        curves = {"LG": col("lg"), "LG2": col("lg2")}
        if key == "biped" and res.get("biped_pinned"):  # seed 004's formulation beside the floating base
            curves = {"LG (floating base)": curves["LG"], "LG2 (floating base)": curves["LG2"],
                      "LG (stance root, abs. angles)": col("lg", None, res["biped_pinned"]),
                      "LG2 (stance root, abs. angles)": col("lg2", None, res["biped_pinned"])}
        dk = {r["N"]: r for r in (res.get("drake") or {}).get(key, [])}
        if dk:
            curves["Drake Hermite–Simpson"] = (
                [(dk[n].get("E2") if coord is None else (dk[n].get("E2_q") or [np.nan])[coord]) if n in dk
                 and dk[n]["success"] else np.nan for n in Ns], [dk[n]["cpu"] if n in dk else np.nan for n in Ns])
        plot_error_sweep(ax[i, 0], ax[i, 1], Ns, curves, title=title)
    fig.tight_layout()
    fig.savefig(out_dir / "collocation.png", dpi=100)
    plt.close(fig)
    if "pendulum_solutions" in res:
        fig, ax = plt.subplots(figsize=(8, 4))
        for sol, c in zip(res["pendulum_solutions"], ("C0", "C1"), strict=True):
            plot_dynamic_error(ax, sol, pend_dyn, color=c)
        ax.set_yscale("log")
        ax.set_title("pendulum, N = 20: $ε^{[2]}(t)$ between the collocation points (dots)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "collocation_error_time.png", dpi=100)
        plt.close(fig)
    if replay:
        gait, sol = replay["gait"], replay["sol"]
        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        for t in np.linspace(0, sol.tf, 6):
            q = sol.q([t])[0]
            pts = [np.array(gait.dynamics.point_position(link, [0, 0, z], q)).ravel()[[0, 2]] for link, z in
                   (("left_foot", 0), ("left_tibia", 0), ("torso", 0), ("torso", 0.625), ("torso", 0),
                    ("right_tibia", 0), ("right_foot", 0))]
            pts = np.array(pts)
            ax[0].plot(pts[:, 0], pts[:, 1], "-o", ms=2, color=plt.cm.viridis(t / sol.tf))
        ax[0].axhline(0, color="k", lw=0.8)
        ax[0].set_aspect("equal")
        ax[0].set_title(f"LG2 gait, N = {replay['N']}: one step ({sol.tf:g} s, {gait.step_length:g} m)")
        ax[1].semilogy(replay["perturbed"], "o-", label="TV-LQR (periodic gains), swing knee 0.02 rad off")
        ax[1].semilogy(np.maximum(replay["deviation"], 1e-16), "^-", label="TV-LQR from the cycle's start")
        if isinstance(replay["open_loop"], list):
            ax[1].semilogy(replay["open_loop"], "s--", label="open loop, 0.02 rad off")
        ax[1].set_xlabel("step")
        ax[1].set_ylabel("deviation of the step's start state from the plan's")
        ax[1].set_title("replayed in the midpoint VI with the impact map")
        ax[1].legend()
        fig.tight_layout()
        fig.savefig(out_dir / "collocation_gait.png", dpi=100)
        plt.close(fig)


def run(rounds: int, Ns_p, Ns_c, Ns_b, external_tools: bool, out_dir: Path, ddp_dt: float = 0.02) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    pend = SecondOrderDynamics(load_bundled("pendulum"))
    cart = SecondOrderDynamics(load_bundled("cartpole"))
    res = dict(load=os.getloadavg()[0], rounds=rounds)
    res["pendulum"] = sweep("pendulum", pend, P.pendulum_min_time,
                            dict(**P.pendulum_boundary(), guess=P.pendulum_guess()), Ns_p, rounds,
                            same=lambda a, b: abs(a.tf - b.tf) < 1e-3)
    # fixed t_f: the objectives of one optimum differ by the discretization (3 % at N = 10), other optima by more
    res["cartpole"] = sweep("cartpole", cart, P.cartpole_swingup, P.cartpole_boundary(), Ns_c, rounds,
                            same=lambda a, b: abs(a.objective - b.objective) < 0.05 * abs(b.objective))
    res["pendulum_starts"] = multistart(pend, Ns_p, rounds)
    res["gravity_floor"] = {N: P.bang_bang_gravity_interpolation_error(N) for N in Ns_p}
    N20 = 20 if 20 in Ns_p else Ns_p[-1]
    sols = [Transcription(P.pendulum_min_time(pend, m, N20)).solve(**P.pendulum_boundary(), guess=P.pendulum_guess())
            for m in ("lg", "lg2")]
    res["pendulum_solutions"] = sols
    res["drift"] = {f"{m} N={N20}": colloc_drift(pend, s, [np.pi, 0.0]) for m, s in zip(("LG", "LG2"), sols,
                                                                                          strict=True)}
    res["ddp"] = ddp_rows(sols[1].tf, rounds, ddp_dt)
    res["drake"] = drake_rows(pend, cart, Ns_p, Ns_c, rounds) if external_tools else None
    res["biped"], res["biped_pinned"], replay = gait_rows(Ns_b, max(1, rounds // 2)) if Ns_b else ([], [], None)
    if Ns_b is None:  # --skip-biped: keep the previous run's biped rows (marked as such in the report)
        old = out_dir / "collocation.json"
        prev = json.loads(old.read_text()) if old.exists() else {}
        res["biped"], res["biped_pinned"] = prev.get("biped", []), prev.get("biped_pinned", [])
        res["biped_from"], res["replay_prev"] = "carried over from the previous run", prev.get("replay")
    plots(res, replay, pend, out_dir)
    res["replay"] = (res.pop("replay_prev", None) if replay is None else
                     {k: replay[k] for k in ("N", "mismatch", "newton", "shift", "deviation", "perturbed",
                                             "open_loop")})
    report(res, out_dir)
    return res


def report(res: dict, out_dir: Path) -> None:
    dr = res.get("drake") or {}
    lines = [f"CPU time of the solver call (median of {res['rounds']} interleaved rounds), load average "
             f"{res['load']:.1f} on {os.cpu_count()} cores. Drake: {dr.get('version', dr.get('error', 'not run'))}.",
             "", "Pendulum minimum-time swing-up (|u| ≤ 5 N·m):", "",
             table(res["pendulum"], dr, "pendulum", split=True, floor=res.get("gravity_floor")), "",
             "Pendulum from each straight-line start (t_g = " + ", ".join(f"{t:g}" for t in P.PENDULUM_START_TIMES)
             + " s), E² at each method's lowest-t_f optimum:", "", starts_table(res["pendulum_starts"]), "",
             "Cart-pole swing-up (Kelly 2017), E² of q₁ = x (seed 004 plots this one):", "",
             table(res["cartpole"], dr, "cartpole", coord=0, split=True), "",
             "Cart-pole, E² of q₂ = θ:", "", table(res["cartpole"], None, "cartpole", coord=1, split=True), ""]
    spl = [(r["N"], r["E2"], r["E2_spline"]) for k in ("pendulum", "cartpole") for r in dr.get(k) or []
           if r.get("E2_spline")]
    if spl:
        lines += ["Drake's E² on its own ReconstructStateTrajectory / ReconstructInputTrajectory; our cubic Hermite "
                  "spline + first-order hold reconstruction gives the same to a relative "
                  f"{max(abs(a - b) / a for _, a, b in spl):.1e} (max over all rows).", ""]
    if res["biped"]:
        carried = f" ({res['biped_from']})" if res.get("biped_from") else ""
        lines += ["Five-link biped gait, floating base + stance constraint (`biped5_stance`; E² over all seven "
                  f"coordinates, base_x and base_z in m){carried}:", "",
                  table(res["biped"], None, "biped", split=True), "",
                  "Five-link biped gait, stance foot as the root (`biped5_pinned`, seed 004's minimal coordinates; E² "
                  f"over the five absolute link angles, eq. 19){carried}:", "",
                  table(res["biped_pinned"], None, "biped", split=True), ""]
    lines += ["Pendulum, open-loop drift (the plan's inputs replayed by RK45 from x₀; ‖x(t_f) − goal‖∞): " + ", ".join(
        f"{k} {v:.3g}" for k, v in res["drift"].items())]
    for r in dr.get("pendulum") or []:
        if r.get("drift") is not None and r["N"] == 20:
            lines[-1] += f", Drake HS N=20 {r['drift']:.3g}"
    for r in res["ddp"]:  # (the cart-pole's drift is dominated by its open-loop instability)
        lines += [f"- our DDP ({r['problem']}, {r['steps']} VI steps of {r['dt'] * 1e3:g} ms): {r['iterations']} "
                  f"iterations, CPU {r['t_med'] * 1e3:.0f} ms (min {r['t_min'] * 1e3:.0f}), "
                  f"converged {r['converged']}" + (f", open-loop drift {r['drift']:.3g}" if r["problem"] == "pendulum"
                                                   else "")]
    if res.get("replay"):
        rp = res["replay"]
        lines += [f"- gait replay (LG2 N = {rp['N']}, VI Δt = 10 ms): polished step mismatch {rp['mismatch']:.3g}, "
                  f"closed by Newton (‖r‖∞ {', '.join(f'{r:.1e}' for r in rp['newton'])}; start moved "
                  f"{rp['shift']:.3g}); start-of-step deviation over 10 steps, max {max(rp['deviation']):.1e}; "
                  f"from the swing knee 0.02 rad off: {', '.join(f'{d:.1e}' for d in rp['perturbed'])}; open loop "
                  f"from there: {ol if isinstance(ol := rp['open_loop'], str) else np.round(ol, 2).tolist()}"]
    text = "\n".join(lines)
    print(text)
    (out_dir / "collocation.md").write_text(text + "\n", encoding="utf-8")
    keep = {k: v for k, v in res.items() if k not in ("pendulum_solutions",)}
    (out_dir / "collocation.json").write_text(json.dumps(keep, indent=1, default=str), encoding="utf-8")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-external", action="store_true")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (the smoke test)")
    ap.add_argument("--skip-biped", action="store_true", help="keep the previous run's biped rows")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    a = ap.parse_args(argv)
    if a.quick:
        Ns = dict(Ns_p=[6], Ns_c=[6], Ns_b=[4], ddp_dt=0.1)
    else:
        Ns = dict(Ns_p=[10, 15, 20, 25, 30], Ns_c=list(range(10, 61, 5)), Ns_b=[4, 6, 8, 10, 12, 16, 20])
    if a.skip_biped:
        Ns["Ns_b"] = None
    return run(a.rounds, **Ns, external_tools=not a.no_external, out_dir=Path(a.out))


if __name__ == "__main__":
    main()
