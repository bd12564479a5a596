"""Protocol v1 frame header and the shared channel names."""

import pytest

from inference.serving.frames import (
    HEADER_SIZE,
    FrameError,
    decode_header,
    encode_frame,
    frame_jpeg,
)
from inference.serving.messages import session_group, worker_channel


def test_a_frame_is_a_12_byte_header_then_the_jpeg():
    data = encode_frame(513, 70000, b"\xff\xd8jpeg", flags=1)
    assert HEADER_SIZE == 12
    assert data[:12] == b"PX\x01\x01" + (513).to_bytes(4, "big") + (70000).to_bytes(4, "big")
    assert decode_header(data) == (1, 1, 513, 70000)
    assert frame_jpeg(data) == b"\xff\xd8jpeg"


def test_counters_wrap_at_32_bits():
    assert decode_header(encode_frame(2**32 + 5, 2**32, b""))[2:] == (5, 0)


@pytest.mark.parametrize("data", [b"", b"PX\x01", b"XX" + bytes(10)])
def test_it_rejects_what_is_not_a_frame(data):
    with pytest.raises(FrameError):
        decode_header(data)


def test_names_are_valid_channel_layer_names():
    from channels.layers import InMemoryChannelLayer

    layer = InMemoryChannelLayer()
    assert layer.require_valid_group_name(session_group("0b6f1c2e-8d7a-4a55-9d5c-3b1f4d2a9e10"))
    assert layer.require_valid_channel_name(worker_channel("host-1.gpu_0"), receive=True)
