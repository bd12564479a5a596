"""Protocol v1 client messages: every malformed shape is refused with a clear error code."""

import json

import pytest

from sessions.protocol import (
    MAX_MESSAGE_BYTES,
    Input,
    MessageRateLimiter,
    Ping,
    Prompt,
    ProtocolError,
    parse_client_message,
)


def _code(text=None, data=None) -> str:
    with pytest.raises(ProtocolError) as info:
        parse_client_message(text, data)
    return info.value.code


def test_it_parses_held_keys():
    message = parse_client_message(json.dumps({"type": "input", "seq": 17, "keys": ["w", "d"]}))
    assert message == Input(seq=17, keys=frozenset({"w", "d"}))


def test_it_parses_a_prompt_and_a_ping():
    prompt = parse_client_message('{"type": "prompt", "seq": 3, "text": " it snows "}')
    ping = parse_client_message('{"type": "ping", "t": 1733000000.123}')
    assert prompt == Prompt(seq=3, text="it snows")
    assert ping == Ping(t=1733000000.123)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("{not json", "bad_json"),
        ("[1, 2]", "bad_message"),
        ('{"type": "teleport"}', "unknown_type"),
        ('{"keys": []}', "unknown_type"),
        ('{"type": "input", "seq": 1, "keys": ["w", "q"]}', "bad_keys"),
        ('{"type": "input", "seq": 1, "keys": "wasd"}', "bad_keys"),
        ('{"type": "input", "seq": 1, "keys": [["w"]]}', "bad_keys"),
        ('{"type": "input", "seq": -1, "keys": []}', "bad_seq"),
        ('{"type": "input", "seq": 4294967296, "keys": []}', "bad_seq"),
        ('{"type": "input", "seq": true, "keys": []}', "bad_seq"),
        ('{"type": "input", "seq": "1", "keys": []}', "bad_seq"),
        ('{"type": "prompt", "seq": 1, "text": "   "}', "bad_text"),
        ('{"type": "prompt", "seq": 1, "text": 5}', "bad_text"),
        ('{"type": "ping", "t": "now"}', "bad_ping"),
        ('{"type": "choose", "choice_id": "c1", "option": 2}', "bad_choice"),
        # a 310-digit integer overflowed float(): the socket's task died and skipped disconnect
        ('{"type": "ping", "t": 1' + "0" * 310 + "}", "bad_ping"),
        ('{"type": "ping", "t": NaN}', "bad_ping"),
        # lone surrogates are valid JSON escapes but no text encoder or msgpack takes them
        ('{"type": "prompt", "seq": 3, "text": "\\ud800 snow"}', "bad_text"),
        ('{"type": "say", "text": "hello \\ud83d"}', "bad_text"),
        ('{"type": "choose", "choice_id": "\\udfff", "option": 0}', "bad_choice"),
        ('{"type": "vote", "choice_id": "\\ud800", "option": 1}', "bad_choice"),
    ],
)
def test_it_refuses_malformed_messages(raw, code):
    assert _code(raw) == code


def test_it_refuses_prompts_over_500_characters():
    text = json.dumps({"type": "prompt", "seq": 1, "text": "snow " * 101})
    assert _code(text) == "too_long"


def test_it_accepts_a_prompt_of_exactly_500_characters():
    message = parse_client_message(json.dumps({"type": "prompt", "seq": 1, "text": "x" * 500}))
    assert len(message.text) == 500


def test_it_refuses_oversized_messages_before_parsing():
    raw = json.dumps({"type": "ping", "t": 1, "pad": "x" * MAX_MESSAGE_BYTES})
    assert _code(raw) == "too_large"


def test_it_counts_bytes_not_characters():
    raw = json.dumps({"type": "ping", "t": 1, "pad": "é" * 2100}, ensure_ascii=False)
    assert len(raw) < MAX_MESSAGE_BYTES
    assert _code(raw) == "too_large"


def test_it_refuses_binary_messages():
    assert _code(None, b"\x00\x01") == "bad_message"


def test_the_61st_message_within_a_second_is_flooding():
    now = [100.0]
    limiter = MessageRateLimiter(limit=60, window=1.0, clock=lambda: now[0])
    for _ in range(60):
        limiter.check()
    with pytest.raises(ProtocolError) as info:
        limiter.check()
    assert info.value.abuse and info.value.code == "rate_limited"


def test_a_steady_sixty_messages_a_second_is_allowed():
    now = [100.0]
    limiter = MessageRateLimiter(limit=60, window=1.0, clock=lambda: now[0])
    for _ in range(300):
        limiter.check()
        now[0] += 1 / 59.9  # just under the limit (exactly 60 is float-fragile)


def test_real_unicode_and_a_paired_surrogate_escape_are_text():
    message = parse_client_message('{"type": "say", "text": "caf\\u00e9 \\ud83d\\ude00"}')
    assert message.text == "café 😀"
