"""Collocation benchmark (MorenoMartin2022, §V, Fig. 2): LG vs LG2 on the pendulum minimum-time swing-up, Kelly's
cart-pole swing-up and the RABBIT biped's periodic gait — second-order dynamic error E^[2] (eqs. 17–21), IPOPT
iterations and solve time per N — beside Drake's DirectCollocation (Hermite–Simpson, SNOPT) at equal knot count and our
DDP on the VI, plus the gait replayed in the midpoint VI under TV-LQR.

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
from collocation_report import plots, report  # noqa: E402

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


def sweep(name: str, dyn, make, kwargs: dict, Ns, rounds: int, same=lambda a, b: True, coordinates=None) -> list[dict]:
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
            split = [x.tolist() for x in error_split(s, dyn, coordinates=coordinates)] if s.success else [None, None]
            row[m] = dict(
                success=s.success,
                status=s.status,
                iterations=s.iterations,
                tf=s.tf,
                objective=s.objective,
                E2=E.E2 if E else None,
                E2_q=E.E2_q.tolist() if E else None,
                E2_split=split,
                t_med=float(np.median(times[m])),
                t_min=float(np.min(times[m])),
            )
        ok = all(s.success for s in sols.values())
        row["same_optimum"] = bool(ok and same(sols["lg"], sols["lg2"]))
        rows.append(row)
        print(
            f"[{name}] N = {N}: "
            + ", ".join(
                f"{m} {row[m]['status']} it {row[m]['iterations']} E2 {row[m]['E2']} t {row[m]['t_med'] * 1e3:.1f} ms"
                for m in sols
            )
        )
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
            row[m] = dict(
                tf=None if best is None else best.tf,
                iterations=[s.iterations for s in sols],
                tfs=[round(s.tf, 4) if s.success else None for s in sols],
                E2=None if best is None else dynamic_errors(best, dyn).E2,
                t_med=float(np.median(cpu[m])),
                t_min=float(np.min(cpu[m])),
            )
        a, b = row["lg"]["tf"], row["lg2"]["tf"]
        row["same_optimum"] = bool(a is not None and b is not None and abs(a - b) < 1e-3)
        rows.append(row)
        print(
            f"[pendulum, starts] N = {N}: "
            + ", ".join(f"{m} t_f {row[m]['tfs']} its {row[m]['iterations']} E2 {row[m]['E2']}" for m in trs)
        )
    return rows


def replay_drift(dyn, t_u, U, x0, tf, goal, kind: str = "poly", u_fn=None) -> float:
    """Replay a plan's inputs from x0 with RK45 on the continuous dynamics: ‖x(t_f) − goal‖∞."""
    nq = dyn.nq
    if u_fn is None:
        u_fn = (
            (lambda t: np.array([np.interp(t, t_u, U[:, j]) for j in range(U.shape[1])]))
            if kind == "foh"
            else (lambda t: U[min(int(t / (t_u[1] - t_u[0])), len(U) - 1)])
        )  # zoh on a uniform grid

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
    spec = dict(
        pendulum=list(Ns_p),
        cartpole=list(Ns_c),
        rounds=rounds,
        tf_guess=DRAKE_TF_GUESS,
        cartpole_urdf=str(ROOT / "urdf" / "cartpole.urdf"),
    )
    out = external(py, "drake", DRAKE, [json.dumps(spec)])
    if "pendulum" not in out:
        return dict(error=out.get("note", "drake failed"))
    for key, dyn, goal, tf_of in (
        ("pendulum", pend_dyn, [np.pi, 0.0], lambda r: r["t"][-1]),
        ("cartpole", cart_dyn, [1.0, np.pi, 0.0, 0.0], lambda r: 2.0),
    ):
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
    for name, model, n, goal, R in (
        ("pendulum", "pendulum", int(np.ceil(tf_pendulum / dt)), ["pi"], 0.01),
        ("cartpole", "cartpole", int(round(2.0 / dt)), [1.0, "pi"], 0.02),
    ):
        nq = len(goal)
        task = load_task(
            dict(
                name=name,
                model=model,
                dt=dt,
                horizon=n,
                start={"q": [0.0] * nq},
                goal={"q": goal},
                reference={"type": "goal"},
                weights={"Q": [0.0] * 2 * nq, "R": R, "Qf": [1e5] * nq + [1e4] * nq},
                input_limits="model",
                optimizer={"method": "ddp", "max_iterations": 300},
                initial_guess="zero",
            )
        )
        vi = make_system(task)
        cpu = []
        for _ in range(rounds):
            c0 = time.process_time()
            plan, res = plan_task(vi, task)
            cpu.append(time.process_time() - c0)
        dyn = SecondOrderDynamics(vi.robot)
        g = np.array([np.pi if v == "pi" else v for v in goal] + [0.0] * nq)
        drift = replay_drift(dyn, plan.times[:-1], plan.U, np.zeros(2 * nq), plan.times[-1], g)
        out.append(
            dict(
                problem=name,
                steps=n,
                dt=dt,
                iterations=res.iterations,
                converged=res.converged,
                t_med=float(np.median(cpu)),
                t_min=float(np.min(cpu)),
                drift=drift,
                q_end=plan.X[-1, :nq].tolist(),
            )
        )
        print(f"[ddp] {name}: {res}")
    return out


