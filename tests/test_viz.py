"""plants.viz.Viewer: meshcat view of any scene or robot, recorded as standalone HTML and
rendered in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from plants import load_scene
from plants.viz import PALETTE, Viewer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1024,768"]


@pytest.fixture(scope="module")
def cubes():
    sim = load_scene("cube-drop-3")
    return sim, sim.run(0.3)


def test_scene_geometry_moves_exactly_as_the_simulator_places_it(cubes):
    sim, traj = cubes
    scene = sim.scene
    with Viewer.from_scene(scene) as viewer:
        assert [s.name for s in viewer.shapes] == [g.name for g in scene.geometries]
        q = traj.q[-1]
        transforms = {node.path.lower(): T for node, T in viewer._transforms(q)}
        data = scene.model.createData()
        import pinocchio as pin

        pin.forwardKinematics(scene.model, data, q)
        R, p = scene.geometry_poses(data)  # independent: the simulator's own poses
        root = viewer.vis["c3mpc"]["geometry"]
        for k, geo in enumerate(scene.geometries):
            if geo.joint == 0:
                continue
            T = transforms[root[geo.name].path.lower()]
            np.testing.assert_allclose(T[:3, :3], R[k], atol=1e-12)
            np.testing.assert_allclose(T[:3, 3], p[k], atol=1e-12)


def test_recording_has_one_frame_per_fps_tick_and_is_standalone(cubes, tmp_path):
    sim, traj = cubes
    with Viewer.from_scene(sim.scene, contacts=True) as viewer:
        frames = viewer.record_trajectory(traj, fps=20)
        html = viewer.save_html(tmp_path / "sub" / "cubes.html").read_text()
    assert frames == 7  # 0.3 s at 20 frames per second, both ends
    assert "<html" in html[:2000].lower() and "animation" in html.lower()
    assert len(html) > 200_000  # three.js inlined: plays offline


def test_contact_points_of_resting_cubes_are_on_the_ground():
    sim = load_scene("cube-rest-3")
    traj = sim.run(0.02)
    with Viewer.from_scene(sim.scene, contacts=True, max_contacts=64) as viewer:
        viewer.show(traj.q[-1])
        points = viewer._contact_points()
    assert len(points) >= 4
    lowest = points[points[:, 2] < 0.01]
    assert len(lowest) >= 4 and np.all(np.abs(lowest[:, 2]) < 1e-3)


def test_bad_input_is_a_clear_error(cubes):
    sim, traj = cubes
    with pytest.raises(ValueError, match="contacts=True needs a scene"):
        Viewer(sim.scene.model, [], contacts=True)
    with Viewer.from_scene(sim.scene) as viewer:
        with pytest.raises(ValueError, match=rf"q must have shape \({sim.scene.model.nq},\)"):
            viewer.show(np.zeros(3))
        with pytest.raises(ValueError, match="fps must be finite and > 0"):
            viewer.record(traj.t, traj.q, fps=0.0)
        with pytest.raises(ValueError, match="q must be finite"):
            viewer.show(np.full(sim.scene.model.nq, np.nan))


def _colour_fraction(img: np.ndarray, rgb, tol: float = 60.0) -> float:
    px = img[..., :3].reshape(-1, 3).astype(float)
    ref = np.asarray(rgb, float)
    cos = px @ ref / ((np.linalg.norm(px, axis=1) + 1e-9) * np.linalg.norm(ref))
    return float(np.mean((cos > np.cos(np.radians(8))) & (px.max(axis=1) - px.min(axis=1) > tol)))


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test "
                    "installs it: apt-get install -y chromium)")
def test_headless_chromium_renders_a_robot_we_did_not_write(tmp_path):
    """The UR5 of example-robot-data, from its URDF's visual meshes (DAE)."""
    import matplotlib.image as mpimg
    import pinocchio as pin

    from plants.multibody.resources import example_robot_data_dir, example_robot_data_path

    urdf = example_robot_data_path("robots/ur_description/urdf/ur5_robot.urdf")
    model, _, visual = pin.buildModelsFromUrdf(str(urdf),
                                               package_dirs=[str(example_robot_data_dir().parent)])
    with Viewer.from_geometry_model(model, visual) as viewer:
        q = np.zeros((30, model.nq))
        q[:, 1] = np.linspace(-1.5, 0.0, 30)
        viewer.record(np.linspace(0.0, 1.0, 30), q)
        page = viewer.save_html(tmp_path / "ur5.html")
    shot = tmp_path / "shot.png"
    r = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                        f"--screenshot={shot}", page.resolve().as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert shot.exists(), f"no screenshot (exit {r.returncode}): {r.stderr[-2000:]}"
    img = (mpimg.imread(shot) * 255).astype(np.uint8)
    robot = _colour_fraction(img, PALETTE[0])
    assert robot > 0.01, f"robot-coloured pixels: {robot:.4f}"
