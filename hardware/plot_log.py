"""Plot a deploy run's ``log.csv``: ``python -m hardware.plot_log REPORT_DIR [--out FILE]``.

Four panels over time: end-effector x/y (measured and commanded), the top view of the
measured, commanded and ball paths, the distance between command and end effector, and the
robot-state/camera data ages against the watchdog threshold, with hold intervals shaded.
``c3mpc deploy --report DIR`` writes ``DIR/log.png`` with this at the end of every run.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

__all__ = ["load_log", "plot_log", "main"]


def load_log(path: str | Path) -> dict[str, np.ndarray]:
    """The columns of a ``log.csv`` as float arrays (NaN where a value was not recorded)."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    data = np.array([[float(v) for v in r] for r in body], dtype=float).reshape(-1, len(header))
    return {name: data[:, i] for i, name in enumerate(header)}


def plot_log(report_dir: str | Path, out: str | Path | None = None) -> Path:
    """Render ``report_dir/log.csv`` to a PNG (default ``report_dir/log.png``); returns its path.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = Path(report_dir)
    log = load_log(d / "log.csv")
    threshold = None
    summary = {}
    if (d / "summary.json").exists():
        summary = json.loads((d / "summary.json").read_text())
        threshold = summary.get("options", {}).get("safety", {}).get("stale_after")
    t = log["t"]
    held = log["held"] > 0.5
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    for name, style in (("x", "-"), ("y", "--")):
        ax[0, 0].plot(t, log[f"ee_{name}"], style, label=f"ee {name}")
        ax[0, 0].plot(t, log[f"cmd_{name}"], style, alpha=0.6, label=f"command {name}")
    ax[0, 0].set_xlabel("t [s]")
    ax[0, 0].set_ylabel("[m]")
    ax[0, 0].legend(fontsize=7)
    ax[0, 1].plot(log["ee_x"], log["ee_y"], label="end effector")
    ax[0, 1].plot(log["cmd_x"], log["cmd_y"], alpha=0.6, label="command")
    ax[0, 1].plot(log["ball_x"], log["ball_y"], ".-", ms=3, label="ball")
    ax[0, 1].set_aspect("equal", adjustable="datalim")
    ax[0, 1].set_xlabel("x [m]")
    ax[0, 1].set_ylabel("y [m]")
    ax[0, 1].legend(fontsize=7)
    off = np.linalg.norm(np.stack([log["cmd_x"] - log["ee_x"], log["cmd_y"] - log["ee_y"],
                                   log["cmd_z"] - log["ee_z"]]), axis=0)
    ax[1, 0].plot(t, off * 1e3)
    ax[1, 0].set_xlabel("t [s]")
    ax[1, 0].set_ylabel("|command − ee| [mm]")
    ax[1, 1].plot(t, log["state_age_s"] * 1e3, label="robot state age")
    ax[1, 1].plot(t, log["camera_age_s"] * 1e3, label="camera age")
    if threshold:
        ax[1, 1].axhline(threshold * 1e3, color="r", lw=0.8, label="watchdog threshold")
    ax[1, 1].set_xlabel("t [s]")
    ax[1, 1].set_ylabel("[ms]")
    ax[1, 1].legend(fontsize=7)
    for a in (ax[0, 0], ax[1, 0], ax[1, 1]):
        if held.any():
            a.fill_between(t, 0, 1, where=held, transform=a.get_xaxis_transform(),
                           color="orange", alpha=0.2, lw=0)
    title = f"deploy {summary.get('task', '')}: {summary.get('exit_reason', '')}"
    if summary:
        title += (f", {summary.get('commands_sent')} commands, "
                  f"{summary.get('safety_interventions')} interventions, "
                  f"{summary.get('watchdog_trips')} watchdog trips (holds shaded)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(out) if out is not None else d / "log.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(prog="python -m hardware.plot_log", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", help="report directory of `c3mpc deploy --report`")
    ap.add_argument("--out", help="PNG path (default: REPORT/log.png)")
    args = ap.parse_args(argv)
    print(plot_log(args.report, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
