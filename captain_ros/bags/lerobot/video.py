"""Camera streams to MP4 (PyAV): H.264 (libx264), yuv420p, one frame per data frame.

H.264 in MP4 is what browsers, VLC, Foxglove and LeRobot's decoders (torchcodec, PyAV) all read;
yuv420p is the pixel format players expect of it. Frames carry ``pts = frame index`` in a
``1/fps`` time base, no B-frames and a keyframe every ``GOP`` frames (LeRobot seeks to single
frames, so short groups keep random access cheap). Several episodes share one file: each starts
where the previous ended (``from_timestamp`` in the episodes table).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import numpy as np

from captain_ros.bags.lerobot.episode import ExportError

CODEC = "libx264"
PIX_FMT = "yuv420p"
GOP = 2
CRF = "23"


def image_rgb(msg: Any, where: str) -> np.ndarray:
    """A ``sensor_msgs/Image`` as an ``H x W x 3`` uint8 RGB array."""
    h, w, enc = int(msg.height), int(msg.width), str(msg.encoding)
    data = np.asarray(msg.data, np.uint8)
    channels = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}.get(enc)
    if channels is None:
        raise ExportError(
            f"{where}: image encoding {enc!r} is not exported (rgb8, bgr8, rgba8, bgra8, mono8)"
        )
    step = int(msg.step) or w * channels
    if data.size < h * step:
        raise ExportError(f"{where}: image data shorter than height x step")
    img = data[: h * step].reshape(h, step)[:, : w * channels].reshape(h, w, channels)
    if enc in ("bgr8", "bgra8"):
        img = img[:, :, 2::-1]
    elif channels == 4:
        img = img[:, :, :3]
    elif channels == 1:
        img = np.repeat(img, 3, axis=2)
    return np.ascontiguousarray(img)


def held_images(
    images: Iterator[tuple[int, str, Callable[[], Any]]],
    t_ns: np.ndarray,
    cameras: tuple[str, ...],
    where: str,
) -> Iterator[dict[str, np.ndarray]]:
    """Per frame time, each camera's latest image at or before it (sample-and-hold), from the
    cameras' time-ordered messages; each image is decoded at most once, and only if held."""
    latest: dict[str, Callable[[], Any]] = {}
    current: dict[str, np.ndarray] = {}
    k = 0

    def frame() -> dict[str, np.ndarray]:
        for cam in cameras:
            if cam in latest:
                current[cam] = image_rgb(latest.pop(cam)(), f"{where} /camera/{cam}/image_raw")
            if cam not in current:
                raise ExportError(f"{where}: no /camera/{cam}/image_raw image at or before a frame")
        return dict(current)

    for t, cam, decode in images:
        while k < len(t_ns) and t_ns[k] < t:
            yield frame()
            k += 1
        latest[cam] = decode
    while k < len(t_ns):
        yield frame()
        k += 1


class VideoFile:
    """One MP4 file of one camera, appended to episode by episode."""

    def __init__(self, path: Path, fps: int, width: int, height: int) -> None:
        import av

        if width % 2 or height % 2:
            raise ExportError(
                f"{path.parent.parent.name}: {width}x{height} images: H.264 4:2:0 needs even sizes"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.fps, self.size = path, fps, (height, width)
        self.container = av.open(str(path), mode="w")
        self.stream = cast(
            "av.video.stream.VideoStream", self.container.add_stream(CODEC, rate=fps)
        )
        self.stream.width, self.stream.height, self.stream.pix_fmt = width, height, PIX_FMT
        self.stream.codec_context.time_base = Fraction(1, fps)
        self.stream.codec_context.gop_size = GOP
        self.stream.codec_context.max_b_frames = 0
        self.stream.options = {"crf": CRF, "preset": "veryfast"}
        self.frames = 0

    def add(self, rgb: np.ndarray) -> None:
        import av

        if rgb.shape[:2] != self.size:
            raise ExportError(
                f"{self.path.parent.parent.name}: image size changed from "
                f"{self.size[1]}x{self.size[0]} to {rgb.shape[1]}x{rgb.shape[0]}"
            )
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        frame.pts = self.frames
        frame.time_base = Fraction(1, self.fps)
        for packet in self.stream.encode(frame):
            self.container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        for packet in self.stream.encode():
            self.container.mux(packet)
        self.container.close()


def video_info(path: Path) -> dict[str, Any]:
    """The ``info`` of a video feature, read back from the file as LeRobot does."""
    import av

    with av.open(str(path)) as c:
        s = c.streams.video[0]
        return {
            "video.height": s.height,
            "video.width": s.width,
            "video.codec": s.codec_context.name,
            "video.pix_fmt": s.pix_fmt,
            "video.is_depth_map": False,
            "video.fps": int(s.base_rate or 0),
            "video.channels": 3,
            "has_audio": bool(c.streams.audio),
        }
