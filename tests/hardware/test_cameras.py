"""Frame -> observation conversion (recorded arrays) and the RealSense path (software device)."""

from __future__ import annotations

import numpy as np
import pytest

from captain_ros.backends.cameras import Intrinsics, RawRGBD, encode_depth, to_camera_frame
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.perception.camera import *  # noqa: F403 - the observation path perception uses


def _raw(h: int = 48, w: int = 64) -> RawRGBD:
    rng = np.random.default_rng(0)
    depth_m = rng.uniform(0.3, 1.5, (h, w))
    depth_m[0, 0] = 0.0
    return RawRGBD(
        rng.integers(0, 255, (h, w, 3), dtype=np.uint8),
        encode_depth(depth_m),
        0.001,
        Intrinsics(w, h, 50.0, 51.0, (w - 1) / 2, (h - 1) / 2),
        1.25,
    )


def test_raw_rgbd_to_camera_frame() -> None:
    raw = _raw()
    pose = np.eye(4)
    pose[:3, 3] = [0.8, 0.0, 0.9]
    f = to_camera_frame("head", raw, pose)
    assert f.depth_m.dtype == np.float32 and f.depth_m[0, 0] == 0.0
    assert np.allclose(f.depth_m[1:], raw.depth[1:] * 0.001, atol=1e-6)
    assert f.intrinsics[0, 0] == 50.0 and f.intrinsics[1, 2] == pytest.approx(23.5)
    assert np.array_equal(f.world_from_camera, pose) and f.stamp_s == 1.25


def test_bad_frames_are_refused() -> None:
    raw = _raw()
    with pytest.raises(InvalidArgumentError):
        RawRGBD(raw.color, raw.depth[:, :10], 0.001, raw.intrinsics, 0.0)
    with pytest.raises(InvalidArgumentError):
        to_camera_frame("head", raw, np.zeros((4, 4)))
    assert encode_depth(np.array([[np.nan, 70.0]]))[0].tolist() == [0, 65535]


def test_realsense_software_device_frames() -> None:
    rs = pytest.importorskip("pyrealsense2", reason="pyrealsense2 needs libusb-1.0-0")
    from captain_ros.backends.cameras.realsense import raw_from_frameset

    w, h = 64, 48
    dev = rs.software_device()
    sensor = dev.add_sensor("RGBD")
    intr = rs.intrinsics()
    intr.width, intr.height, intr.fx, intr.fy, intr.ppx, intr.ppy = w, h, 50.0, 50.0, 31.5, 23.5
    intr.model = rs.distortion.none
    intr.coeffs = [0.0] * 5

    def stream(kind, fmt, bpp, idx):  # type: ignore[no-untyped-def]
        vs = rs.video_stream()
        vs.type, vs.index, vs.uid, vs.width, vs.height, vs.fps, vs.bpp, vs.fmt, vs.intrinsics = (
            kind,
            idx,
            idx,
            w,
            h,
            30,
            bpp,
            fmt,
            intr,
        )
        return sensor.add_video_stream(vs)

    color_p = stream(rs.stream.color, rs.format.rgb8, 3, 0)
    depth_p = stream(rs.stream.depth, rs.format.z16, 2, 1)
    sensor.add_read_only_option(rs.option.depth_units, 0.001)
    depth_p.register_extrinsics_to(color_p, rs.extrinsics())
    sync = rs.syncer()
    sensor.open([color_p, depth_p])
    sensor.start(sync)
    rgb = np.full((h, w, 3), 90, np.uint8)
    depth = np.full((h, w), 750, np.uint16)
    frames = None
    for n in range(1, 6):  # the syncer pairs colour and depth once both streams are running
        for k, (prof, arr, bpp) in enumerate(((color_p, rgb, 3), (depth_p, depth, 2))):
            f = rs.software_video_frame()
            f.pixels, f.stride, f.bpp, f.timestamp, f.frame_number = arr, w * bpp, bpp, 10.0 * n, n
            f.domain, f.profile = rs.timestamp_domain.hardware_clock, prof.as_video_stream_profile()
            if k == 1:
                f.depth_units = 0.001
            sensor.on_video_frame(f)
        got = sync.wait_for_frames(2000)
        if got.get_color_frame() and got.get_depth_frame():
            frames = got
            break
    assert frames is not None, "the software device never delivered a colour+depth pair"

    class SameGrid:  # colour and depth share one grid here; rs.align on software-device frames
        def process(self, fs):  # type: ignore[no-untyped-def]  # returned empty depth (see
            return fs  # docs/hardware.md); a live camera uses rs.align(rs.stream.color)

    raw = raw_from_frameset(frames, SameGrid(), 0.001, 2.0)
    frame = to_camera_frame("head", raw, np.eye(4))
    assert frame.rgb.shape == (h, w, 3) and int(frame.rgb[0, 0, 0]) == 90
    valid = frame.depth_m[frame.depth_m > 0]
    assert valid.size > 0.5 * w * h and np.allclose(valid, 0.75, atol=0.01)
    assert frame.intrinsics[0, 2] == pytest.approx(31.5)
    sensor.stop()
    sensor.close()
