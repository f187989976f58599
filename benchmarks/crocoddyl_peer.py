"""Crocoddyl side of benchmarks/bench_planner.py: a worker process in the peer venv (Crocoddyl 3.2.0, Pinocchio 3.9.0;
it cannot share a process with the project, whose Pinocchio is 4.1), driven over stdin/stdout one JSON line at a
time so that its solves interleave with ours round by round under the same machine load.

Protocol: {"cmd": "setup", "tasks": {name: spec}} → {"ready": [...]}; {"cmd": "solve", "task": name, "build": bool}
→ one result (CPU and wall time of the solve alone; with ``build``, after the problem is rebuilt, and the CPU time of
that; iterations, converged, cost, ‖q_N − q_goal‖∞); {"cmd": "cycle", "task", "x0", "start", "length",
"max_iterations"} → one MPC cycle (``Task.cycle``); {"cmd": "quit"}.

Each task spec (bench_planner.task_spec, from the project's task YAML) becomes Crocoddyl's own C++ models: free
forward dynamics of the same URDF (continuous joints as revolute, so q is the angle as in vi_control), explicit Euler
at the task's Δt (``IntegratedActionModelEuler``: C++ throughout, the cheapest integrator it offers), the task's
weights on (q, v) where vi_control weights (q, p) (p = M(q)q̇: the same for the unit pendulum), running costs
scaled by 1/Δt because Euler multiplies them by Δt, the input reference of the task. Underactuation (cart-pole,
acrobot): full actuation with the passive joint's torque boxed to [0, 0]; input bounds: ``SolverBoxFDDP``
(unbounded: ``SolverFDDP``). The goal as a terminal equality constraint (``terminal_constraint``): the same method of
multipliers as planning/augmented.py (same ρ₀, ρ ← 10ρ when ‖h‖∞ did not shrink ×4, λ ← λ + ρh, the same inner
tolerances, iteration budget over all subproblems, each subproblem warm-started at the last solution) with
Crocoddyl solving every subproblem — Crocoddyl 3.2 has no solver for equality constraints together with input
bounds. Initial guess: the rollout of the task's initial inputs, or states given with them (``X0``, in (q, v)).
"""

from __future__ import annotations

import json
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np

try:  # only in the peer venv; the project's smoke test imports this module for ``revolute`` alone
    import crocoddyl
    import pinocchio as pin
except ImportError:
    crocoddyl = pin = None

PENALTY_MAX = 1e9  # as planning/augmented.py


def revolute(xml: str) -> str:
    """Continuous joints as revolute ones (nq = 1: q is the angle, as in vi_control; Pinocchio gives a continuous
    joint (cos, sin)), with position limits that never bind (free forward dynamics ignores them anyway)."""
    root = ET.fromstring(xml)
    for joint in root.iter("joint"):
        if joint.get("type") == "continuous":
            joint.set("type", "revolute")
            limit = joint.find("limit")
            if limit is None:
                limit = ET.SubElement(joint, "limit", effort="0", velocity="0")
            limit.set("lower", "-100")
            limit.set("upper", "100")
    return ET.tostring(root, encoding="unicode")


