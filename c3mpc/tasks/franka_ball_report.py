"""The report folder of a Franka ball run (``c3mpc run franka-ball --report DIR``, ``make demo``).

Files:

* ``summary.json``: :func:`c3mpc.tasks.franka_ball.summarize` (band_fraction, max_error_m,
  controller_rate_hz, solve_time_median_s, excursions, contact statistics, options) plus the
  machine;
* ``trajectory.png``: top view of the balls against the desired path and its band, tracking error
  against the band, the contact timeline (true end effector-ball contact in the simulator and
  the contact C3 decided at its first knot, with the heuristic phase) and the plan times;
* ``trajectory.npz``: the logged arrays;
* ``run.mcap``: the run for Foxglove / PlotJuggler (:func:`write_mcap`, channels below);
* ``meshcat.html``: the standalone meshcat recording (unless disabled).
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_report", "plot_run", "write_mcap", "MCAP_CHANNELS"]


def plot_run(log: Any, summary: dict[str, Any], path: Path) -> None:
    """Write the four-panel figure of the run to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    o = summary["options"]
    band = summary["band_m"]
    fig = plt.figure(figsize=(11, 9))
    ax0 = fig.add_subplot(2, 2, 1)
    if summary.get("trajectory") is not None:  # time-based x_d(t): the path, error to x_d(t)
        xd = log.ball_targets[:, 0]
        ax0.plot(xd[:, 0], xd[:, 1], color="tab:blue", ls="--", lw=1.5, label="desired x_d(t)")
    elif summary["n_balls"] == 1:
        s = np.linspace(0, 2 * np.pi, 300)
        cx, cy = o["center"]
        r = o["radius"]
        for rr, st in ((r, "--"), (r - band, ":"), (r + band, ":")):
            ax0.plot(cx + rr * np.sin(s), cy + rr * np.cos(s), "g" + st, lw=1)
        ax0.fill(np.r_[cx + (r + band) * np.sin(s), cx + (r - band) * np.sin(s[::-1])],
                 np.r_[cy + (r + band) * np.cos(s), cy + (r - band) * np.cos(s[::-1])],
                 color="pink", alpha=0.5, label="2 cm band")
    else:
        xc = o["center"][0]
        ax0.axvspan(xc - band, xc + band, color="pink", alpha=0.5, label="band")
        ax0.axvline(xc, color="g", ls="--")
    for b in range(log.balls.shape[1]):
        ax0.plot(log.balls[:, b, 0], log.balls[:, b, 1], "k", lw=1.2,
                 label="ball" if b == 0 else None)
    ax0.plot(log.ee[:, 0], log.ee[:, 1], color="tab:orange", lw=0.6, alpha=0.7,
             label="end effector")
    ax0.set_aspect("equal")
    ax0.set_xlabel("x [m]")
    ax0.set_ylabel("y [m]")
    ax0.legend(fontsize=7, loc="best")
    ax0.set_title("top view")

    ax1 = fig.add_subplot(2, 2, 2)
    ax1.plot(log.t, log.error * 100, "k", lw=1)
    ax1.axhline(band * 100, color="r", ls="--", label=f"band {band * 100:.0f} cm")
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("|x_d(t) − x_b(t)| [cm]" if summary.get("trajectory") is not None
                   else "tracking error [cm]")
    ax1.set_title(f"in band {summary['band_fraction'] * 100:.1f}% of the time, "
                  f"max {summary['max_error_m'] * 100:.2f} cm")
    ax1.legend(fontsize=7)

    ax2 = fig.add_subplot(2, 2, 3)
    k = log.balls.shape[1]
    for b in range(k):
        true_c = log.ee_ball_gap[:, b] <= 1e-3
        ax2.fill_between(log.t, b + 0.05, b + 0.05 + 0.4 * true_c, step="post",
                         color="tab:blue", label="contact (simulator)" if b == 0 else None)
        if log.plan_t.size:
            planned = log.plan_contact[:, b] > 1e-6
            ax2.fill_between(log.plan_t, b + 0.5, b + 0.5 + 0.4 * planned, step="post",
                             color="tab:red", label="contact C3 decided" if b == 0 else None)
    if log.plan_t.size:
        ax2.step(log.plan_t, -0.6 + 0.4 * log.plan_phase, where="post", color="gray",
                 label="phase (low I, high II)")
    ax2.set_yticks([b + 0.5 for b in range(k)], [f"ball {b + 1}" for b in range(k)])
    ax2.set_xlabel("t [s]")
    ax2.set_title("contact timeline")
    ax2.legend(fontsize=7, loc="upper right")

    ax3 = fig.add_subplot(2, 2, 4)
    if log.plan_t.size:
        ax3.plot(log.plan_t, log.plan_time * 1e3, ".", ms=2, label="Algorithm 3 cycle")
        ax3.plot(log.plan_t, log.solve_time * 1e3, ".", ms=2, label="Δt_c (LCS + C3)")
    ax3.set_xlabel("t [s]")
    ax3.set_ylabel("wall time [ms]")
    ax3.set_title(f"controller {summary['controller_rate_hz']:.0f} Hz (median), "
                  f"C3 median {summary['solve_time_median_s'] * 1e3:.1f} ms")
    ax3.legend(fontsize=7)
    fig.suptitle(f"{summary['plant']}: {summary['simulated_time_s']:.1f} s simulated, "
                 f"noise {o['noise_std'] * 1e3:g} mm")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_report(out: str | Path, log: Any, summary: dict[str, Any],
                 viewer: Any = None) -> dict[str, Path]:
    """Write the report folder; returns the written paths by name.

    Args:
        out: folder (created).
        log: the :class:`~c3mpc.tasks.franka_ball.FrankaBallLog`.
        summary: its :func:`~c3mpc.tasks.franka_ball.summarize` dict.
        viewer: a :class:`~c3mpc.tasks.franka_ball_viz.FrankaBallViewer` to record into ``meshcat.html`` (None:
            no HTML).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    s = dict(summary)
    s["machine"] = {"platform": platform.platform(), "python": platform.python_version(),
                    "processor": platform.processor() or platform.machine()}
    if viewer is not None:
        viewer.record(log)
        paths["meshcat.html"] = viewer.save_html(out / "meshcat.html")
        s["meshcat_html"] = "meshcat.html"
    paths["summary.json"] = out / "summary.json"
    paths["summary.json"].write_text(json.dumps(s, indent=2, default=_json_default))
    paths["trajectory.npz"] = out / "trajectory.npz"
    np.savez_compressed(paths["trajectory.npz"], t=log.t, q_arm=log.q_arm, ee=log.ee,
                        balls=log.balls, balls_est=log.balls_est, error=log.error,
                        ee_ball_gap=log.ee_ball_gap, plan_t=log.plan_t,
                        plan_time=log.plan_time, solve_time=log.solve_time,
                        plan_phase=log.plan_phase, plan_contact=log.plan_contact,
                        plan_ee_force=log.plan_ee_force, plan_x_d=log.plan_x_d)
    paths["run.mcap"] = write_mcap(out / "run.mcap", log)
    paths["trajectory.png"] = out / "trajectory.png"
    plot_run(log, s, paths["trajectory.png"])
    return paths


MCAP_CHANNELS: dict[str, str] = {
    "/franka/ee": "foxglove.PoseInFrame: true end-effector centre [m] (orientation identity)",
    "/franka/joints": "c3mpc.JointPositions: q {panda_joint1..7} [rad]",
    "/ball{k}/true": "foxglove.PoseInFrame: true centre [m] and orientation of ball k (0-based)",
    "/ball{k}/estimate": "foxglove.PoseInFrame: the vision estimate of ball k's centre [m]",
    "/franka/tracking": "c3mpc.Tracking: error_m, ee_ball_gap_m [k], ball_target_xy [k][2] [m]",
    "/c3mpc/plan": "c3mpc.Plan (at each plan's start time): solve_time_s, plan_time_s, status, "
                   "phase, ee_force {x,y,z} [N], x_d {x,y,z} [m], contact [k]",
}
"""The channels of a Franka ball run's ``run.mcap`` (docs/franka-ball.md)."""


