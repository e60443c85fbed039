"""The full Franka Panda (``example-robot-data``) with a spherical end effector, a ball and a
table: the full-order model M_f of seed 003 §VIII-D, for the contact simulator and the impedance
controller.

The arm is ``panda_description/urdf/panda.urdf`` of the installed ``example-robot-data``
package (located at run time), gripper fingers locked at ``finger_opening``. A collision sphere
``ee_sphere`` (radius ``ee_radius``) is added at the ``panda_hand_tcp`` frame, where the paper's
robot carries its spherical end effector. With ``with_ball`` (default) a rigid ball (the
simplified model's: r = 0.0315 m, 0.132 kg) on a free-flyer joint and a table whose top is
z = 0 (the robot base plane) are added, with contacts ee_sphere-ball and ball-table (μ = 1,
d = 2). The link meshes stay in the collision model (for the simulator); the LCS uses only the
configured pairs.

State: ``q = [panda_joint1..7, (ball position (3), quaternion (x, y, z, w))]``,
``v = [joint velocities (7), (ball velocity (3, world), angular velocity (3, ball frame))]``
(n_x = 14 without the ball, 27 with it; the ball as in :func:`.base.add_ball`); input: the
7 joint torques [N m].
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..paper.base import ControlDefaults
from ..registry import register_plant
from .base import (
    MultibodyModelPlant,
    add_ball,
    check_contact_model,
    check_positive,
    make_params,
)
from .franka_ball import BALL_MASS, BALL_RADIUS, EE_RADIUS

__all__ = ["FrankaPandaParams", "FrankaPanda", "PANDA_HOME"]

#: The authors' nominal arm configuration (dairlib ball-rolling ``q_init_franka``) [rad].
PANDA_HOME = (0.0, 0.36, 0.0, -2.39, 0.0, 2.748, 0.0)


@dataclass(frozen=True)
class FrankaPandaParams:
    """Parameters of the full Panda plant.

    Attributes:
        ee_radius: radius of the spherical end effector [m].
        with_ball: add the ball and the table (and their two contacts).
        mu: friction coefficient of the contacts.
        finger_opening: the locked gripper-finger position [m] (0 to 0.04).
        dt: time step [s].
        contact_model: default contact model.
    """

    ee_radius: float = EE_RADIUS
    with_ball: bool = True
    mu: float = 1.0
    finger_opening: float = 0.0
    dt: float = 0.01
    contact_model: str = "stewart_trinkle"

    def __post_init__(self) -> None:
        check_positive(self, "ee_radius", "dt")
        if not isinstance(self.with_ball, bool):
            raise TypeError(f"with_ball must be a bool, got {self.with_ball!r}")
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"mu must be finite and >= 0, got {self.mu!r}")
        if not (0.0 <= self.finger_opening <= 0.04):
            raise ValueError(f"finger_opening must be in [0, 0.04] m, got {self.finger_opening!r}")
        check_contact_model(self.contact_model)


@register_plant("franka-panda")
class FrankaPanda(MultibodyModelPlant):
    """The 7-DoF Panda with a spherical end effector (and, by default, a ball on a table)."""

    name = "franka-panda"

    def __init__(self, **params: Any):
        super().__init__(make_params(FrankaPandaParams, self.name, params))

    def _build_multibody(self) -> Any:
        import coal
        import pinocchio as pin

        from ..multibody import ContactPair, MultibodyPlant, Sphere
        from ..multibody.resources import default_package_dirs, example_robot_data_path

        p = self.params
        urdf = example_robot_data_path("robots/panda_description/urdf/panda.urdf")
        full = pin.buildModelFromUrdf(str(urdf))
        geom_full = pin.buildGeomFromUrdf(full, str(urdf), pin.GeometryType.COLLISION,
                                          package_dirs=list(default_package_dirs(urdf)))
        q_ref = pin.neutral(full)
        lock = []
        for jn in ("panda_finger_joint1", "panda_finger_joint2"):
            jid = full.getJointId(jn)
            lock.append(jid)
            q_ref[full.joints[jid].idx_q] = p.finger_opening
        model, geom = pin.buildReducedModel(full, geom_full, lock, q_ref)
        tcp = model.getFrameId("panda_hand_tcp")
        f = model.frames[tcp]
        geom.addGeometryObject(pin.GeometryObject(
            "ee_sphere", f.parentJoint, tcp, f.placement, Sphere(p.ee_radius).coal()))
        pairs = []
        if p.with_ball:
            add_ball(model, geom, "ball", BALL_RADIUS, BALL_MASS)
            table = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.05]))  # half-space z <= 0
            geom.addGeometryObject(pin.GeometryObject(
                "table", 0, 0, table, coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.05)))
            pairs = [ContactPair("ee_sphere", "ball", p.mu, 2),
                     ContactPair("ball", "table", p.mu, 2)]
        arm = [f"panda_joint{i}" for i in range(1, 8)]
        B = MultibodyPlant.actuation_for_joints(model, arm)
        return MultibodyPlant(model, geom, pairs, actuation=B, name=self.name)

    @cached_property
    def defaults(self) -> ControlDefaults:
        """Nominal settings, not a paper controller: the paper plans with the simplified model
        (``franka-ball``) and tracks the plan with the impedance law on this model.

        x0: the arm at :data:`PANDA_HOME`, the ball at rest at (0.55, 0.1) on the table. The
        goal equals x0; Q = I on the arm, 10000 on the ball's x, y; R = 0.01·I; N = 5,
        dt = ``params.dt``.
        """
        with_ball = self.params.with_ball
        n_q = 14 if with_ball else 7
        n_v = 13 if with_ball else 7
        n_x = n_q + n_v
        x0 = np.zeros(n_x)
        x0[:7] = PANDA_HOME
        q = np.zeros(n_x)
        q[:7] = 1.0
        q[n_q:n_q + 7] = 0.1
        if with_ball:
            x0[7:10] = [0.55, 0.1, BALL_RADIUS]
            x0[13] = 1.0
            q[7:9] = 10000.0
        n_l = self.n_lambda
        inf = np.full(n_x, np.inf)
        tau = np.array([87.0, 87, 87, 87, 12, 12, 12])
        return ControlDefaults(
            N=5, dt=self.params.dt, Q=np.diag(q), R=0.01 * np.eye(7), QN=np.diag(q),
            G=0.1 * np.eye(n_x + n_l + 7), U=np.diag([10.0] * n_x + [1.0] * (n_l + 7)),
            admm_iter=2, rho=1.0, rho_scale=3.0, projection="miqp", x0=x0, x_goal=x0.copy(),
            x_lower=-inf, x_upper=inf, u_lower=-tau, u_upper=tau,
            notes="Full-order model for simulation/impedance control; torque limits from the "
                  "URDF.",
        )
