"""Tables, figures and the Markdown report of ``bench_collocation.py`` (split from it: the measurement stays there).

``table`` / ``starts_table``: the Markdown rows of a sweep; ``plots``: MorenoMartin2022, Fig. 2's error and time sweeps,
the error over time and the gait; ``report``: ``benchmarks/results/collocation.md`` and ``collocation.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from vi_control.planning.collocation import problems as P


def _f(v, fmt="{:.3g}") -> str:
    return "-" if v is None else fmt.format(v)


def _part(split: list | None, k: int, coord: int | None) -> float | None:
    """Part k of error_split's (q̈ − v̇, v̇ − g): of one coordinate, or summed over them as E^[2] (eq. 19)."""
    if split is None or split[k] is None:
        return None
    return sum(split[k]) if coord is None else split[k][coord]


def table(
    rows: list[dict],
    drake: dict | None,
    key: str,
    coord: int | None = None,
    split: bool = False,
    floor: dict | None = None,
) -> str:
    """Markdown rows: E^[2] (or E^[2]_q of one coordinate), ratio, iterations, CPU time (median) per method;
    ``split``: LG's E^[2] in its two parts (metrics.error_split) and LG2's residual part; ``floor`` (N → value):
    the interpolation error of gravity along the exact bang-bang motion (problems.py)."""
    dk = {r["N"]: r for r in (drake or {}).get(key, [])} if drake else {}
    head = (
        "| N | E² LG | E² LG2 | LG/LG2 | iterations LG / LG2 | CPU LG / LG2 [ms] | time LG2/LG | same optimum |"
        + (" E² Drake HS | t_f / J Drake | CPU Drake [ms] |" if dk else "")
        + (" LG's E² parts: q̈−v̇ / v̇−g | LG2's v̇−g |" if split else "")
        + (" I_N[a₀] on the exact motion |" if floor else "")
    )
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        a, b = r["lg"], r["lg2"]
        Ea = a["E2"] if coord is None or a["E2_q"] is None else a["E2_q"][coord]
        Eb = b["E2"] if coord is None or b["E2_q"] is None else b["E2_q"][coord]
        ratio = f"**{Ea / Eb:.1f}×**" if r["same_optimum"] and Ea and Eb else "-"
        same = (
            "yes"
            if r["same_optimum"]
            else (f"**no** (t_f {a['tf']:.4f} / {b['tf']:.4f}, J {a['objective']:.4g} / {b['objective']:.4g})")
        )
        line = (
            f"| {r['N']} | {_f(Ea)} | {_f(Eb)} | {ratio} | {a['iterations']} / {b['iterations']} | "
            f"{a['t_med'] * 1e3:.1f} / {b['t_med'] * 1e3:.1f} | {b['t_med'] / a['t_med']:.2f} | {same} |"
        )
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
    head = (
        "| N | t_f of each start LG | t_f of each start LG2 | E² LG | E² LG2 | LG/LG2 | iterations LG | "
        "iterations LG2 | CPU of all starts LG / LG2 [ms] | time LG2/LG |"
    )
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        a, b = r["lg"], r["lg2"]
        ratio = f"**{a['E2'] / b['E2']:.1f}×**" if r["same_optimum"] else "- (different optima)"
        out.append(
            f"| {r['N']} | {' '.join(_f(t, '{:.4f}') for t in a['tfs'])} | "
            f"{' '.join(_f(t, '{:.4f}') for t in b['tfs'])} | {_f(a['E2'])} | {_f(b['E2'])} | {ratio} | "
            f"{' '.join(map(str, a['iterations']))} | {' '.join(map(str, b['iterations']))} | "
            f"{a['t_med'] * 1e3:.1f} / {b['t_med'] * 1e3:.1f} | {b['t_med'] / a['t_med']:.2f} |"
        )
    return "\n".join(out)


