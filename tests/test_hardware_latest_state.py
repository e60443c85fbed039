"""hardware.latest_state.LatestValidState: the newest accepted state and the rejection record
shared by the robot-state and ball-detection adapters."""

from __future__ import annotations

import logging
import threading

from hardware.latest_state import LatestValidState


class _Stream(LatestValidState[int]):
    _what = "test message"
    _logger = logging.getLogger("hardware.test_stream")

    def feed(self, value: int) -> None:
        if value < 0:
            self._reject(f"negative {value}")
            return
        with self._lock:
            self._state = value


def test_keeps_the_newest_accepted_state_and_the_last_20_reasons(caplog):
    s = _Stream()
    assert s.state() is None and s.rejected == 0
    s.feed(3)
    with caplog.at_level(logging.WARNING, logger="hardware.test_stream"):
        for k in range(1, 251):
            s.feed(-k)
    assert s.state() == 3
    assert s.rejected == 250
    assert list(s.rejections) == [f"negative {-k}" for k in range(231, 251)]
    # a flood is logged sparsely: the first five, then every hundredth
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [f"rejected test message #{n}: negative -{n}" for n in (1, 2, 3, 4, 5, 100,
                                                                              200)]


def test_instances_do_not_share_state_and_concurrent_rejections_all_count():
    a, b = _Stream(), _Stream()
    threads = [threading.Thread(target=lambda: [a.feed(-1) for _ in range(500)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert a.rejected == 2000 and b.rejected == 0 and b.state() is None


def test_camera_listeners_hear_accepted_detections_only():
    """The deploy loop's ``tick_on_detection`` wakes on ``add_listener``: called once per
    accepted detection, never for a rejected one (bad frame, jump, stamp not after)."""
    import math

    import numpy as np

    from hardware import messages
    from hardware.camera import BallDetectionAdapter, CameraOptions

    cam = BallDetectionAdapter(None, CameraOptions(max_stamp_lag=math.inf))
    heard: list[int] = []
    cam.add_listener(lambda: heard.append(cam.state().count))
    p = np.array([0.55, 0.0, 0.03])
    cam._on_msg(messages.point_stamped(p, "panda_link0", 10.0, 1), 0.0)
    cam._on_msg(messages.point_stamped(p, "camera", 10.1, 2), 0.1)  # wrong frame
    cam._on_msg(messages.point_stamped(p + [0.5, 0, 0], "panda_link0", 10.2, 3), 0.2)  # jump
    cam._on_msg(messages.point_stamped(p, "panda_link0", 10.0, 4), 0.3)  # stamp not after
    cam._on_msg(messages.point_stamped(p, "panda_link0", 10.4, 5), 0.4)
    assert cam.rejected == 3
    assert heard == [1, 2]