class Task:
    def __init__(self, spec: dict):
        self.spec = spec
        model = pin.buildModelFromXML(revolute(spec["urdf_xml"]))
        model.gravity.linear[:] = spec["gravity"]
        self.N, self.dt, self.model = spec["N"], spec["dt"], model
        self._build()
        self.last = None  # (the last solution's window start, xs, us): the next cycle's warm start
        self.us0 = [np.array(u) for u in spec["U0"]]

    def _build(self) -> None:
        """The problem from the task's numbers: state, actuation, the running, terminal and hold action models with
        their costs, the ShootingProblem — what a cold plan builds before it solves (the Pinocchio model, like our
        system, is built once)."""
        spec, model = self.spec, self.model
        self.state = crocoddyl.StateMultibody(model)
        self.actuation = crocoddyl.ActuationModelFull(self.state)
        nv = model.nv
        self.x0 = np.array(spec["x0"])
        self.goal = np.array(spec["goal"])
        X_ref, u_ref = np.array(spec["X_ref"]), np.array(spec["u_ref"])
        act = spec["actuated"]
        passive = [i for i in range(nv) if i not in act]
        R = np.array(spec["R"], float)
        if spec.get("passive", "box") == "box":  # passive joints: torque boxed to [0, 0]
            lo, hi = np.zeros(nv), np.zeros(nv)
        else:  # passive torque penalized (R = 1e8) instead, unbounded
            lo, hi = np.full(nv, -np.inf), np.full(nv, np.inf)
            R[passive] = 1e8
        self.R = R
        lo[act], hi[act] = -np.array(spec["limits"]), np.array(spec["limits"])
        self.bounded, self.nq = bool(spec["bounded"]), model.nq
        self.running = [self._action(X_ref[k], u_ref[k], False, lo, hi) for k in range(self.N)]
        self.terminal = self._action(X_ref[self.N], None, True, lo, hi)
        # a receding window past the task's end holds the goal (planning.mpc's windows after the deadline)
        self.hold = self._action(X_ref[self.N], u_ref[-1], False, lo, hi)
        self.problem = crocoddyl.ShootingProblem(self.x0, self.running, self.terminal)

    def _action(self, xref, uref, terminal, lo, hi):
        s = self.spec
        costs = crocoddyl.CostModelSum(self.state, self.actuation.nu)
        w = 1.0 if terminal else 1.0 / self.dt  # Euler scales running costs by Δt; vi_control's cost is a plain sum
        xres = crocoddyl.ResidualModelState(self.state, np.array(xref), self.actuation.nu)
        act = crocoddyl.ActivationModelWeightedQuad(np.array(s["Qf" if terminal else "Q"], float))
        costs.addCost("x", crocoddyl.CostModelResidual(self.state, act, xres), w)
        if not terminal:
            ures = crocoddyl.ResidualModelControl(self.state, np.array(uref))
            act_u = crocoddyl.ActivationModelWeightedQuad(self.R)
            costs.addCost("u", crocoddyl.CostModelResidual(self.state, act_u, ures), w)
        dam = crocoddyl.DifferentialActionModelFreeFwdDynamics(self.state, self.actuation, costs)
        if self.spec["bounded"]:
            dam.u_lb, dam.u_ub = lo, hi
        return crocoddyl.IntegratedActionModelEuler(dam, 0.0 if terminal else self.dt)

    def _solver(self):
        return crocoddyl.SolverBoxFDDP(self.problem) if self.bounded else crocoddyl.SolverFDDP(self.problem)

    def _terminal(self, W: np.ndarray, target: np.ndarray) -> None:
        item = self.terminal.differential.costs.costs["x"].cost
        item.activation.weights = W
        item.residual.reference = target

    def solve(self, build: bool = False) -> dict:
        """The solve of the problem built at setup (``cpu_ms``, ``wall_ms``); ``build``: a cold plan — the problem
        first rebuilt from the task's numbers (its CPU time ``build_ms``), then solved."""
        s = self.spec
        b0 = time.process_time()
        if build:
            self._build()
        build_s = time.process_time() - b0
        c0, t0 = time.process_time(), time.perf_counter()
        # (a given state guess, in (q, v): FDDP starts from it with its gaps, else the rollout of the inputs)
        xs0 = [np.array(x) for x in s["X0"]] if s.get("X0") else self.problem.rollout(self.us0)
        if not s["terminal_constraint"]:
            solver = self._solver()
            solver.th_stop = s["tolerance"]
            ok = solver.solve(xs0, self.us0, s["max_iterations"])
            its, outer, solver_last = solver.iter, 0, solver
        else:
            ok, its, outer, solver_last = self._augmented_lagrangian(xs0)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        xN = np.array(solver_last.xs[-1])
        self.last = (0, list(solver_last.xs), list(solver_last.us))  # (an MPC loop's first warm start)
        return dict(
            cpu_ms=cpu * 1e3,
            wall_ms=wall * 1e3,
            build_ms=build_s * 1e3,
            iterations=int(its),
            outer=outer,
            converged=bool(ok),
            cost=float(solver_last.cost),
            goal_error=float(np.abs(xN - self.goal)[: self.nq].max()),
            stop=float(solver_last.stop),
        )

    def cycle(self, x0: list, start: int, length: int, max_iterations: int) -> dict:
        """One MPC cycle as Crocoddyl's users write it: the window [start, start + length) of the task (the goal
        held past its end) from x0, warm from the last solution shifted to the window (entries passed dropped, the
        last repeated), xs[0] = x0, at most ``max_iterations``. CPU of the solve, and of building the window's problem
        and solver."""
        c0 = time.process_time()
        models = [self.running[k] if k < self.N else self.hold for k in range(start, start + length)]
        problem = crocoddyl.ShootingProblem(np.array(x0, float), models, self.terminal)
        solver = crocoddyl.SolverBoxFDDP(problem) if self.bounded else crocoddyl.SolverFDDP(problem)
        solver.th_stop = self.spec["tolerance"]
        if self.last is None:  # (the task's initial inputs, the last repeated past their end)
            us = list(self.us0[start : start + length])
            us += [self.us0[-1]] * (length - len(us))
            xs = problem.rollout(us)
        else:
            s0, xl, ul = self.last
            shift = start - s0
            xs = [np.array(x) for x in xl[shift:]] + [np.array(xl[-1])] * max(0, length + 1 - (len(xl) - shift))
            us = [np.array(u) for u in ul[shift:]] + [np.array(ul[-1])] * max(0, length - (len(ul) - shift))
            xs, us = xs[: length + 1], us[:length]
            xs[0] = np.array(x0, float)
        c1 = time.process_time()
        ok = solver.solve(xs, us, max_iterations)
        c2 = time.process_time()
        self.last = (start, list(solver.xs), list(solver.us))
        return dict(cpu_ms=(c2 - c1) * 1e3, build_ms=(c1 - c0) * 1e3, iterations=int(solver.iter), converged=bool(ok))

    def _augmented_lagrangian(self, xs0):
        s = self.spec
        Qf, tol, ctol = np.array(s["Qf"], float), s["tolerance"], s["constraint_tolerance"]
        nx = len(self.goal)
        lam, rho, h_prev, violation = np.zeros(nx), float(s["penalty"]), np.inf, np.inf
        xs, us, total, ok = xs0, self.us0, 0, False
        solver, outer = None, 0
        while outer < 30:
            outer += 1
            W = Qf + rho
            self._terminal(W, self.goal - lam / W)
            final = violation <= 10 * ctol
            inner_tol = tol if final else float(np.clip(1e-2 * rho * h_prev**2, tol, 1e-1))
            budget = s["max_iterations"] - total
            if budget < 1:
                break
            solver = self._solver()
            solver.th_stop = inner_tol
            sub_ok = solver.solve(xs, us, budget)
            total += solver.iter
            xs, us = list(solver.xs), list(solver.us)
            h = np.array(xs[-1]) - self.goal
            violation = float(np.abs(h).max())
            if violation <= ctol and sub_ok and inner_tol <= tol:
                ok = True
                break
            if not sub_ok and solver.iter < budget:
                break
            lam = lam + rho * h
            if violation > 0.25 * h_prev:
                rho = min(10 * rho, PENALTY_MAX)
            h_prev = violation
        self._terminal(Qf, self.goal)
        return ok, total, outer, solver


def main() -> None:
    tasks: dict[str, Task] = {}
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "setup":
            tasks = {name: Task(spec) for name, spec in msg["tasks"].items()}
            out = {"ready": sorted(tasks), "version": crocoddyl.__version__, "pinocchio": pin.__version__}
        elif msg["cmd"] == "solve":  # ``warm_s``: first solve once, then again and again for that much CPU, untimed
            task, warm = tasks[msg["task"]], float(msg.get("warm_s", 0.0))
            if warm:
                task.solve()
            t0 = time.process_time()
            while time.process_time() - t0 < warm:
                task.solve()
            out = task.solve(bool(msg.get("build")))
        elif msg["cmd"] == "cycle":
            out = tasks[msg["task"]].cycle(msg["x0"], msg["start"], msg["length"], msg["max_iterations"])
        else:
            break
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
