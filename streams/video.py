"""Video files and cameras as a stream of image chunks, stamped in local_clock at grab."""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import cv2
import numpy as np

from edgert.streams.chunk import Chunk, StreamInfo
from edgert.streams.clock import local_clock


class VideoSource:
    """Frames of a video file, camera index or stream URL as chunks of shape (1, H, W, 3).

    Frames are RGB uint8 (OpenCV's BGR is converted, info.channels says so), one timestamp per
    frame taken right after the grab. A file is paced at `rate` (default: its own fps) when
    `realtime`, else read as fast as it decodes; cameras and URLs run at their own pace and
    `rate` is only requested from them. With `loop`, a file starts over and the first frame
    of each pass has gap=True; without it, `ended` turns True at the end of the file.
    """

    def __init__(self, source: str | int | os.PathLike, rate: float | None = None,
                 realtime: bool = True, loop: bool = False, name: str | None = None):
        source = source if isinstance(source, int) else os.fspath(source)
        self.source = source
        self.is_file = isinstance(source, str) and Path(source).is_file()
        if _missing(source):
            raise FileNotFoundError(f"video {source!r} does not exist")
        self._capture = cv2.VideoCapture(source)
        if not self._capture.isOpened():
            raise OSError(f"cannot open video {source!r}: OpenCV found no backend that reads it")
        if rate and not self.is_file:
            self._capture.set(cv2.CAP_PROP_FPS, rate)
        fps = self._capture.get(cv2.CAP_PROP_FPS)
        self.rate = float(rate or (fps if math.isfinite(fps) and fps > 0 else 0.0))
        self.realtime = realtime and self.is_file
        if self.realtime and not self.rate:
            raise ValueError(f"video {source!r} reports no frame rate; pass rate= to pace it")
        self.loop = loop
        self.ended = False
        self.info = StreamInfo(name=name or _default_name(source), type="Video",
                               channels=("R", "G", "B"), rate=self.rate, dtype="uint8",
                               source_id=str(source))
        self._seq = 0
        self._start: float | None = None
        self._gap = False

    def read(self, timeout: float = 1.0) -> Chunk | None:
        """The next frame; None if it is not due within `timeout` s or the file has ended."""
        if self.ended or (self.realtime and not self._wait(timeout)):
            return None
        if not self._grab():
            self.ended = True
            return None
        stamp = local_clock()
        ok, frame = self._capture.retrieve()
        if not ok:
            raise OSError(f"video {self.source!r}: frame {self._seq} could not be decoded")
        data = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)[np.newaxis]
        chunk = Chunk(data=data, timestamps=np.array([stamp]), info=self.info, seq=self._seq,
                      gap=self._gap)
        chunk.trace.append(("video", stamp, local_clock()))
        self._seq += 1
        self._gap = False
        return chunk

    def _wait(self, timeout: float) -> bool:
        """Sleep until the next frame is due; re-anchor the schedule after a stall."""
        now = local_clock()
        if self._start is None:
            self._start = now
        wait = self._start + self._seq / self.rate - now
        if wait > timeout:
            time.sleep(max(timeout, 0.0))
            return False
        if wait < -1 / self.rate:
            self._start = now - self._seq / self.rate
        elif wait > 0:
            time.sleep(wait)
        return True

    def _grab(self) -> bool:
        if self._capture.grab():
            return True
        if not (self.loop and self.is_file):
            return False
        self._capture.set(cv2.CAP_PROP_POS_FRAMES, 0)
        self._gap = True
        return self._capture.grab()

    def close(self) -> None:
        self._capture.release()
        self.ended = True


def _missing(source: str | int) -> bool:
    """A path that is not there; URLs and image sequences (img_%03d.png) are not paths."""
    return (isinstance(source, str) and "://" not in source and "%" not in source
            and not Path(source).exists())


def _default_name(source: str | int) -> str:
    return f"camera{source}" if isinstance(source, int) else Path(source).stem or str(source)
