"""Plots and text tables of a robustness sweep (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .config import parameter_value


def summary_table(summary: dict) -> str:
    """The summary as a short markdown table (what the CLI prints)."""
    lo, hi = summary["success_rate_95ci"]
    fe = summary["final_error"]
    rows = [
        ("samples (errors)", f"{summary['samples']} ({summary['errors']})"),
        (
            "success rate (95 % CI)",
            f"{summary['success_rate']:.3f} [{lo:.3f}, {hi:.3f}] (tolerance {summary['tolerance']:g})",
        ),
        ("final error p50 / p95 / max", " / ".join(f"{fe[k]:.3g}" for k in ("p50", "p95", "max")) if fe else "—"),
        ("failed steps (Newton)", str(summary["diverged_or_failed_steps"])),
    ]
    for j, pk in enumerate(summary["peak_torque"]):
        lim = summary["effort_limits"][j] if summary["effort_limits"] else float("inf")
        rows.append((f"peak |u[{j}]| p50 / max (limit {lim:g})", f"{pk['p50']:.3g} / {pk['max']:.3g}"))
    imp = summary["importance"]
    if imp:
        rows.append(
            (
                "most important (Spearman ρ with final error)",
                ", ".join(f"{k} {v:+.2f}" for k, v in list(imp.items())[:3]),
            )
        )
    for why, n in summary["failure_reasons"].items():
        rows.append((f"failures: {why}", str(n)))
    for msg in summary["error_messages"][:3]:
        rows.append(("task error", msg[:100]))
    return "\n".join(["| | |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows])


def plot_robustness(records: list[dict], summary: dict, path: str | Path, title: str = "") -> Path:
    """Success over the two most important parameters (one if only one varies) and the final-error and
    peak-torque histograms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if "error" not in r]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    top = list(summary["importance"])[:2]
    succ = np.array([r["success"] for r in ok], bool)
    if top:
        x = np.array([parameter_value(r, top[0]) for r in ok])
        y = np.array([parameter_value(r, top[1]) for r in ok]) if len(top) > 1 else np.zeros(len(ok))
        ax.scatter(x[succ], y[succ], c="tab:green", s=18, label="success")
        ax.scatter(x[~succ], y[~succ], c="tab:red", marker="x", s=22, label="failure")
        ax.set_xlabel(top[0])
        ax.set_ylabel(top[1] if len(top) > 1 else "")
        ax.legend(loc="best", fontsize=8)
    ax.set_title(f"success {summary['success_rate']:.0%} of {len(ok)} {title}")
    err = np.array([r["final_error"] for r in ok], float)
    fin = err[np.isfinite(err)]
    ax = axes[1]
    if fin.size:
        lo = max(fin.min(), 1e-16)
        bins = np.logspace(np.log10(lo), np.log10(max(fin.max(), lo * 10)), 30)
        ax.hist(fin, bins=bins, color="tab:blue")
        ax.set_xscale("log")
    ax.axvline(summary["tolerance"], color="k", ls="--", label="tolerance")
    ax.set_xlabel("final error ‖q − q_goal‖∞")
    ax.set_ylabel("samples")
    ax.legend(fontsize=8)
    ax.set_title(f"final error ({int(np.sum(~np.isfinite(err)))} runs stopped by a failed step)")
    ax = axes[2]
    peaks = np.array([r["peak_torque"] for r in ok], float).reshape(len(ok), -1) if ok else np.zeros((0, 0))
    for j in range(peaks.shape[1]):
        ax.hist(peaks[:, j], bins=20, histtype="step", label=f"u[{j}]")
    ax.set_xlabel("peak |applied torque|")
    ax.set_title("peak torque per actuator")
    if 0 < peaks.shape[1] <= 8 and len(ok):
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
