"""Figures of the seed experiments from the benchmark results, for docs/BENCHMARKS.md.

Reads ``benchmarks/results/bench_sap_sigma.json`` (seed 001 §VI-C2, Figs. 14-15) and
``benchmarks/results/bench_sim_scaling.json`` (seed 001 §VI-C1) and writes
``docs/figures/sap_sigma.png`` and ``docs/figures/sim_scaling.png``. The figures are drawn from
the JSON alone (no simulation), so they always show the committed numbers; rerun after the
benchmarks::

    .venv/bin/python tools/make_bench_figures.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FIGURES = ROOT / "docs" / "figures"


def _rows(name: str) -> tuple[dict, list[dict]]:
    data = json.loads((RESULTS / name).read_text())
    return data, data["rows"]


def sigma_figure(plt) -> Path:
    """Mean slip and cond(H) against SAP's σ, with and without walls (seed 001 Figs. 14-15)."""
    data, rows = _rows("bench_sap_sigma.json")
    fig, (ax_slip, ax_cond) = plt.subplots(1, 2, figsize=(9.5, 3.6))
    for walls, marker in ((True, "o"), (False, "s")):
        sel = sorted((r for r in rows if r["walls"] is walls), key=lambda r: r["sigma"])
        sig = [r["sigma"] for r in sel]
        label = "with walls" if walls else "without walls"
        ax_slip.loglog(sig, [r["mean_slip_m_s"] for r in sel], marker=marker, label=f"mean slip, {label}")
        ax_cond.loglog(sig, [r["cond_H"] for r in sel], marker=marker, label=label)
    bound = sorted(rows, key=lambda r: r["sigma"])
    ax_slip.loglog([r["sigma"] for r in bound], [r["slip_bound_m_s"] for r in bound], "k--", label="bound σμgδt")
    ax_slip.set(xlabel="σ", ylabel="slip velocity [m/s]", title="Slip vs σ (seed 001 Fig. 14)")
    ax_cond.set(xlabel="σ", ylabel="cond(H)", title="cond(H) vs σ (seed 001 Fig. 15)")
    for ax in (ax_slip, ax_cond):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"clutter-40, δt = {1e3 * data['dt']:g} ms ({data['timestamp'][:10]})", fontsize=9)
    fig.tight_layout()
    out = FIGURES / "sap_sigma.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def scaling_figure(plt) -> Path:
    """CPU ms per step against the number of objects: ours, Drake SAP, MuJoCo (seed 001 §VI-C1),
    with and without walls, and ours / Drake."""
    data, rows = _rows("bench_sim_scaling.json")
    rows = [r for r in rows if "ours" in r]  # (older results list skipped sizes without timings)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    names = {"ours": "c3mpc SAP", "drake": "Drake SAP", "mujoco": "MuJoCo"}
    for ax, walls in zip(axes[:2], (True, False)):
        sel = sorted((r for r in rows if r["walls"] is walls), key=lambda r: r["n_objects"])
        for peer, style in (("ours", "o-"), ("drake", "s-"), ("mujoco", "^-")):
            pts = [(r["n_objects"], r[peer]["cpu_ms_per_step"]) for r in sel if peer in r]
            if pts:
                ax.loglog(*zip(*pts), style, label=names[peer])
        n = [r["n_objects"] for r in sel]
        if n:  # a linear-growth guide through ours at the smallest size
            ax.loglog([n[0], n[-1]], [sel[0]["ours"]["cpu_ms_per_step"] * k for k in (1, n[-1] / n[0])], "k:",
                      lw=0.8, label="∝ objects")
        ax.set(xlabel="objects", ylabel="CPU time per step [ms]", title="with walls" if walls else "without walls")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    ax = axes[2]
    for walls, style in ((True, "o-"), (False, "s--")):
        sel = sorted((r for r in rows if r["walls"] is walls and "drake" in r), key=lambda r: r["n_objects"])
        ax.semilogx([r["n_objects"] for r in sel],
                    [r["ours"]["cpu_ms_per_step"] / r["drake"]["cpu_ms_per_step"] for r in sel], style,
                    label="with walls" if walls else "without walls")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set(xlabel="objects", ylabel="ours / Drake SAP (CPU)", title="ratio (goal ≤ 1)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    load = data["machine"].get("load_avg", [float("nan")])[0]
    fig.suptitle(f"clutter, δt = {1e3 * data['dt']:g} ms, {data['duration_s']:g} s from the drop, CPU time "
                 f"per step ({data['timestamp'][:16]}Z, shared 2-core machine, load {load:.0f})", fontsize=9)
    fig.tight_layout()
    out = FIGURES / "sim_scaling.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    FIGURES.mkdir(parents=True, exist_ok=True)
    for make in (sigma_figure, scaling_figure):
        print(f"wrote {make(plt).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
