"""The typed web<->worker messages: one definition each, their channel-layer form, and readers
that turn another process's garbage into empty values instead of exceptions."""

import dataclasses
from pathlib import Path

import msgpack
import pytest

from inference.serving import messages as m

INBOX = [
    m.Attach(
        session_id="s1",
        prompt="a meadow",
        seed=7,
        world_title="Meadow",
        restore=True,
        category="characters",
        story_opening="",
        character=m.CharacterCard(name="Ferryman", persona="gruff", greeting="Well?"),
        slot=2,
        name="Ada",
        persist_key="live-worlds/3/v.pxw",
    ),
    m.Input(session_id="s1", seq=41, keys=("d", "w"), slot=1),
    m.Prompt(session_id="s1", seq=3, text="it starts to snow", slot=3),
    m.Choose(session_id="s1", choice_id="c2", option=1, slot=1),
    m.Vote(session_id="s1", voter="user:4", choice_id="c2", option=0),
    m.Say(session_id="s1", text="who are you?", slot=2),
    m.Say(session_id="s1", text=None, slot=2, refused=True),
    m.Detach(session_id="s1", slot=1),
    m.Unseat(session_id="s1", slot=1),
    m.End(session_id="s1", reason="idle"),
    m.Probe(nonce="abc"),
]


@pytest.mark.parametrize("message", INBOX, ids=lambda msg: msg.TYPE)
def test_every_inbox_message_survives_its_channel_layer_form(message):
    body = msgpack.unpackb(msgpack.packb(message.to_message()))  # what channels_redis sends
    assert body["type"] == message.TYPE
    assert m.parse_inbox(body) == message


@pytest.mark.parametrize(
    "message",
    [
        m.Status(state="live", fps=23.5, reason=None, worker="w1"),
        m.Event(seq=3, status="applied"),
        m.Event(seq=4, status="unsupported", reason="no", by="Ada", slot=2, suggest=("snow",)),
        m.Event(seq=5, status="applied", by="Ada", slot=2, text="night", history=3, only_slot=0),
        m.Choices(choice_id="c1", options=("Wade in", "Turn back"), story=("It began.",)),
        m.Choices(choice_id="c1", options=("a", "b"), votes=(2, 1), audience=(0, 5), closes_in=9.5),
        m.Line(speaker="Ferryman", text="Well?"),
        m.Line(speaker="Ada", text="hello", slot=2),
        m.Error(code="stale_choice", message="That choice has passed.", slot=1),
        m.Placed(worker="w1"),
        m.Player(channel="specific.abc!def", slot=2),
        m.Viewers(viewers=4),
        m.Presence(players=(m.SeatInfo(0, "Ada", "#dc2828"), m.SeatInfo(3, "Guest 4", "#dc32dc"))),
        m.Presence(
            players=(m.SeatInfo(0, "Ada", "#dc2828", "reconnecting"), m.SeatInfo(1, "B", "#fff"))
        ),
        m.Removed(slot=3, reason="spamming"),
    ],
    ids=lambda msg: msg.TYPE,
)
def test_every_group_message_reads_back_as_itself(message):
    body = msgpack.unpackb(msgpack.packb(message.to_message()))
    assert type(message).from_message(body) == message


def test_the_event_message_keeps_the_form_clients_were_built_for():
    assert m.Event(seq=3, status="applied", by="Ada", slot=1).to_message() == {
        "type": "session.event",
        "seq": 3,
        "status": "applied",
        "reason": None,
        "by": "Ada",
        "slot": 1,
        "suggest": [],
        "text": "",
    }


def test_garbage_fields_become_empty_values_the_worker_refuses():
    assert m.parse_inbox({"type": "session.input", "seq": "x", "keys": "wasd"}) == m.Input(
        session_id="", seq=0, keys=()
    )
    assert m.parse_inbox({"type": "session.input", "seq": 9, "keys": ["q", 5, None]}).keys == ("q",)
    assert m.parse_inbox({"type": "session.prompt", "seq": True, "text": None}) == m.Prompt(
        session_id="", seq=0, text=None
    )
    # An option that is not 0 or 1 (a dict, a bool, 2) is -1: no story accepts it.
    for option in ({}, True, 2, "1", None):
        body = {"type": "session.choose", "choice_id": [1], "option": option}
        assert m.parse_inbox(body) == m.Choose(session_id="", choice_id="", option=-1)
    attach = m.parse_inbox({"type": "session.attach", "restore": "yes", "character": "Bob"})
    assert (attach.restore, attach.character) == (False, None)
    assert m.Status.from_message({"state": "live", "fps": "fast"}).fps == 0.0
    assert m.Viewers.from_message({"viewers": -3}).viewers == 0
    # A slot outside the seats any session has is no seat (and a garbage presence is empty).
    assert m.parse_inbox({"type": "session.input", "slot": 10**9}).slot == 0
    assert m.parse_inbox({"type": "session.unseat", "slot": "x"}).slot == -1
    assert m.Presence.from_message({"players": "everyone"}).players == ()
    # a seat state nobody defined reads as connected, as a presence from before states did
    for state in ("gone", ["reconnecting"], None):
        body = {"players": [{"slot": 1, "name": "Ada", "state": state}]}
        assert m.Presence.from_message(body).players[0].state == "connected"
    assert m.Choices.from_message({"votes": [1], "closes_in": float("nan")}).closes_in is None
    # only a true `refused` is one, and a refused line carries no words
    say = m.parse_inbox({"type": "session.say", "text": "hi", "refused": "yes"})
    assert (say.text, say.refused) == ("hi", False)
    say = m.parse_inbox({"type": "session.say", "text": "the words", "refused": True})
    assert (say.text, say.refused) == (None, True)


@pytest.mark.parametrize("body", [{"type": "session.unknown"}, {"type": 5}, {}, [], "nonsense"])
def test_anything_else_is_an_unknown_message(body):
    with pytest.raises(m.UnknownMessage):
        m.parse_inbox(body)


def test_messages_are_immutable_values():
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.Input(session_id="s1", seq=1, keys=()).seq = 2  # type: ignore[misc]


def test_each_type_is_defined_once():
    kinds = [
        cls for cls in vars(m).values() if isinstance(cls, type) and issubclass(cls, m.Message)
    ]
    inbox = [cls.TYPE for cls in kinds if cls in m.InboxMessage.__args__]
    assert len(inbox) == len(set(inbox)) == 11
    # "session.say" is the one type in both directions: a player's line in, a spoken line out.
    group = [
        cls.TYPE for cls in kinds if cls is not m.Message and cls not in m.InboxMessage.__args__
    ]
    assert sorted(set(inbox) & set(group)) == ["session.say"]
    assert len(group) == len(set(group))


def test_the_sessions_readme_lists_every_message():
    readme = (Path(__file__).resolve().parents[3] / "sessions" / "README.md").read_text()
    kinds = [
        cls
        for cls in vars(m).values()
        if isinstance(cls, type) and issubclass(cls, m.Message) and cls is not m.Message
    ]
    missing = [
        cls.__name__ for cls in kinds if f'`{cls.__name__}` `{{"type": "{cls.TYPE}"' not in readme
    ]
    assert missing == []
