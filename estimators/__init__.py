"""State estimation for deployment: cameras, multi-camera ball tracking, AprilTag poses.

The one step verb (STYLE.md rule 5)::

    tracker = BallTracker(cameras, BallTrackerOptions(radius=0.03), table_corners=...)
    state = tracker.step([image_0, image_1, image_2], t)     # -> BallState (status, p, v, ω, q)

:class:`BallFilter` is the same pipeline from 3-D positions, and
:class:`EmulatedBallVision` samples a simulator's true ball position at the camera rate with
noise through it (seed 003 §VII-A). :mod:`estimators.synthetic` renders test scenes from
known ground truth.
The geometry is in docs/estimators.md.
"""

from .apriltags import (ObjectPoseEstimate, TagDetection, TagDetector, TagPose,
                        calibrate_extrinsics, estimate_object_pose, estimate_tag_pose,
                        refine_tag_corners, tag_corners_in_tag_frame)
from .ball_filter import BallFilter, cv_steady_state, reject_outliers
from .ball_geometry import (BALL_DEPTH_METHODS, OutlineFit, apparent_radius_range,
                            ball_center_from_outline, fit_sphere_cone, table_mask)
from .ball_state import BallState, BallStatus
from .ball_tracker import BallTracker, CameraObservation
from .camera import Camera, CameraIntrinsics, load_cameras, save_cameras
from .circle_detection import (CircleDetection, CircleDetectionOptions, detect_ball_circle,
                               fit_circle)
from .emulated import EmulatedBallVision, EmulatedForceSensor
from .errors import CalibrationError, EstimatorError, EstimatorTypeError, EstimatorValueError
from .options import BallTrackerOptions
from .transforms import invert_transform, look_at, make_transform

__all__ = [
    "ObjectPoseEstimate", "TagDetection", "TagDetector", "TagPose", "calibrate_extrinsics",
    "estimate_object_pose", "estimate_tag_pose", "refine_tag_corners",
    "tag_corners_in_tag_frame",
    "BallFilter", "reject_outliers",
    "cv_steady_state",
    "BALL_DEPTH_METHODS", "OutlineFit", "apparent_radius_range", "ball_center_from_outline",
    "fit_sphere_cone", "table_mask",
    "BallState", "BallStatus", "BallTracker", "CameraObservation",
    "Camera", "CameraIntrinsics", "load_cameras", "save_cameras",
    "CircleDetection", "CircleDetectionOptions", "detect_ball_circle", "fit_circle",
    "EmulatedBallVision",
    "EmulatedForceSensor",
    "CalibrationError", "EstimatorError", "EstimatorTypeError", "EstimatorValueError",
    "BallTrackerOptions", "invert_transform", "look_at", "make_transform",
]
