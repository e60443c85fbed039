"""The meshcat recording of a Franka ball run renders in a real browser (issue 7, part 5).

A short closed-loop run (0.3 s simulated, the full Panda) is recorded into the standalone HTML of
``vis.static_html()``; headless Chromium (Debian's ``chromium``, installed by ``make test``) takes
a screenshot, and pixel statistics say the scene rendered: the image is not blank (many distinct
colours, large spread), the robot's orange (:data:`c3mpc.tasks.franka_ball_viz.ROBOT_RGB`) covers a visible area
and the blue balls are present. Skips (with the reason) only when Chromium is not installed.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from c3mpc.tasks.franka_ball_viz import BALL_RGB, ROBOT_RGB

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1024,768"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    from c3mpc.tasks.franka_ball_report import write_report
    from c3mpc.tasks.franka_ball import FrankaBallOptions, run_franka_ball, summarize
    from c3mpc.tasks.franka_ball_viz import FrankaBallViewer

    log = run_franka_ball(FrankaBallOptions(duration=0.3))
    out = tmp_path_factory.mktemp("report")
    viewer = FrankaBallViewer(1)
    try:
        paths = write_report(out, log, summarize(log), viewer)
    finally:
        viewer.close()
    return paths, log


def test_html_is_standalone_and_holds_the_animation(recording):
    paths, log = recording
    html = paths["meshcat.html"].read_text()
    assert html.lstrip().lower().startswith("<!doctype html") or "<html" in html[:2000].lower()
    assert "http://" not in html.split("<script")[0]  # no external stylesheet/script links
    assert "animation" in html.lower()
    assert len(html) > 200_000  # three.js bundle inlined
    assert paths["trajectory.png"].stat().st_size > 10_000


def _color_fraction(img: np.ndarray, rgb: tuple[int, int, int], tol: float = 60.0) -> float:
    """Share of pixels whose hue matches ``rgb`` (shading changes brightness, so compare the
    normalised colour direction and require some saturation)."""
    px = img[..., :3].reshape(-1, 3).astype(float)
    ref = np.asarray(rgb, float)
    norm = np.linalg.norm(px, axis=1) + 1e-9
    cos = px @ ref / (norm * np.linalg.norm(ref))
    sat = px.max(axis=1) - px.min(axis=1)
    return float(np.mean((cos > np.cos(np.radians(8))) & (sat > tol)))


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test "
                    "installs it: apt-get install -y chromium)")
def test_headless_chromium_renders_the_robot(recording, tmp_path):
    import matplotlib.image as mpimg

    paths, _ = recording
    shot = tmp_path / "shot.png"
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
           f"--screenshot={shot}", paths["meshcat.html"].resolve().as_uri()]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.exists(), f"no screenshot (exit {r.returncode}): {r.stderr[-2000:]}"
    img = (mpimg.imread(shot) * 255).astype(np.uint8)
    assert img.shape[0] >= 700 and img.shape[1] >= 1000
    flat = img[..., :3].reshape(-1, 3)
    # not blank: many colours and a real spread of intensities
    assert len(np.unique(flat // 8, axis=0)) > 200
    assert flat.std() > 20
    robot = _color_fraction(img, ROBOT_RGB)
    ball = _color_fraction(img, BALL_RGB)
    assert robot > 0.01, f"robot-coloured pixels: {robot:.4f}"
    assert ball > 1e-4, f"ball-coloured pixels: {ball:.5f}"