def colloc_drift(dyn, sol, goal) -> float:
    return replay_drift(
        dyn, None, None, np.concatenate([sol.Q[0], sol.V[0]]), sol.tf, np.asarray(goal), u_fn=lambda t: sol.u([t])[0]
    )


def gait_rows(Ns, rounds) -> tuple[list[dict], list[dict], dict]:
    """The gait sweep in both formulations (floating base + stance constraint, E^[2] over its 7 coordinates; stance
    foot as the root, E^[2] over the 5 absolute link angles as in MorenoMartin2022), and the VI replay."""
    from vi_control.integrators.midpoint import MidpointVI

    gait = BipedGait(load_bundled("biped5_stance"))
    pinned = PinnedBipedGait(load_bundled("biped5_pinned"), floating=gait)
    same = lambda a, b: abs(a.objective - b.objective) < 0.01 * abs(b.objective)  # noqa: E731
    rows = {}
    for name, g, coords in (("biped", gait, None), ("biped_pinned", pinned, ABSOLUTE)):
        rows[name] = sweep(
            name,
            g.dynamics,
            lambda dyn, m, N, g=g: g.problem(m, N),
            dict(tf=g.step_time, guess=g.guess()),
            Ns,
            rounds,
            same=same,
            coordinates=coords,
        )
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
    replay = dict(
        N=N,
        mismatch=cycle.polish_mismatch,
        newton=cycle.residuals,
        shift=cycle.shift,
        deviation=dev.tolist(),
        perturbed=dev_perturbed,
        open_loop=dev_open,
        sol=sol,
        gait=gait,
        walked=walked,
        vi=vi,
    )
    return rows["biped"], rows["biped_pinned"], replay


def run(rounds: int, Ns_p, Ns_c, Ns_b, external_tools: bool, out_dir: Path, ddp_dt: float = 0.02) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    pend = SecondOrderDynamics(load_bundled("pendulum"))
    cart = SecondOrderDynamics(load_bundled("cartpole"))
    res = dict(load=os.getloadavg()[0], rounds=rounds)
    res["pendulum"] = sweep(
        "pendulum",
        pend,
        P.pendulum_min_time,
        dict(**P.pendulum_boundary(), guess=P.pendulum_guess()),
        Ns_p,
        rounds,
        same=lambda a, b: abs(a.tf - b.tf) < 1e-3,
    )
    # fixed t_f: the objectives of one optimum differ by the discretization (3 % at N = 10), other optima by more
    res["cartpole"] = sweep(
        "cartpole",
        cart,
        P.cartpole_swingup,
        P.cartpole_boundary(),
        Ns_c,
        rounds,
        same=lambda a, b: abs(a.objective - b.objective) < 0.05 * abs(b.objective),
    )
    res["pendulum_starts"] = multistart(pend, Ns_p, rounds)
    res["gravity_floor"] = {N: P.bang_bang_gravity_interpolation_error(N) for N in Ns_p}
    N20 = 20 if 20 in Ns_p else Ns_p[-1]
    sols = [
        Transcription(P.pendulum_min_time(pend, m, N20)).solve(**P.pendulum_boundary(), guess=P.pendulum_guess())
        for m in ("lg", "lg2")
    ]
    res["pendulum_solutions"] = sols
    res["drift"] = {
        f"{m} N={N20}": colloc_drift(pend, s, [np.pi, 0.0]) for m, s in zip(("LG", "LG2"), sols, strict=True)
    }
    res["ddp"] = ddp_rows(sols[1].tf, rounds, ddp_dt)
    res["drake"] = drake_rows(pend, cart, Ns_p, Ns_c, rounds) if external_tools else None
    res["biped"], res["biped_pinned"], replay = gait_rows(Ns_b, max(1, rounds // 2)) if Ns_b else ([], [], None)
    if Ns_b is None:  # --skip-biped: keep the previous run's biped rows (marked as such in the report)
        old = out_dir / "collocation.json"
        prev = json.loads(old.read_text()) if old.exists() else {}
        res["biped"], res["biped_pinned"] = prev.get("biped", []), prev.get("biped_pinned", [])
        res["biped_from"], res["replay_prev"] = "carried over from the previous run", prev.get("replay")
    plots(res, replay, pend, out_dir)
    res["replay"] = (
        res.pop("replay_prev", None)
        if replay is None
        else {k: replay[k] for k in ("N", "mismatch", "newton", "shift", "deviation", "perturbed", "open_loop")}
    )
    report(res, out_dir)
    return res


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
