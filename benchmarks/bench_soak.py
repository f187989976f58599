"""Soak: 10⁶ steps of the midpoint VI on the passive 10-link chain — energy error, its drift, and memory.

The chain and the bent start of benchmarks/bench_energy.py (1 m, 1 kg rods, g = 9.81, no damping; first
joint 1 rad, the others ±0.3 rad, released at rest: chaotic whipping up to ~50 rad/s). One state is kept
(no trajectory is stored), the energy E = T + V of the integrator's own state is sampled every --sample steps,
and the resident set size (VmRSS) every 10⁴ steps. Reported: max |E − E0| overall and per window of the
run, the median of E − E0 per window (the level the error sits at between the transient excursions of violent
whips), the drift (slope of a least-squares line through E − E0 against t), and RSS at start, after the first
window and at the end. A step the integrator refuses ends the run early and is reported (never skipped).

    .venv/bin/python benchmarks/bench_soak.py                           # 10⁶ steps at 5 ms: 5000 s simulated
    .venv/bin/python benchmarks/bench_soak.py --dt 0.0025 --steps 2e6   # the same 5000 s at 2.5 ms

Writes benchmarks/results/<name>.json and <name>.png (default name soak_<dt in µs>us).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_energy import chain, initial_configuration  # noqa: E402  (the same chain and start)

from vi_control.integrators import StepError, make_integrator  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def rss_mb() -> float:
    """Resident set size of this process now (VmRSS), in MB; the peak from getrusage where /proc is absent."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def soak(
    steps: int = 1_000_000,
    dt: float = 5e-3,
    n_links: int = 10,
    q0_kind: str = "bent",
    sample: int = 10,
    integrator: str = "midpoint",
    windows: int = 10,
) -> dict:
    """Run the soak; returns the figures (module docstring) and the sampled series (t, E − E0, RSS)."""
    robot = chain(n_links)
    vi = make_integrator(integrator, robot, dt)
    x = vi.state_from_velocity(initial_configuration(n_links, q0_kind), np.zeros(n_links))
    e0 = vi.energy(x)
    u = np.zeros(vi.nu)
    n_samples = steps // sample + 1
    t, err = np.full(n_samples, np.nan), np.full(n_samples, np.nan)
    t[0], err[0] = 0.0, 0.0
    rss_t, rss = [0.0], [rss_mb()]
    iterations, failure, done = 0, None, 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for k in range(steps):
        try:
            r = vi.solve(x, u, step_index=k)
        except StepError as e:  # an honest end: reported, never skipped
            failure = f"step {k}: {type(e).__name__}: {e}"
            break
        x, iterations, done = r.x, iterations + r.iterations, k + 1
        if done % sample == 0:
            t[done // sample], err[done // sample] = done * dt, vi.energy(x) - e0
        if done % 10_000 == 0:
            rss_t.append(done * dt)
            rss.append(rss_mb())
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    ok = np.isfinite(err)
    ts, es = t[ok], err[ok]
    drift = float(np.polyfit(ts, es, 1)[0]) if len(ts) > 2 else float("nan")
    edges = np.linspace(0.0, steps * dt, windows + 1)
    windows_ = [es[(ts >= a) & (ts < b)] for a, b in zip(edges[:-1], edges[1:])]
    per_window = [float(np.abs(w).max(initial=0.0)) for w in windows_]
    # the level the error sits at (the median), apart from the transient excursions of violent whips
    level = [float(np.median(w)) if len(w) else float("nan") for w in windows_]
    first_window = next((r for tt, r in zip(rss_t, rss) if tt >= edges[1]), rss[-1])
    return dict(
        integrator=integrator,
        n_links=n_links,
        q0=q0_kind,
        dt=dt,
        steps=steps,
        steps_done=done,
        failure=failure,
        E0=float(e0),
        max_abs_error=float(np.abs(es).max()),
        drift=drift,
        window_seconds=float(edges[1] - edges[0]),
        max_error_per_window=per_window,
        median_error_per_window=level,
        rss_start_mb=rss[0],
        rss_after_first_window_mb=first_window,
        rss_end_mb=rss[-1],
        rss_max_mb=max(rss),
        iterations_per_step=iterations / max(done, 1),
        wall_s=wall,
        cpu_s=cpu,
        us_per_step=1e6 * cpu / max(done, 1),
        load_average=_load(),
        series=dict(t=ts, error=es, rss_t=np.array(rss_t), rss=np.array(rss)),
    )


def _load() -> list[float]:
    try:
        return [float(v) for v in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def report(result: dict) -> str:
    r = result
    lines = [
        f"soak: {r['integrator']} VI, {r['n_links']}-link chain, {r['q0']} start, dt = {r['dt'] * 1e3:g} ms, "
        f"{r['steps_done']}/{r['steps']} steps ({r['steps_done'] * r['dt']:.0f} s simulated)",
        f"| max \\|E − E0\\| | drift | RSS start / after {r['window_seconds']:.0f} s / end (max) | it./step | "
        "CPU µs/step | load |",
        "|---|---|---|---|---|---|",
        f"| {r['max_abs_error']:.3g} J | {r['drift']:+.2e} J/s | {r['rss_start_mb']:.0f} / "
        f"{r['rss_after_first_window_mb']:.0f} / {r['rss_end_mb']:.0f} ({r['rss_max_mb']:.0f}) MB | "
        f"{r['iterations_per_step']:.2f} | {r['us_per_step']:.1f} | {r['load_average']} |",
        "max |E − E0| per window of "
        + f"{r['window_seconds']:.0f} s: "
        + ", ".join(f"{v:.3g}" for v in r["max_error_per_window"])
        + " J",
        "median E − E0 per window (the level between transient excursions): "
        + ", ".join(f"{v:+.3g}" for v in r["median_error_per_window"])
        + " J",
    ]
    if r["failure"]:
        lines.append(f"ended early: {r['failure']}")
    return "\n".join(lines)


def save(result: dict, name: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    s = result["series"]
    (RESULTS / f"{name}.json").write_text(json.dumps({k: v for k, v in result.items() if k != "series"}, indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True, height_ratios=[3, 1])
    a.plot(s["t"], s["error"], lw=0.4)
    a.set_ylabel("E − E0 [J]")
    a.set_title(
        f"{result['n_links']}-link chain, {result['q0']} start, Δt = {result['dt'] * 1e3:g} ms: "
        f"drift {result['drift']:+.2e} J/s"
    )
    b.plot(s["rss_t"], s["rss"], ".-")
    b.set_ylabel("RSS [MB]")
    b.set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(RESULTS / f"{name}.png", dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=float, default=1e6)
    ap.add_argument("--dt", type=float, default=5e-3)
    ap.add_argument("--links", type=int, default=10)
    ap.add_argument("--q0", choices=["bent", "gentle"], default="bent")
    ap.add_argument("--sample", type=int, default=10, help="energy every this many steps")
    ap.add_argument("--integrator", default="midpoint")
    ap.add_argument("--name", default=None)
    args = ap.parse_args()
    result = soak(int(args.steps), args.dt, args.links, args.q0, args.sample, args.integrator)
    print(report(result))
    save(result, args.name or f"soak_{round(args.dt * 1e6)}us")


if __name__ == "__main__":
    main()
