"""ROS layer benchmark: controller tick latency and answered share, simulator real-time factor, plan hand-over.

1. Controller latency (joint state published -> effort command received) at 500 Hz and 1 kHz on panda
   (7 DOF): the controller node (its own process, EventsExecutor, ``trigger: joint_state``) holds a
   configuration with its equilibrium law; this process publishes joint states stamped with the wall clock at
   the given rate (serialized before the send is timed, as a C++ driver's Python would not be) and a separate
   process receives the commands (no GIL shared with the sender; both note CLOCK_MONOTONIC). Each state's
   joint 1 is offset by i·δ, so each command names the state it answers: latency per answered state,
   p50/p99/max, the share of states answered (after a 1 s warm-up) and the sender's own period p99 (a late
   sender bunches two states, and a depth-1 subscriber rightly answers only the newer). Each rate with normal
   scheduling and with ``--priorities`` (SCHED_FIFO for the controller's ``realtime_priority``, the sender and
   the receiver, as ros2_control runs its loop and drivers). Baseline in the same process: the compute part
   of a tick (StateEstimator.update + TrackingController.command).
2. Simulator real-time factor for arm7 (urdf/arm7.urdf) and panda at Δt = 1 ms, ``mode: realtime`` with
   ``max_speed``: simulated time / wall time from the joint states received here. Baseline in the same
   process: MidpointVI.step in a plain loop (no ROS).
3. ``--handover N``: N swing-ups on a real-time clock (test/support/handover.py): the plan's start against the
   state the controller entered it at, and the final distance from upright.

    .venv/bin/python benchmarks/bench_ros.py              # 5 s per latency case, 5 s per RTF case
    .venv/bin/python benchmarks/bench_ros.py --seconds 2 --handover 10

Prints markdown tables (copied into docs/concepts/ros.md) with the load average before and after each part.
Wall-clock numbers from a shared 2-core machine: compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pinocchio as pin
import rclpy
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, UInt8MultiArray

from vi_control.control.hold import equilibrium_state
from vi_control.control.plan import Plan
from vi_control.control.tracking import StateEstimator, TrackingController
from vi_control.integrators import make_integrator
from vi_control.ros.common import (
    LATCHED_QOS,
    MODEL_PARAMETERS,
    SENSOR_STREAM_QOS,
    STREAM_QOS,
    make_executor,
    parameter_defaults,
    realtime_scheduling,
    robot_from_parameters,
)
from vi_control.ros.messages import plan_to_message

# the test harness (test/support: a run's node processes, the hand-over runs), which the package does not install
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "support"))
from handover import handover_ok, handover_runs, on_time  # noqa: E402
from ros_session import Session  # noqa: E402


def _robot(model: str):
    return robot_from_parameters(parameter_defaults(MODEL_PARAMETERS) | {"model": model, "system_yaml": ""})


def _load() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


def bent_configuration(vi) -> np.ndarray:
    """Mid-range of bounded joints (0 for unbounded ones), slightly bent: within every URDF limit (the simulator
    refuses initial positions beyond them, e.g. panda's joint 4 at 0)."""
    lo = np.array([j.lower for j in vi.robot.joints])
    hi = np.array([j.upper for j in vi.robot.joints])
    return np.where(np.isfinite(lo) & np.isfinite(hi), (lo + hi) / 2, 0.0) + np.linspace(0.1, 0.7, vi.nq) * 0.1


def hold_plan(vi) -> Plan:
    """Two-step plan at a bent configuration at rest, held by the static torque."""
    q = bent_configuration(vi)
    x = equilibrium_state(vi, q)
    tau = pin.computeGeneralizedGravity(vi.robot.pin_model, vi.robot.create_data(), q)[: vi.nu].copy()
    # A dense gain (its cost is what is timed) with 50·I on q, so each command identifies its state.
    K = np.hstack([50.0 * np.eye(vi.nq), np.random.default_rng(0).normal(size=(vi.nu, vi.nq))])
    return Plan(
        times=np.array([0.0, vi.dt, 2 * vi.dt]),
        X=np.tile(x, (3, 1)),
        U=np.tile(tau, (2, 1)),
        K=np.tile(K, (2, 1, 1)),
        dt=vi.dt,
        model_name=vi.robot.name,
        model_hash=vi.robot.hash,
        joint_names=vi.robot.joint_names,
        input_names=list(vi.robot.actuated),
        K_final=K,
        U_final=tau,
    )


_GRACE = 2.0  # s after the last state sent until the command receiver stops: 1000× the p99 latency measured


def command_clock(topic: str, capacity: int, out: str, j: int, seconds: float, priority: int) -> None:
    """Its own process (no GIL shared with the sender): receives the controller's commands raw, notes
    time.monotonic() (CLOCK_MONOTONIC, the sender's clock too) first, then entry j of the data."""
    rclpy.init()
    node = Node("bench_command_clock")
    times, values, n = np.zeros(capacity), np.zeros(capacity), [0]

    def on(buf: bytes) -> None:
        t = time.monotonic()
        if n[0] < capacity:
            times[n[0]] = t
            values[n[0]] = deserialize_message(buf, Float64MultiArray).data[j]
            n[0] += 1

    node.create_subscription(Float64MultiArray, topic, on, STREAM_QOS, raw=True)
    executor = make_executor()
    executor.add_node(node)
    if priority:
        why = realtime_scheduling(priority)
        if why:
            print(f"command clock: {why}", flush=True)
    while node.count_publishers(topic) < 1:
        executor.spin_once(timeout_sec=0.05)
    print("ready", flush=True)
    t_end = time.monotonic() + seconds  # a backstop: the sender says "stop" on stdin once its last state is answered
    while time.monotonic() < t_end and not select.select([sys.stdin], [], [], 0)[0]:
        executor.spin_once(timeout_sec=0.05)
    np.savez(out, times=times[: n[0]], values=values[: n[0]])
    node.destroy_node()
    rclpy.try_shutdown()


def controller_latency(rate: float, seconds: float, log_dir: str, warmup: float = 1.0, priority: int = 0) -> dict:
    """Joint states paced at ``rate`` from this process (pre-serialized: the sender's Python is not timed, as a
    C++ driver's would not be), commands received by a separate process; ``priority`` > 0: the controller node
    (``realtime_priority``), the sender and the receiver run SCHED_FIFO at that priority."""
    robot, _ = _robot("erd:panda")
    dt = 1.0 / rate
    session = Session(f"bench_ros_latency_{rate}_{priority}", log_dir)
    load_before = _load()
    clock = node = None
    try:
        vi = make_integrator("midpoint", robot, dt)
        plan = hold_plan(vi)
        ctrl = session.start(
            "controller_node",
            name=f"controller_{int(rate)}_{priority}",
            model="erd:panda",
            dt=dt,
            trigger="joint_state",
            state_estimate="velocities",
            state_timeout=1.0,
            state_publish_rate=0.0,
            realtime_priority=priority,
        )
        node = Node("bench_state_sender", namespace=session.ns)
        state_pub = node.create_publisher(JointState, "joint_states", STREAM_QOS)
        plan_pub = node.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS)
        cmd_topic = f"{session.ns}/effort_controller/commands"
        n_warm = int(round(warmup * rate))  # warm-up states (discarded)
        n = int(round(seconds * rate)) + n_warm
        j = int(np.argmax(np.abs(plan.K_final[:, 0])))
        out = os.path.join(log_dir, f"commands_{int(rate)}_{priority}.npz")
        clock = subprocess.Popen(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--command-clock",
                cmd_topic,
                str(2 * n),
                out,
                str(j),
                str(n / rate + 30.0),
                str(priority),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        plan_pub.publish(plan_to_message(plan, 1, start_on_receipt=True))
        assert ctrl.wait_for_log("accepted plan", 120.0), ctrl.log()
        deadline = time.monotonic() + 60.0
        while state_pub.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert clock.stdout.readline().strip() == "ready", "command clock did not start"
        if priority:
            why = realtime_scheduling(priority)
            if why:
                print(f"sender: {why}")
        # Joint 1 is offset by i·δ in state i; with q̇ = 0 the command's entry j is u_0 − K[j, 0]·i·δ to first
        # order (the law, evaluated here, gives u_0 and the slope), so each command names the state it answers.
        q, delta = plan.X[0, : vi.nq].copy(), 1e-6
        law = TrackingController(plan, vi.state, robot.effort_limits, continuous_mask=robot.continuous_mask)
        est = StateEstimator(vi, "velocities")
        u0 = law.command(5, est.update(0.0, q, np.zeros(vi.nq)))[0][j]
        slope = -plan.K_final[j, 0] * delta
        msg = JointState(name=robot.joint_names, velocity=np.zeros(vi.nq).tolist())
        sent = np.zeros(n)
        t_next = time.monotonic()
        for i in range(n):
            qi = q.copy()
            qi[0] += i * delta
            msg.position = qi.tolist()
            t_next += dt
            msg.header.stamp = node.get_clock().now().to_msg()  # the controller judges stamps on its clock
            raw = serialize_message(msg)
            wait = t_next - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # not a busy wait: the machine has two cores
            sent[i] = time.monotonic()
            state_pub.publish(raw)
        if priority:
            realtime_scheduling(0)  # the analysis below (and its compute baseline) runs as before the sends
        time.sleep(_GRACE)  # the last commands in flight; then the receiver stops (it waited 30 s more before)
        clock.communicate("stop\n", timeout=n / rate + 60.0)
        d = np.load(out)
        lat, unmatched, answered = [], 0, set()
        for t_recv, u in zip(d["times"], d["values"]):
            r = (u - u0) / slope
            i = int(round(r))
            if abs(r - i) > 0.05 or not 0 <= i < n:
                unmatched += 1
            elif i not in answered:
                answered.add(i)
                if i >= n_warm:
                    lat.append((t_recv - sent[i]) * 1e3)
        gaps = np.diff(sent[n_warm:]) * 1e3
        t0 = time.perf_counter()
        for i in range(2000):
            law.command(5, est.update(i * dt, q, np.zeros(vi.nq)))
        compute = (time.perf_counter() - t0) / 2000 * 1e3
        return dict(
            rate=rate,
            priority=priority,
            sent=n,
            received=len(d["times"]),
            matched=len(answered),
            measured=n - n_warm,
            answered=sum(i >= n_warm for i in answered),
            unmatched=unmatched,
            p50=np.percentile(lat, 50) if lat else np.nan,
            p99=np.percentile(lat, 99) if lat else np.nan,
            max=max(lat) if lat else np.nan,
            period_p99=np.percentile(gaps, 99) if len(gaps) else np.nan,
            compute=compute,
            load=f"{load_before} → {_load()}",
        )
    finally:
        if priority:  # also when the run failed: the next case must not inherit SCHED_FIFO
            realtime_scheduling(0)
        if clock is not None and clock.poll() is None:
            clock.kill()
        if node is not None:
            node.destroy_node()
        session.close()


def simulator_rtf(model: str, seconds: float, log_dir: str, dt: float = 1e-3) -> dict:
    robot, _ = _robot(model)
    vi = make_integrator("midpoint", robot, dt)
    q0 = bent_configuration(vi)  # released at rest, the node from the same configuration
    x = vi.state_from_velocity(q0, np.zeros(vi.nq))
    u = np.zeros(vi.nu)
    t0, k = time.perf_counter(), 0
    while time.perf_counter() - t0 < min(seconds, 2.0):
        x = vi.step(x, u)
        k += 1
    core_rtf = k * dt / (time.perf_counter() - t0)
    session = Session(f"bench_ros_rtf_{model}", log_dir)
    try:
        sim = session.start(
            "simulator_node",
            name=f"sim_{model}",
            model=model,
            system_yaml="",
            dt=dt,
            mode="realtime",
            max_speed=True,
            initial_positions=q0.tolist(),
            initial_velocities=[0.0] * vi.nq,
            # like for like with the bare loop: the released arm falls onto its end stops, and
            # held steps are another workload (docs/concepts/integrator.md, joint stops)
            joint_stops=False,
        )
        # best effort: the newest states, not every one (CI once saw 0.5 s without a state on a reliable reader —
        # likely one of the ~10⁴ per second lost, nothing newer delivered until the writer's heartbeat repaired
        # the gap; and a reliable reader slows the node: panda 9.0–11.4 against 14.3–14.7, docs/concepts/ros.md)
        rec = session.recorder(robot.joint_names, state_qos=SENSOR_STREAM_QOS)
        assert rec.wait_for(lambda: len(rec.states) > 100, 120.0), sim.log()
        time.sleep(1.0)  # warm-up
        with rec.lock:
            a = rec.states[-1]
        # the window ends on the first state received `seconds` after a's receipt
        assert rec.wait_for(lambda: rec.states[-1][0] >= a[0] + seconds, seconds + 30.0), (
            f"no joint state for {seconds + 30.0:g} s after the warm-up\n{sim.log()}"
        )
        with rec.lock:
            b = rec.states[-1]
        return dict(model=model, nq=vi.nq, core=core_rtf, node=(b[1] - a[1]) / (b[0] - a[0]))
    finally:
        session.close()


def handover(runs: int, log_dir: str) -> list[str]:
    session = Session("bench_ros_handover", log_dir)
    load_before = _load()
    try:
        results = handover_runs(session, runs)
    finally:
        session.close()
    ok, punctual = sum(handover_ok(r) for r in results), sum(on_time(r) for r in results)
    offsets = [f"{r['offset_steps']:+.0f}{' (re-timed)' if r['retimed'] else ''}" for r in results]
    return [
        "| plan hand-over on a real-time clock (Δt = 50 ms) | runs | entered within ±1 step of the stated start "
        "| no step skipped and swung up | entry − stated start [steps] | max final error [rad] |",
        "|---|---|---|---|---|---|",
        f"| pendulum swing-up, N = 50 | {runs} | {punctual} of {runs} | **{ok} of {runs}** | "
        f"{', '.join(offsets)} | {max(r['final'] for r in results):.2e} |",
        f"(load average {load_before} → {_load()}; 2 cores)",
    ]


def run(
    seconds: float,
    rates: tuple[float, ...] = (500.0, 1000.0),
    models: tuple[str, ...] = ("arm7", "erd:panda"),
    warmup: float = 1.0,
    handover_count: int = 0,
    priorities: tuple[int, ...] = (0,),
) -> tuple[str, list[dict], list[dict]]:
    """Every measurement; returns (markdown table, latency rows, real-time-factor rows)."""
    log_dir = tempfile.mkdtemp(prefix="bench_ros_")
    lines = [
        "| controller (panda, 7 DOF) | scheduling | states sent (after warm-up) | answered | latency p50 [ms] | "
        "latency p99 [ms] | latency max [ms] | send period p99 [ms] | compute per tick, same process [ms] | "
        "load average (before → after) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lat = [controller_latency(rate, seconds, log_dir, warmup, prio) for prio in priorities for rate in rates]
    for r in lat:
        sched = f"SCHED_FIFO {r['priority']}" if r["priority"] else "normal"
        lines.append(
            f"| {r['rate']:.0f} Hz | {sched} | {r['measured']} | {r['answered']} "
            f"({100 * r['answered'] / max(r['measured'], 1):.2f} %) | {r['p50']:.3f} | {r['p99']:.3f} | "
            f"{r['max']:.3f} | {r['period_p99']:.3f} | {r['compute']:.3f} | {r['load']} |"
        )
    lines += [
        "",
        "| simulator, Δt = 1 ms, realtime + max_speed | nq | real-time factor, node | "
        "real-time factor, MidpointVI.step loop (same process) | node / loop |",
        "|---|---|---|---|---|",
    ]
    rtf = [simulator_rtf(model, seconds, log_dir) for model in models]
    for r in rtf:
        lines.append(f"| {r['model']} | {r['nq']} | {r['node']:.2f} | {r['core']:.2f} | {r['node'] / r['core']:.2f} |")
    if handover_count:
        lines += [""] + handover(handover_count, log_dir)
    lines.append(f"\n(load average at the end: {_load()}; 2 cores; node logs in {log_dir})")
    return "\n".join(lines), lat, rtf


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--command-clock"]:  # the receiving process of controller_latency
        topic, capacity, out, j, seconds, priority = argv[1:7]
        return command_clock(topic, int(capacity), out, int(j), float(seconds), int(priority))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rates", type=float, nargs="*", default=[500.0, 1000.0])
    ap.add_argument("--models", nargs="*", default=["arm7", "erd:panda"])
    ap.add_argument("--handover", type=int, default=0, help="number of hand-over runs (0: skip)")
    ap.add_argument(
        "--priorities",
        type=int,
        nargs="*",
        default=[0, 80],
        help="latency runs with normal scheduling (0) and with SCHED_FIFO at these priorities",
    )
    args = ap.parse_args(argv)
    print(
        run(
            args.seconds,
            tuple(args.rates),
            tuple(args.models),
            handover_count=args.handover,
            priorities=tuple(args.priorities),
        )[0]
    )


if __name__ == "__main__":
    main()
