"""Protocol v1 binary frames: the header the worker writes and every client reads.

DESIGN.md defines the protocol; sessions/README.md lists the channel-layer messages.

A binary frame is a 12-byte header followed by one JPEG image:
``b"PX"`` + version ``u8`` + flags ``u8`` + frame number ``u32`` BE + last applied input seq
``u32`` BE. The worker builds frames; the browser reads them (``static/js``); the consumer
forwards the bytes untouched.
"""

import struct

import numpy as np
import simplejpeg

MAGIC = b"PX"
VERSION = 1
HEADER = struct.Struct(">2sBBII")  # magic, version, flags, frame no, last applied input seq
HEADER_SIZE = HEADER.size  # 12
U32_MAX = 0xFFFFFFFF

# Flag bits of the header's flags byte.
FLAG_RESTORED = 0x01  # first frame after the session was restored from a snapshot


def jpeg(frame: np.ndarray, quality: int) -> bytes:
    """The JPEG of a frame (H, W, 3) uint8, chroma at full resolution (4:4:4): a frame is shown
    magnified about 3x, and 4:2:0 smeared every coloured edge over two pixels
    (`bench/encoding.py`, docs/decisions.md)."""
    return simplejpeg.encode_jpeg(frame, quality=quality, colorspace="RGB", colorsubsampling="444")


class FrameError(ValueError):
    """The bytes are not a protocol v1 frame."""


def encode_frame(frame_no: int, input_seq: int, jpeg: bytes, flags: int = 0) -> bytes:
    # Counters wrap rather than overflow: a 30-minute session at 24 fps is far below 2**32.
    return HEADER.pack(MAGIC, VERSION, flags & 0xFF, frame_no & U32_MAX, input_seq & U32_MAX) + jpeg


def decode_header(data: bytes) -> tuple[int, int, int, int]:
    """-> (version, flags, frame_no, seq); raises FrameError on anything else."""
    if len(data) < HEADER_SIZE:
        raise FrameError(f"a frame needs at least {HEADER_SIZE} bytes, got {len(data)}")
    magic, version, flags, frame_no, seq = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise FrameError(f"bad magic {magic!r}")
    return version, flags, frame_no, seq


def frame_jpeg(data: bytes) -> bytes:
    return data[HEADER_SIZE:]
