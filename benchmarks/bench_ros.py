"""ROS layer benchmark: controller tick latency and the simulator node's real-time factor.

1. Controller latency (joint state published -> effort command received) at 500 Hz and 1 kHz on panda
   (7 DOF): the controller node (its own process, ``trigger: joint_state``) holds a configuration with
   the equilibrium law u = U_final + K_final (X_N − x); this process publishes joint states stamped with
   the wall clock at the given rate and receives the commands (paired one to one, in order). Baseline in the
   same process: the compute part of a tick (StateEstimator.update + TrackingController.command).
2. Simulator real-time factor for arm7 (urdf/arm7.urdf) and panda at Δt = 1 ms, ``mode: realtime`` with
   ``max_speed``: simulated time / wall time from the joint states received here. Baseline in the same
   process: MidpointVI.step in a plain loop (no ROS).

    .venv/bin/python benchmarks/bench_ros.py              # 5 s per latency case, 5 s per RTF case
    .venv/bin/python benchmarks/bench_ros.py --seconds 2  # quick look

Prints a markdown table (copied into docs/ros.md). Wall-clock numbers from a shared
2-core machine: compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pinocchio as pin
import rclpy
from sensor_msgs.msg import JointState
from std_msgs.msg import UInt8MultiArray

from vi_control.control.plan import Plan
from vi_control.control.tracking import StateEstimator, TrackingController
from vi_control.integrators import make_integrator
from vi_control.ros.common import LATCHED_QOS, MODEL_PARAMETERS, robot_from_parameters
from vi_control.ros.launcher import NodeProcess, domain_id_for, run_namespace, set_domain
from vi_control.ros.messages import plan_to_message, split_seconds
from vi_control.ros.recorder import Recorder

PANDA = "erd:panda"  # example-robot-data's panda (fingers locked: 7 DOF)


def _robot(model: str):
    return robot_from_parameters({k: v[0] for k, v in MODEL_PARAMETERS.items()} | {"model": model, "system_yaml": ""})


def hold_plan(vi) -> Plan:
    """Two-step plan at a bent configuration, gravity held by the static torque."""
    q = np.linspace(0.1, 0.7, vi.nq)
    x = vi.state_from_velocity(q, np.zeros(vi.nq))
    tau = pin.computeGeneralizedGravity(vi.robot.pin_model, vi.robot.create_data(), q)[: vi.nu].copy()
    # A dense gain (its cost is what is timed) with 50·I on q, so each command identifies its state.
    K = np.hstack([50.0 * np.eye(vi.nq), np.random.default_rng(0).normal(size=(vi.nu, vi.nq))])
    return Plan(times=np.array([0.0, vi.dt, 2 * vi.dt]), X=np.tile(x, (3, 1)), U=np.tile(tau, (2, 1)),
                K=np.tile(K, (2, 1, 1)), dt=vi.dt, model_name=vi.robot.name, model_hash=vi.robot.hash,
                joint_names=vi.robot.joint_names,
                input_names=list(vi.robot.actuated), K_final=K, U_final=tau)


def expected_commands(vi, plan: Plan, q: np.ndarray, delta: float, n: int, j: int) -> np.ndarray:
    """Entry j of the hold law's command for state i = 0 … n−1 (joint 1 offset by i·δ, q̇ = 0), as the controller
    forms it: x_i = the discrete state of the configuration pair (q_i, q_i) (state_estimate: velocities)."""
    out = np.empty(n)
    for i in range(n):
        qi = q.copy()
        qi[0] += i * delta
        out[i] = plan.U_final[j] + plan.K_final[j] @ vi.state.diff(vi.state_from_configurations(qi, qi), plan.X[-1])
    return out


def match_commands(values: np.ndarray, expected: np.ndarray, window: int = 20) -> np.ndarray:
    """Index i of the state each received command value answers (−1 if none): the nearest expected value
    within ``window`` of the linear estimate, accepted when closer than 5 % of the spacing of the expected values."""
    slope = (expected[-1] - expected[0]) / max(len(expected) - 1, 1)
    out = np.full(len(values), -1)
    for m, v in enumerate(values):
        i0 = int(round((v - expected[0]) / slope))
        lo, hi = max(i0 - window, 0), min(i0 + window + 1, len(expected))
        if lo >= hi:
            continue
        i = lo + int(np.argmin(np.abs(expected[lo:hi] - v)))
        if abs(expected[i] - v) < 0.05 * abs(slope):
            out[m] = i
    return out


def controller_latency(rate: float, seconds: float, log_dir: str, warmup: float = 1.0) -> dict:
    robot, _ = _robot(PANDA)
    dt = 1.0 / rate
    domain = domain_id_for(f"bench_ros_latency_{rate}")
    set_domain(domain)
    params = dict(model=PANDA, dt=dt, trigger="joint_state", state_estimate="velocities", state_timeout=1.0)
    ns = run_namespace(f"latency{rate}")
    ctrl = NodeProcess("controller_node", domain, overrides=params, log_dir=log_dir, name=f"controller_{int(rate)}",
                       namespace=ns)
    rclpy.init(domain_id=domain)
    rec = Recorder(robot.joint_names, record_states=False, namespace=ns)  # it publishes the states
    try:
        vi = make_integrator("midpoint", robot, dt)
        plan = hold_plan(vi)
        pub = rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS)
        pub.publish(plan_to_message(plan, 1, start_on_receipt=True))
        assert ctrl.wait_for_log("accepted plan", 120.0), ctrl.log()
        assert rec.wait_for(lambda: rec.state_pub.get_subscription_count() > 0, 60.0)
        # Joint 1 is offset by i·δ in state i, so each received command names the state it answers (drops are
        # counted): its entry j is compared with the law's command for every state, computed here beforehand.
        q, delta = plan.X[0, : vi.nq], 1e-6
        j = int(np.argmax(np.abs(plan.K_final[:, 0])))
        n_warm = int(warmup * rate)
        n = int(seconds * rate) + n_warm
        expected = expected_commands(vi, plan, q, delta, n, j)
        sent: list[float] = []
        t_next = time.perf_counter()
        for i in range(n):  # the first `warmup` seconds are discarded
            qi = q.copy()
            qi[0] += i * delta
            msg = JointState(name=robot.joint_names, position=qi.tolist(), velocity=np.zeros(vi.nq).tolist())
            msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(i * dt)
            t_next += dt
            wait = t_next - time.perf_counter()
            if wait > 0:
                time.sleep(wait)  # not a busy wait: the machine has two cores
            sent.append(time.monotonic())
            rec.state_pub.publish(msg)
        rec.wait_for(lambda: len(rec.commands) >= len(sent), 5.0)
        lat, unmatched = [], 0
        idx = match_commands(np.array([u[j] for _, u in rec.commands]), expected)
        for (t_recv, _), i in zip(rec.commands, idx):
            if i < 0:
                unmatched += 1
            elif i >= n_warm:
                lat.append((t_recv - sent[i]) * 1e3)
        print(f"[bench_ros] {rate:g} Hz: {unmatched} commands not matched to a state")
        received = len(rec.commands)
        # the same tick's compute, in this process
        est = StateEstimator(vi, "velocities")
        law = TrackingController(plan, vi.state, robot.effort_limits, continuous_mask=robot.continuous_mask)
        t0 = time.perf_counter()
        for i in range(2000):
            x = est.update(i * dt, q, np.zeros(vi.nq))
            law.command(5, x)
        compute = (time.perf_counter() - t0) / 2000 * 1e3
        return dict(rate=rate, sent=len(sent), received=received, matched=len(lat) + int(np.sum(
                    (idx >= 0) & (idx < n_warm))), unmatched=unmatched, p50=np.percentile(lat, 50),
                    p99=np.percentile(lat, 99), compute=compute)
    finally:
        rec.close()
        ctrl.stop()
        rclpy.try_shutdown()


def simulator_rtf(model: str, seconds: float, log_dir: str, dt: float = 1e-3) -> dict:
    robot, _ = _robot(model)
    vi = make_integrator("midpoint", robot, dt)
    x = vi.state_from_velocity(np.linspace(0.1, 0.7, vi.nq), np.zeros(vi.nq))
    u = np.zeros(vi.nu)
    t0, k = time.perf_counter(), 0
    while time.perf_counter() - t0 < min(seconds, 2.0):
        x = vi.step(x, u)
        k += 1
    core_rtf = k * dt / (time.perf_counter() - t0)
    key = model.replace(":", "_")
    domain = domain_id_for(f"bench_ros_rtf_{key}")
    set_domain(domain)
    sim = NodeProcess("simulator_node", domain, overrides=dict(model=model, system_yaml="", dt=dt, mode="realtime",
                                                               max_speed=True, initial_positions=[0.0] * vi.nq,
                                                               initial_velocities=[0.0] * vi.nq),
                      log_dir=log_dir, name=f"sim_{key}", namespace=run_namespace(key))
    rclpy.init(domain_id=domain)
    rec = Recorder(robot.joint_names, namespace=run_namespace(key))
    try:
        assert rec.wait_for(lambda: len(rec.states) > 100, 120.0), sim.log()
        time.sleep(1.0)  # warm-up
        with rec.lock:
            a = rec.states[-1]
        time.sleep(seconds)
        with rec.lock:
            b = rec.states[-1]
        node_rtf = (b[1] - a[1]) / (b[0] - a[0])
        return dict(model=model, nq=vi.nq, core=core_rtf, node=node_rtf)
    finally:
        rec.close()
        sim.stop()
        rclpy.try_shutdown()


def run(seconds: float, rates: tuple[float, ...] = (500.0, 1000.0), models: tuple[str, ...] = ("arm7", PANDA),
        warmup: float = 1.0) -> tuple[str, list[dict], list[dict]]:
    """Both measurements; returns the markdown table, the latency rows and the real-time-factor rows."""
    log_dir = tempfile.mkdtemp(prefix="bench_ros_")
    lines = ["| controller (panda, 7 DOF) | sent / received / matched | latency p50 [ms] | latency p99 [ms] | "
             "compute per tick, same process [ms] | p50 / compute |", "|---|---|---|---|---|---|"]
    lat_rows, rtf_rows = [], []
    for rate in rates:
        r = controller_latency(rate, seconds, log_dir, warmup)
        lat_rows.append(r)
        lines.append(f"| {rate:.0f} Hz | {r['sent']} / {r['received']} / {r['matched']} | {r['p50']:.3f} | "
                     f"{r['p99']:.3f} | {r['compute']:.3f} | {r['p50'] / r['compute']:.1f} |")
    lines += ["", "| simulator, Δt = 1 ms, realtime + max_speed | nq | real-time factor, node | "
                  "real-time factor, MidpointVI.step loop (same process) | node / loop |", "|---|---|---|---|---|"]
    for model in models:
        r = simulator_rtf(model, seconds, log_dir)
        rtf_rows.append(r)
        lines.append(f"| {model} | {r['nq']} | {r['node']:.2f} | {r['core']:.2f} | {r['node'] / r['core']:.2f} |")
    lines.append(f"\n(load average during the run: {' / '.join(f'{v:.1f}' for v in os.getloadavg())}; "
                 f"{os.cpu_count()} cores; node logs in {log_dir})")
    return "\n".join(lines), lat_rows, rtf_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    print(run(args.seconds)[0])


if __name__ == "__main__":
    main()
