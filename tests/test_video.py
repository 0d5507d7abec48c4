"""VideoSource on a small MJPG file written by the test: frames, order, colour, pacing, errors."""
from pathlib import Path

import cv2
import numpy as np
import pytest

from edgert.streams.clock import local_clock
from edgert.streams.video import VideoSource

FPS = 20.0
N_FRAMES = 10


@pytest.fixture
def video(tmp_path) -> Path:
    """10 frames of 32x24 at 20 fps; frame i has BGR value (0, 0, 20 i): its red grows."""
    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), FPS, (32, 24))
    assert writer.isOpened()
    for i in range(N_FRAMES):
        frame = np.zeros((24, 32, 3), np.uint8)
        frame[..., 2] = 20 * i
        writer.write(frame)
    writer.release()
    return path


def read_all(source: VideoSource, limit: int = 100) -> list:
    chunks = []
    while not source.ended and len(chunks) < limit:
        chunk = source.read(timeout=5)
        if chunk is not None:
            chunks.append(chunk)
    return chunks


def test_reads_every_frame_as_an_rgb_image_chunk(video):
    source = VideoSource(video, realtime=False)
    chunks = read_all(source)
    source.close()
    assert len(chunks) == N_FRAMES and source.ended
    assert all(c.data.shape == (1, 24, 32, 3) and c.data.dtype == np.uint8 for c in chunks)
    assert [c.seq for c in chunks] == list(range(N_FRAMES))
    stamps = np.concatenate([c.timestamps for c in chunks])
    assert np.all(np.diff(stamps) > 0) and stamps[-1] <= local_clock()
    red = [float(c.data[..., 0].mean()) for c in chunks]
    assert np.allclose(red, 20 * np.arange(N_FRAMES), atol=4)
    assert max(float(c.data[..., 1:].mean()) for c in chunks) < 4
    info = chunks[0].info
    assert (info.name, info.type, info.channels, info.rate, info.dtype) == (
        "clip", "Video", ("R", "G", "B"), FPS, "uint8")
    assert source.read(timeout=0.1) is None


def test_realtime_paces_at_the_file_rate(video):
    source = VideoSource(str(video))
    stamps = [c.timestamps[0] for c in read_all(source)]
    source.close()
    span = (N_FRAMES - 1) / FPS
    assert len(stamps) == N_FRAMES
    assert span * 0.95 <= stamps[-1] - stamps[0] <= span + 0.3
    assert min(np.diff(stamps)) > 0.5 / FPS


def test_fast_mode_is_not_paced(video):
    source = VideoSource(str(video), realtime=False)
    stamps = [c.timestamps[0] for c in read_all(source)]
    source.close()
    assert stamps[-1] - stamps[0] < (N_FRAMES - 1) / FPS / 2


def test_read_returns_none_when_the_next_frame_is_not_due(video):
    source = VideoSource(str(video), rate=2.0)
    assert source.read(timeout=1) is not None
    start = local_clock()
    assert source.read(timeout=0.1) is None
    assert 0.08 <= local_clock() - start < 0.4
    assert source.read(timeout=1).seq == 1
    source.close()


def test_loop_starts_over_and_marks_the_gap(video):
    source = VideoSource(str(video), realtime=False, loop=True)
    chunks = read_all(source, limit=25)
    source.close()
    assert len(chunks) == 25 and [c.seq for c in chunks] == list(range(25))
    assert [c.seq for c in chunks if c.gap] == [10, 20]
    assert chunks[10].data[..., 0].mean() < 4


def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nope.avi"
    with pytest.raises(FileNotFoundError, match=str(path)):
        VideoSource(str(path))


def test_unreadable_file_names_the_path(tmp_path):
    path = tmp_path / "text.avi"
    path.write_text("not a video")
    with pytest.raises(OSError, match=str(path)):
        VideoSource(str(path))
