"""The meshcat view of deformable worlds: the drawn surface, the recording (one mesh per frame,
equal to the simulated positions), and a headless-Chromium render of the HTML file."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from plants.sim import load_scene
from plants.sim.deformable import box_tet_mesh, cloth_sheet
from plants.sim.deformable.viewer import DeformableViewer, surface_triangles
from plants.viz import PALETTE

pytest.importorskip("meshcat")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1024,768"]


def test_surface_of_a_tet_mesh_is_closed_and_outward():
    """The boundary triangles of a 0.1 × 0.2 × 0.3 box: area 2(ab + bc + ca), and the divergence
    theorem's volume Σ x₀·(x₁ × x₂)/6 equals the box's (positive: normals point out)."""
    mesh = box_tet_mesh((0.1, 0.2, 0.3), (2, 3, 4), center=(0.3, -0.1, 0.2))
    F = surface_triangles(mesh)
    P = mesh.X[F]
    cross = np.cross(P[:, 1] - P[:, 0], P[:, 2] - P[:, 0])
    assert 0.5 * np.linalg.norm(cross, axis=1).sum() == pytest.approx(2 * (0.02 + 0.06 + 0.03), rel=1e-12)
    assert np.einsum("ij,ij->i", P[:, 0], np.cross(P[:, 1], P[:, 2])).sum() / 6 == pytest.approx(0.006, rel=1e-12)
    cloth = cloth_sheet((1.0, 1.0), (3, 3))
    np.testing.assert_array_equal(surface_triangles(cloth), cloth.elements)


@pytest.fixture(scope="module")
def gripper():
    sim = load_scene("gripper-ball", cells=3)
    return sim, sim.run(0.6)


def test_recording_holds_the_simulated_positions_frame_by_frame(gripper, tmp_path):
    sim, traj = gripper
    with DeformableViewer(sim.world) as viewer:
        frames = viewer.record(traj, fps=10)
        html = viewer.save_html(tmp_path / "sub" / "gripper.html").read_text()
        with pytest.raises(ValueError, match="fps must be finite"):
            viewer.record(traj, fps=0)
        with pytest.raises(ValueError, match="exceed max_frames"):
            viewer.record(traj, fps=1000, max_frames=50)
        with pytest.raises(ValueError, match="x must have shape"):
            viewer.show(np.zeros((3, 3)))
    assert frames == 7  # 0.6 s at 10 frames per second, both ends
    P = traj.deformable_positions["ball"]
    np.testing.assert_array_equal(viewer.frame_positions[0], P[::10])
    assert "animation" in html.lower()
    assert len(html) > 200_000  # three.js inlined


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_headless_chromium_renders_the_ball_between_the_fingers(gripper, tmp_path):
    """The recording's first frame (the ball between the finger pads) renders in body colour 0."""
    sim, traj = gripper
    with DeformableViewer(sim.world) as viewer:
        viewer.record(traj, fps=20)
        page = viewer.save_html(tmp_path / "ball.html")
    shot = tmp_path / "shot.png"
    r = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                        page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.exists(), f"no screenshot (exit {r.returncode}): {r.stderr[-2000:]}"
    import matplotlib.image as mpimg

    img = (mpimg.imread(shot) * 255).astype(np.uint8)
    px = img[..., :3].reshape(-1, 3).astype(float)
    ref = np.asarray(PALETTE[0], float)
    cos = px @ ref / ((np.linalg.norm(px, axis=1) + 1e-9) * np.linalg.norm(ref))
    ball = float(np.mean((cos > np.cos(np.radians(8))) & (px.max(axis=1) - px.min(axis=1) > 60)))
    assert ball > 0.003, f"ball-coloured pixels: {ball:.4f}"  # a 4 cm ball in a 1024×768 view: ~0.7 %


def test_coupled_panda_link_boxes_are_drawn_where_the_kinematic_pads_are():
    """The two-way Panda's pads, drawn by forward kinematics of its configuration, sit where the
    one-way scene's kinematic pad obstacles are at t = 0 (same trajectory, computed independently
    from the hand's rotation and the finger frames), and follow traj.q in a recording."""
    two = load_scene("panda-pinch", cells=3)
    one = load_scene("panda-pinch", cells=3, coupling="one-way")
    with DeformableViewer(two.world) as viewer:
        placed = {node.path.lower().rsplit("/", 1)[-1]: T for node, T in viewer.robot_transforms()}
        for ob in one.world.obstacles[:2]:
            side = "left" if "left" in ob.name else "right"
            T = placed[f"{side}_pad"]
            np.testing.assert_allclose(T[:3, 3], ob.center, atol=1e-12)
            np.testing.assert_allclose(T[:3, :3], ob.rotation, atol=1e-12)
        traj = two.run(0.05)
        assert viewer.record(traj, fps=100) == 6
        lifted = viewer.robot_transforms(traj.q[-1])
        assert all(np.isfinite(T).all() for _, T in lifted)
        with pytest.raises(ValueError, match="robot configurations"):
            viewer.robot_transforms(np.zeros(3))
