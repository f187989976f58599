"""Plan hand-over on a running clock, run after run: the test and benchmarks/bench_ros.py.

A real-time simulator (Δt = 50 ms, a 15 N·m pendulum) publishes /clock; planner and controller run on it. Per
run: the controller is deactivated (zero torque), the pendulum reset to rest at the bottom, the controller
activated and the planner asked to re-plan. The planner states when its plan starts (the measured time plus
its expected solve time); the controller holds until then and enters the plan. A run records the entry (plan
step at the first command, that state's time and the plan's start) and the final distance from upright.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

STRONG = "{gravity: [0.0, 0.0, -9.8], actuated: [{joint: theta, effort_limit: 15.0}]}"
# A 2.5 s swing-up (N = 50, Δt = 50 ms) under |u| ≤ 12 N·m on the 15 N·m pendulum: feedback keeps 3 N·m.
FAST_TASK = """name: pendulum_swingup_fast
model: pendulum
dt: 0.05
horizon: 50
start: {q: [0.0], qdot: [0.0]}
goal: {q: [pi]}
reference: {type: step, step_index: 25}
weights: {Q: [100.0, 1.0], R: 0.1, Qf: [1000.0, 10.0]}
input_limits: [12.0]
optimizer: {method: ddp, max_iterations: 100, tolerance: 1.0e-6}
initial_guess: auto
lqr: {Q: [100.0, 1.0], R: 1.0, Qf: [100.0, 1.0]}
hold: {Q: [100.0, 1.0], R: 1.0}
"""
DT, HORIZON = 0.05, 50
ENTERED = re.compile(r"entered plan (\d+) at k=(\d+) \(state t=([-\d.]+), plan start t0=([-\d.]+)\)")


def entries(log: str) -> list[tuple[int, int, float, float]]:
    """(plan, k, state time, stated plan start) of every "entered plan" line of a controller log."""
    return [(int(a), int(b), float(c), float(d)) for a, b, c, d in ENTERED.findall(log)]


PUBLISHED = re.compile(r"request \d+ \((\w+) from [^)]*\): published plan (\d+)")


def published_kinds(planner_log: str) -> dict[int, str]:
    """plan -> the kind of request it was published for (``mpc``: a cycle; ``task``, ``goal``…: a plan of its own,
    the start-up's or a restart's) from a planner log's "request n (kind from source): published plan" lines."""
    return {int(seq): kind for kind, seq in PUBLISHED.findall(planner_log)}


RETIMED_BY = re.compile(r"entered plan (\d+) at k=\d+ \([^)]*\), re-timed by (\d+) steps")


def retimed_steps(log: str) -> dict[int, int]:
    """plan -> the whole steps m by which the controller re-timed it (it runs from t₀ + m·Δt)."""
    return {int(a): int(b) for a, b in RETIMED_BY.findall(log)}


RETIMED_TO = re.compile(r"entered plan (\d+) at k=\d+ \([^)]*\), re-timed by \d+ steps \(to t0=([-\d.]+)\)")


def retimed_starts(log: str) -> dict[int, float]:
    """plan -> the start t₀ + m·Δt the controller re-timed it to (its log: "re-timed by m steps (to t0=…)")."""
    return {int(a): float(b) for a, b in RETIMED_TO.findall(log)}


def upright_error(q: float) -> float:
    return abs((q - np.pi + np.pi) % (2 * np.pi) - np.pi)


def handover_runs(session, runs: int, discovery: float = 30.0) -> list[dict]:
    """``session``: ros_session.Session (the tests' ``ros`` fixture). Returns one dict per run."""
    from lifecycle_msgs.msg import Transition
    from std_srvs.srv import Trigger

    task = Path(session.log_dir) / "task_fast.yaml"
    task.write_text(FAST_TASK)
    model = dict(model="pendulum", system_yaml=STRONG)
    sim = session.start("simulator_node", **model, dt=DT, mode="realtime")
    planner = session.start(
        "planner_node", **model, task=str(task), plan_on_startup=False, use_sim_time=True, expected_solve_time=2.0
    )
    ctrl = session.start("controller_node", **model, dt=DT, trigger="joint_state", use_sim_time=True, state_timeout=0.5)
    rec = session.recorder(["theta"])
    if not rec.wait_for(lambda: rec.states and rec.count_publishers(rec.cmd_pub.topic_name) > 1, discovery):
        raise TimeoutError("nodes not heard\n" + sim.log() + ctrl.log())
    if not planner.wait_for_log("first state to plan from", discovery):
        raise TimeoutError("the planner hears no joint state\n" + planner.log())
    out = []
    for _ in range(runs):
        assert rec.transition("vi_controller", Transition.TRANSITION_DEACTIVATE), ctrl.log()
        assert rec.call(Trigger, "vi_simulator/reset", Trigger.Request()).success
        time.sleep(0.3)
        assert rec.transition("vi_controller", Transition.TRANSITION_ACTIVATE), ctrl.log()
        n = len(entries(ctrl.log()))
        assert rec.call(Trigger, "vi_planner/replan", Trigger.Request()).success
        if not rec.wait_for(lambda n=n: len(entries(ctrl.log())) > n, 60.0):
            raise TimeoutError("no plan entered\n" + planner.log()[-3000:])
        seq, k, t, t0 = entries(ctrl.log())[-1]
        # the plan runs from its entry (its stated start, or its arrival if re-timed)
        if not rec.wait_for(lambda t_end=t + HORIZON * DT + 1.0: rec.states[-1][1] > t_end, 30.0):
            raise TimeoutError("the simulation stopped")
        with rec.lock:
            tail = [s[2][0] for s in rec.states[-5:]]
        out.append(
            dict(
                seq=seq,
                k=k,
                t=t,
                t0=t0,
                offset_steps=(t - t0) / DT,
                retimed=seq in retimed_steps(ctrl.log()),
                final=max(upright_error(q) for q in tail),
            )
        )
    return out


def on_time(run: dict) -> bool:
    """Entered within ±1 step of the plan's stated start."""
    return abs(run["t"] - run["t0"]) <= DT + 1e-9 and run["k"] <= 1


def handover_ok(run: dict) -> bool:
    """No step skipped (entered on time, or late but re-timed with the robot still at X_0: k = 0), swung up and
    held within 0.05 rad of upright."""
    return (on_time(run) or (run["retimed"] and run["k"] == 0)) and run["final"] < 0.05