def plots(res: dict, replay: dict | None, pend_dyn, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vi_control.planning.collocation.metrics import plot_dynamic_error, plot_error_sweep

    fig, ax = plt.subplots(3, 2, figsize=(10, 11))
    for i, (key, coord, title) in enumerate(
        (
            ("pendulum", None, "pendulum minimum-time swing-up: $E^{[2]}$"),
            ("cartpole", 0, "cart-pole swing-up: $E^{[2]}_{q_1}$"),
            ("biped", None, "five-link biped gait: $E^{[2]}$"),
        )
    ):
        rows = res.get(key, [])
        if not rows:
            continue
        Ns = [r["N"] for r in rows]

        def col(m, c=coord, rows=rows):
            E = [
                (r[m]["E2"] if c is None or r[m]["E2_q"] is None else r[m]["E2_q"][c]) if r["same_optimum"] else np.nan
                for r in rows
            ]
            return [np.nan if e is None else e for e in E], [r[m]["t_med"] for r in rows]

        curves = {"LG": col("lg"), "LG2": col("lg2")}
        if key == "biped" and res.get("biped_pinned"):  # MorenoMartin2022's formulation beside the floating base
            curves = {
                "LG (floating base)": curves["LG"],
                "LG2 (floating base)": curves["LG2"],
                "LG (stance root, abs. angles)": col("lg", None, res["biped_pinned"]),
                "LG2 (stance root, abs. angles)": col("lg2", None, res["biped_pinned"]),
            }
        dk = {r["N"]: r for r in (res.get("drake") or {}).get(key, [])}
        if dk:
            curves["Drake Hermite–Simpson"] = (
                [
                    (dk[n].get("E2") if coord is None else (dk[n].get("E2_q") or [np.nan])[coord])
                    if n in dk and dk[n]["success"]
                    else np.nan
                    for n in Ns
                ],
                [dk[n]["cpu"] if n in dk else np.nan for n in Ns],
            )
        plot_error_sweep(ax[i, 0], ax[i, 1], Ns, curves, title=title)
        # why LG2 cannot be 10× below LG there (docs/concepts/collocation.md)
        if key == "biped" and res.get("biped_pinned"):
            pinned = res["biped_pinned"]
            resid = [_part(r["lg"].get("E2_split"), 1, None) if r["same_optimum"] else None for r in pinned]
            ax[i, 0].semilogy(
                [r["N"] for r in pinned],
                [np.nan if v is None else v for v in resid],
                "k--",
                lw=1,
                label="LG's part $\\int|\\dot v - g|$ (stance root) = LG2's $E^{[2]}$",
            )
            ax[i, 0].legend(fontsize=7)
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
            pts = [
                np.array(gait.dynamics.point_position(link, [0, 0, z], q)).ravel()[[0, 2]]
                for link, z in (
                    ("left_foot", 0),
                    ("left_tibia", 0),
                    ("torso", 0),
                    ("torso", 0.625),
                    ("torso", 0),
                    ("right_tibia", 0),
                    ("right_foot", 0),
                )
            ]
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


def report(res: dict, out_dir: Path) -> None:
    dr = res.get("drake") or {}
    lines = [
        f"CPU time of the solver call (median of {res['rounds']} interleaved rounds), load average "
        f"{res['load']:.1f} on {os.cpu_count()} cores. Drake: {dr.get('version', dr.get('error', 'not run'))}.",
        "",
        "Pendulum minimum-time swing-up (|u| ≤ 5 N·m):",
        "",
        table(res["pendulum"], dr, "pendulum", split=True, floor=res.get("gravity_floor")),
        "",
        "Pendulum from each straight-line start (t_g = "
        + ", ".join(f"{t:g}" for t in P.PENDULUM_START_TIMES)
        + " s), E² at each method's lowest-t_f optimum:",
        "",
        starts_table(res["pendulum_starts"]),
        "",
        "Cart-pole swing-up (Kelly 2017), E² of q₁ = x (MorenoMartin2022 plots this one):",
        "",
        table(res["cartpole"], dr, "cartpole", coord=0, split=True),
        "",
        "Cart-pole, E² of q₂ = θ:",
        "",
        table(res["cartpole"], None, "cartpole", coord=1, split=True),
        "",
    ]
    spl = [
        (r["N"], r["E2"], r["E2_spline"])
        for k in ("pendulum", "cartpole")
        for r in dr.get(k) or []
        if r.get("E2_spline")
    ]
    if spl:
        lines += [
            "Drake's E² on its own ReconstructStateTrajectory / ReconstructInputTrajectory; our cubic Hermite "
            "spline + first-order hold reconstruction gives the same to a relative "
            f"{max(abs(a - b) / a for _, a, b in spl):.1e} (max over all rows).",
            "",
        ]
    if res["biped"]:
        carried = f" ({res['biped_from']})" if res.get("biped_from") else ""
        lines += [
            "Five-link biped gait, floating base + stance constraint (`biped5_stance`; E² over all seven "
            f"coordinates, base_x and base_z in m){carried}:",
            "",
            table(res["biped"], None, "biped", split=True),
            "",
            "Five-link biped gait, stance foot as the root (`biped5_pinned`, MorenoMartin2022's minimal "
            f"coordinates; E² over the five absolute link angles, eq. 19){carried}:",
            "",
            table(res["biped_pinned"], None, "biped", split=True),
            "",
        ]
    lines += [
        "Pendulum, open-loop drift (the plan's inputs replayed by RK45 from x₀; ‖x(t_f) − goal‖∞): "
        + ", ".join(f"{k} {v:.3g}" for k, v in res["drift"].items())
    ]
    for r in dr.get("pendulum") or []:
        if r.get("drift") is not None and r["N"] == 20:
            lines[-1] += f", Drake HS N=20 {r['drift']:.3g}"
    for r in res["ddp"]:  # (the cart-pole's drift is dominated by its open-loop instability)
        lines += [
            f"- our DDP ({r['problem']}, {r['steps']} VI steps of {r['dt'] * 1e3:g} ms): {r['iterations']} "
            f"iterations, CPU {r['t_med'] * 1e3:.0f} ms (min {r['t_min'] * 1e3:.0f}), "
            f"converged {r['converged']}"
            + (f", open-loop drift {r['drift']:.3g}" if r["problem"] == "pendulum" else "")
        ]
    if res.get("replay"):
        rp = res["replay"]
        lines += [
            f"- gait replay (LG2 N = {rp['N']}, VI Δt = 10 ms): polished step mismatch {rp['mismatch']:.3g}, "
            f"closed by Newton (‖r‖∞ {', '.join(f'{r:.1e}' for r in rp['newton'])}; start moved "
            f"{rp['shift']:.3g}); start-of-step deviation over 10 steps, max {max(rp['deviation']):.1e}; "
            f"from the swing knee 0.02 rad off: {', '.join(f'{d:.1e}' for d in rp['perturbed'])}; open loop "
            f"from there: {ol if isinstance(ol := rp['open_loop'], str) else np.round(ol, 2).tolist()}"
        ]
    text = "\n".join(lines)
    print(text)
    (out_dir / "collocation.md").write_text(text + "\n", encoding="utf-8")
    keep = {k: v for k, v in res.items() if k not in ("pendulum_solutions",)}
    (out_dir / "collocation.json").write_text(json.dumps(keep, indent=1, default=str), encoding="utf-8")