def write_mcap(path: str | Path, log: Any) -> Path:
    """Write a :class:`~c3mpc.tasks.franka_ball.FrankaBallLog` as MCAP (:data:`MCAP_CHANNELS`).

    One message per simulator step on the per-step channels and one per plan on
    ``/c3mpc/plan``, interleaved in time order; log times are simulated seconds.
    """
    from ..mcap_log import POSE_IN_FRAME_SCHEMA, McapLog, record_schema
    from ..result import C3Status

    t, ee, q = log.t.tolist(), log.ee.tolist(), log.q_arm.tolist()
    balls, quats, est = log.balls.tolist(), log.ball_quat.tolist(), log.balls_est.tolist()
    err, gap, target = log.error.tolist(), log.ee_ball_gap.tolist(), log.ball_targets.tolist()
    plans = list(zip(log.plan_t.tolist(), log.solve_time.tolist(), log.plan_time.tolist(),
                     log.plan_status.tolist(), log.plan_phase.tolist(),
                     log.plan_ee_force.tolist(), log.plan_x_d.tolist(),
                     log.plan_contact.tolist()))
    status_names = {int(s): s.name for s in C3Status}
    k_balls = log.balls.shape[1]
    joints = [f"panda_joint{i + 1}" for i in range(log.q_arm.shape[1])]
    with McapLog(path) as out:
        out.add_channel("/franka/ee", POSE_IN_FRAME_SCHEMA)
        out.add_channel("/franka/joints", record_schema(
            "c3mpc.JointPositions", {"q": "joint angles by joint name [rad]"}))
        for b in range(k_balls):
            out.add_channel(f"/ball{b}/true", POSE_IN_FRAME_SCHEMA)
            out.add_channel(f"/ball{b}/estimate", POSE_IN_FRAME_SCHEMA)
        out.add_channel("/franka/tracking", record_schema("c3mpc.Tracking", {
            "error_m": "tracking error [m]", "ee_ball_gap_m": "end effector-ball gaps [m]",
            "ball_target_xy": "desired ball (x, y) of the target generator [m]"}))
        out.add_channel("/c3mpc/plan", record_schema("c3mpc.Plan", {
            "solve_time_s": "wall time of C3's solve [s]",
            "plan_time_s": "wall time of the Algorithm 3 cycle [s]",
            "status": "C3Status name", "phase": "heuristic phase of Fig. 10",
            "ee_force": "desired end-effector force from lambda_d [N]",
            "x_d": "x_d's end-effector position [m]",
            "contact": "planned end effector-ball contact at the first knot, per ball"}))
        p = 0
        for k, tk in enumerate(t):
            while p < len(plans) and plans[p][0] <= tk:
                pt, solve, cycle, status, phase, force, x_d, contact = plans[p]
                out.write("/c3mpc/plan", max(pt, 0.0), {
                    "solve_time_s": solve, "plan_time_s": cycle,
                    "status": status_names.get(int(status), str(status)), "phase": phase,
                    "ee_force": dict(zip("xyz", force)), "x_d": dict(zip("xyz", x_d)),
                    "contact": [bool(c) for c in contact]})
                p += 1
            out.pose("/franka/ee", tk, ee[k])
            out.write("/franka/joints", tk, {"q": dict(zip(joints, q[k]))})
            for b in range(k_balls):
                out.pose(f"/ball{b}/true", tk, balls[k][b], quats[k][b])
                out.pose(f"/ball{b}/estimate", tk, est[k][b])
            out.write("/franka/tracking", tk, {"error_m": err[k], "ee_ball_gap_m": gap[k],
                                               "ball_target_xy": target[k]})
    return Path(path)


def _json_default(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(f"not JSON serializable: {type(v).__name__}")
