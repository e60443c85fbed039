"""Options of the ball tracker: one frozen dataclass, defaults declared once, strict loading."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .circle_detection import CircleDetectionOptions
from ._validation import as_float_array, check_bool, real_number
from .errors import EstimatorTypeError, EstimatorValueError

__all__ = ["BallTrackerOptions", "FILTERS"]

#: Accepted ``BallTrackerOptions.filter`` values.
FILTERS = ("lowpass", "kalman", "none")


@dataclass(frozen=True)
class BallTrackerOptions:
    """Settings of :class:`estimators.BallFilter` and :class:`estimators.BallTracker`."""

    radius: float = 0.03
    """Ball radius r [m] (> 0). Set it to your ball's."""

    depth_method: str = "plane"
    """How a camera places the ball along its viewing ray: "plane" (on the plane
    n·p = table_height + r) or "size" (depth from apparent size); docs/estimators.md §2."""

    table_height: float = 0.0
    """Table plane offset h [m]: the plane is n·p = h (z = h for n = e_z)."""

    table_normal: tuple[float, float, float] = (0.0, 0.0, 1.0)
    """Table normal n, world frame (rolling axis ω = n × v / r uses it)."""

    outlier_sigmas: float = 3.0
    """Cameras farther than this many robust standard deviations (1.4826 MAD) from the
    median position are rejected."""

    outlier_min_distance: float = 0.005
    """Never reject a camera closer than this to the median [m] (the MAD of 2-3 cameras that
    agree can be tiny)."""

    gate_distance: float = 0.05
    """While tracking, measurements farther than this from the predicted position are
    rejected [m] (0.05 m at 80 Hz allows 4 m/s)."""

    filter: str = "lowpass"
    """"lowpass": first-order low-pass on position, velocity by finite differences of the
    filtered position (the paper's hardware pipeline); "kalman": constant-velocity Kalman
    filter; "none": the fused position as is, velocity by finite differences (the paper's
    emulated vision in simulation, §VII-A; ``velocity_cutoff_hz`` still applies)."""

    position_cutoff_hz: float = 20.0
    """Cut-off of the position low-pass [Hz] (filter="lowpass")."""

    velocity_cutoff_hz: float | None = 10.0
    """Cut-off of a low-pass on the finite-difference velocity [Hz] (None: raw differences)."""

    kalman_accel_std: float = 1.0
    """Kalman process noise: white acceleration standard deviation [m/s^2] (larger: faster
    response to pushes, noisier velocity; 1.0 gives ~15 mm/s median velocity error at 80 Hz
    with 0.5 mm position noise)."""

    kalman_measurement_std: float = 0.0005
    """Kalman measurement noise standard deviation [m] (per axis, fused position)."""

    max_coast_time: float = 0.1
    """How long the state is extrapolated without measurements before the status is LOST [s]."""

    rolling: bool = True
    """Angular velocity from rolling without slipping (ω = n × v_t / r); False: zero ω, status
    unaffected (use when the ball is known not to roll)."""

    search_window_px: float | None = 0.0
    """While tracking, search each image first in a window of this half-width [px] around the
    predicted ball (0: automatic, 2.5 x the largest apparent radius + 20 px; None: always the
    whole image). The whole image is searched when the window has no ball."""

    detection: CircleDetectionOptions = field(default_factory=CircleDetectionOptions)
    """Circle detection settings (images only)."""

    def __post_init__(self) -> None:
        def positive(name: str, allow_none: bool = False) -> None:
            v = real_number(f"BallTrackerOptions.{name}", getattr(self, name), minimum=0.0,
                            exclusive_minimum=True, allow_none=allow_none)
            object.__setattr__(self, name, v)

        for name in ("radius", "outlier_sigmas", "outlier_min_distance", "gate_distance",
                     "position_cutoff_hz", "kalman_accel_std", "kalman_measurement_std",
                     "max_coast_time"):
            positive(name)
        positive("velocity_cutoff_hz", allow_none=True)
        object.__setattr__(self, "search_window_px", real_number(
            "BallTrackerOptions.search_window_px", self.search_window_px, minimum=0.0,
            allow_none=True))
        object.__setattr__(self, "table_height", real_number("BallTrackerOptions.table_height",
                                                             self.table_height))
        check_bool("BallTrackerOptions.rolling", self.rolling)
        for name in ("depth_method", "filter"):
            if not isinstance(getattr(self, name), str):
                raise EstimatorTypeError(f"BallTrackerOptions.{name} must be a str, got "
                                         f"{type(getattr(self, name)).__name__}")
        if self.depth_method not in ("plane", "size"):
            raise EstimatorValueError(f"BallTrackerOptions.depth_method must be 'plane' or "
                                      f"'size', got {self.depth_method!r}")
        if self.filter not in FILTERS:
            raise EstimatorValueError(f"BallTrackerOptions.filter must be one of {list(FILTERS)}, "
                                      f"got {self.filter!r}")
        n = as_float_array("BallTrackerOptions.table_normal", self.table_normal, shape=(3,))
        if np.linalg.norm(n) == 0:
            raise EstimatorValueError("BallTrackerOptions.table_normal must be a non-zero 3-vector")
        if isinstance(self.detection, Mapping):
            object.__setattr__(self, "detection", _from_mapping(CircleDetectionOptions,
                                                                self.detection, "detection"))
        if not isinstance(self.detection, CircleDetectionOptions):
            raise EstimatorTypeError("BallTrackerOptions.detection must be a "
                                     "CircleDetectionOptions or a mapping")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BallTrackerOptions":
        """Options from a mapping; unknown keys raise ValueError listing the valid ones."""
        return _from_mapping(cls, data, "BallTrackerOptions")

    @classmethod
    def from_yaml(cls, path: str | Path, key: str | None = None) -> "BallTrackerOptions":
        """Options from a YAML file (optionally the mapping under ``key``)."""
        from ._validation import load_yaml

        data = load_yaml(path) or {}
        return cls.from_dict(data[key] if key else data)


def _from_mapping(cls: type, data: Mapping[str, Any], label: str) -> Any:
    if not isinstance(data, Mapping):
        raise EstimatorTypeError(f"{label} must be a mapping, got {type(data).__name__}")
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise EstimatorValueError(f"unknown {label} option(s) {unknown}; valid options: {names}")
    kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items()}
    return cls(**kwargs)
