"""Rehearse a Franka deployment without a robot: `c3mpc deploy` against the simulated robot.

Starts the simulated Franka (``hardware.sim_robot``: an end effector behind the same rosbridge
protocol, topics and command validation as a real franka_ros setup) on loopback with a fresh
shared secret, then runs the deploy loop against it, authenticated (rosauth), behind the safety
layer, and prints what the report says: commands sent, holds, safety interventions, watchdog
trips, exit reason. The report folder holds summary.json, interventions.json, log.csv, log.png
and run.mcap (docs/deployment.md)::

    python examples/deploy_rehearsal.py --duration 3 --report reports/rehearsal
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
import tempfile
from pathlib import Path

from hardware.deploy import DeployOptions, run_deploy
from hardware.sim_robot import SimRobotOptions, start_sim_robot


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds to run")
    ap.add_argument("--report", default="reports/rehearsal", help="report folder")
    args = ap.parse_args(argv)
    secret = secrets.token_hex(16)  # 32 characters; a real setup keeps it in a file
    with tempfile.TemporaryDirectory() as tmp:
        secret_file = Path(tmp) / "bridge.secret"
        secret_file.write_text(secret + "\n")
        secret_file.chmod(0o600)
        server, robot = start_sim_robot(options=SimRobotOptions(), auth_secret=secret)
        try:
            options = DeployOptions()
            options = dataclasses.replace(options, bridge=dataclasses.replace(
                options.bridge, url=server.server.url, auth_secret_file=str(secret_file)))
            summary = run_deploy("franka-ball", options, duration=args.duration,
                                 report_dir=args.report, status=None)
        finally:
            server.stop()
    print(f"exit: {summary.exit_reason.value} ({summary.message})")
    print(f"commands {summary.commands_sent}, holds {summary.holds_sent}, safety interventions "
          f"{summary.safety_interventions}, watchdog trips {summary.watchdog_trips}, "
          f"rejected by the robot {len(robot.rejected)}")
    print(f"report: {Path(args.report).resolve()}/")
    return summary.exit_reason.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
