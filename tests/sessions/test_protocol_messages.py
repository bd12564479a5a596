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


def _limiter(now: list[float]) -> MessageRateLimiter:
    return MessageRateLimiter(rate=60, burst=300, clock=lambda: now[0])


def _messages_until_flooding(limiter: MessageRateLimiter, now: list[float], every_s: float) -> int:
    for sent in range(100_000):
        try:
            limiter.check()
        except ProtocolError as exc:
            assert exc.abuse and exc.code == "rate_limited"
            return sent
        now[0] += every_s
    return -1  # never


def test_a_steady_sixty_messages_a_second_is_allowed():
    now = [100.0]
    assert _messages_until_flooding(_limiter(now), now, every_s=1 / 59.9) == -1


def test_what_a_stall_held_back_is_not_flooding_when_it_arrives_at_once():
    # 10 s of the busiest play (20 messages a second) reach a process waking from a stall: the
    # old window (60 in any second) closed the socket at the 61st.
    now = [100.0]
    limiter = _limiter(now)
    for _ in range(200):
        limiter.check()
    now[0] += 1.0
    assert _messages_until_flooding(limiter, now, every_s=1 / 20) == -1


def test_a_second_stall_soon_after_the_first_is_not_flooding_either():
    now = [100.0]
    limiter = _limiter(now)
    for _stall in range(3):
        for _ in range(200):  # 10 s of busy play held back, then at once
            limiter.check()
        now[0] += 5.0  # play resumes, the bucket refills


def test_a_sustained_flood_is_closed_within_a_second():
    now = [100.0]
    sent = _messages_until_flooding(_limiter(now), now, every_s=1 / 1000)
    assert 300 < sent < 400  # the burst, plus 60 a second of refill


def test_a_flood_just_over_the_rate_is_closed_once_the_burst_is_spent():
    now = [100.0]
    sent = _messages_until_flooding(_limiter(now), now, every_s=1 / 100)
    assert 0 < sent < 100 * 10  # 300 / (100 - 60) s = 7.5 s


def test_more_than_the_burst_at_once_is_flooding():
    now = [100.0]
    assert _messages_until_flooding(_limiter(now), now, every_s=0.0) == 300


def test_real_unicode_and_a_paired_surrogate_escape_are_text():
    message = parse_client_message('{"type": "say", "text": "caf\\u00e9 \\ud83d\\ude00"}')
    assert message.text == "café 😀"
