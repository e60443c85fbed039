"""The command line: no silent fallback to a default, one-line errors, no lost work (issue 26,
part 3).

* every numeric flag rejects 0, negatives, NaN and inf where they are meaningless, with a one-line
  argparse error (exit 2);
* config errors are one line naming the file and the line (run --config, deploy --config);
* the report folder is checked (exists as a file, cannot be created, not writable) before the
  run (run, run franka-ball, deploy);
* Ctrl-C or SIGTERM of ``c3mpc run`` writes a partial report marked ``interrupted`` and exits
  130 (a real subprocess receiving the signal).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from c3mpc.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("argv, flag, given", [
    (["run", "cartpole-softwalls", "--duration", "0"], "--duration", "0"),
    (["run", "cartpole-softwalls", "--duration", "-5"], "--duration", "-5"),
    (["run", "cartpole-softwalls", "--duration", "inf"], "--duration", "inf"),
    (["run", "cartpole-softwalls", "--duration", "nan"], "--duration", "nan"),
    (["run", "cartpole-softwalls", "--horizon", "0"], "--horizon", "0"),
    (["run", "cartpole-softwalls", "--horizon", "2.5"], "--horizon", "2.5"),
    (["run", "cartpole-softwalls", "--replan-every", "0"], "--replan-every", "0"),
    (["run", "cartpole-softwalls", "--noise", "nan"], "--noise", "nan"),
    (["run", "cartpole-softwalls", "--noise", "-0.1"], "--noise", "-0.1"),
    (["run", "cartpole-softwalls", "--seed", "-1"], "--seed", "-1"),
    (["run", "franka-ball", "--duration", "0"], "--duration", "0"),
    (["deploy", "franka-ball", "--bridge", "ws://127.0.0.1:9", "--rate", "0"], "--rate", "0"),
    (["deploy", "franka-ball", "--bridge", "ws://127.0.0.1:9", "--rate", "inf"], "--rate", "inf"),
    (["deploy", "franka-ball", "--bridge", "ws://127.0.0.1:9", "--duration", "-1"], "--duration",
     "-1"),
    (["sweep", "s.yaml", "--trials", "0"], "--trials", "0"),
    (["sweep", "s.yaml", "--workers", "0"], "--workers", "0"),
])
def test_numeric_flags_are_validated_in_one_line(argv, flag, given, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"argument {flag}: expected" in err and repr(given) in err


def test_config_with_1e3_for_an_int_is_one_line_with_file_and_line(tmp_path, capsys):
    cfg = tmp_path / "c3.yaml"
    cfg.write_text("projection: lcp\nadmm_iter: 1e3\n")
    assert main(["run", "cartpole-softwalls", "--config", str(cfg), "--quiet"]) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and f"{cfg}, line 2" in lines[0] and "admm_iter" in lines[0]
    assert "Traceback" not in out.err and out.out == ""


def test_malformed_deploy_config_is_one_line_with_file_and_line(tmp_path, capsys):
    cfg = tmp_path / "deploy.yaml"
    cfg.write_text("rate_hz: 100\nsafety: {stale_after: [0.1\n")
    rc = main(["deploy", "franka-ball", "--bridge", "ws://127.0.0.1:9", "--config", str(cfg)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert f"{cfg}" in err[0] and "line 3" in err[0] and "not valid YAML" in err[0]


@pytest.mark.parametrize("command", [
    ["run", "cartpole-softwalls", "--quiet"],
    ["run", "franka-ball", "--quiet", "--no-html"],
    ["deploy", "franka-ball", "--bridge", "ws://127.0.0.1:9", "--quiet"],
])
def test_report_path_that_is_a_file_fails_before_the_run(command, tmp_path, capsys):
    report = tmp_path / "summary.txt"
    report.write_text("keep me")
    t0 = time.perf_counter()
    assert main(command + ["--report", str(report)]) == 2
    out = capsys.readouterr()
    assert "exists and is not a folder" in out.err and out.out == ""  # nothing ran
    assert time.perf_counter() - t0 < 30
    assert report.read_text() == "keep me"


def test_report_folder_that_cannot_be_created_fails_before_the_run(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["run", "cartpole-softwalls", "--quiet", "--report", str(blocker / "sub")]) == 2
    out = capsys.readouterr()
    assert "cannot create the folder" in out.err and out.out == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_read_only_report_folder_fails_before_the_run(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert main(["run", "cartpole-softwalls", "--quiet", "--report", str(ro)]) == 2
    finally:
        ro.chmod(0o700)
    assert "not writable" in capsys.readouterr().err


def test_report_folder_is_created_before_the_run(tmp_path):
    from c3mpc._run_guard import prepare_report_dir

    target = tmp_path / "a" / "b"
    assert prepare_report_dir(target) == target and target.is_dir()
    assert list(target.iterdir()) == []  # the write probe is removed


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_writes_a_partial_report_and_exits_130(sig, tmp_path):
    report = tmp_path / "report"
    cmd = [sys.executable, "-m", "c3mpc.cli", "run", "cartpole-softwalls", "--duration", "600",
           "--report", str(report)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    started = threading.Event()
    err: list[str] = []

    def read_progress() -> None:  # the progress bar (stderr) shows the loop is running
        while True:
            chunk = proc.stderr.read(64)
            if not chunk:
                return
            err.append(chunk)
            if "steps/s" in "".join(err[-3:]):
                started.set()

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    try:
        assert started.wait(120), "the run did not start: " + "".join(err)[-500:]
        time.sleep(0.5)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        reader.join(10)  # stderr reaches EOF with the process
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + "".join(err)[-500:]
    summary = json.loads((report / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["success"] is False
    assert 1 <= summary["steps"] < summary["requested_steps"] == 60000
    assert (report / "trajectory.npz").exists()
    assert f"interrupted by {sig.name}" in out and "partial report written" in out
    assert "Traceback" not in "".join(err)


def test_franka_ball_run_stops_on_request_with_a_summarizable_partial_log():
    """The hook `c3mpc run franka-ball` passes its Ctrl-C/SIGTERM flag through."""
    from c3mpc.tasks.franka_ball import FrankaBallOptions, run_franka_ball, summarize

    calls = []

    def should_stop() -> bool:
        calls.append(1)
        return len(calls) >= 5

    o = FrankaBallOptions(world="model")
    log = run_franka_ball(o, should_stop=should_stop)
    assert log.info["interrupted"] is True
    assert len(log.t) == 5 and log.t[-1] == pytest.approx(4 * o.sim_dt)
    s = summarize(log)
    assert s["simulated_time_s"] == pytest.approx(log.t[-1]) and not s["task_completed"]


def test_absurd_duration_is_refused_up_front_with_its_memory_estimate(capsys):
    assert main(["run", "cartpole-softwalls", "--duration", "1e300", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "would need about" in err[0] and "--duration 1e+300" in err[0]


def test_ctrl_c_in_run_franka_ball_writes_a_partial_report_and_exits_130(tmp_path, monkeypatch,
                                                                        capsys):
    """The real SIGINT handler of `c3mpc run franka-ball`: the signal is raised (to this
    process) from inside the loop after 20 simulator steps."""
    import c3mpc.tasks.franka_ball as tf

    original = tf.run_franka_ball

    def run_with_ctrl_c(o, **kw):
        inner = kw.pop("should_stop")
        calls = []

        def should_stop() -> bool:
            calls.append(1)
            if len(calls) == 20:
                os.kill(os.getpid(), signal.SIGINT)
            return inner()

        return original(o, should_stop=should_stop, **kw)

    monkeypatch.setattr(tf, "run_franka_ball", run_with_ctrl_c)
    report = tmp_path / "fb"
    rc = main(["run", "franka-ball", "--world", "model", "--quiet", "--no-html", "--report",
               str(report)])
    out = capsys.readouterr().out
    assert rc == 130 and "interrupted by SIGINT" in out and "partial report written" in out
    summary = json.loads((report / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert summary["simulated_time_s"] < 0.1  # stopped within a step of the signal
