"""Story picks and character dialogue on a running worker (real Redis layer and placement, the
real engine): what the session group hears, and what the world does. The grammar writes here
(deterministic text to assert on); test_worker_language_model.py runs the same glue with the
real language model."""

import asyncio
import uuid

import pytest

from inference.narrative.character_replies import HARMFUL_LINE, REFUSAL_OPENERS
from inference.narrative.narrator import Narrator
from inference.narrative.world_words import EVENTS, apply_to_description
from inference.serving.snapshot import unpack_snapshot
from tests.inference.serving.worker_support import (
    GroupListener,
    attach_message,
    running_worker,
    send,
    without_clock,
)


@pytest.fixture
async def worker(layer, placement, engine):
    async with running_worker(
        layer=layer,
        placement=placement,
        engine=engine,
        capacity=2,
        snapshot_every_s=0.5,
        narrator=Narrator.grammar(),
    ) as worker:
        yield worker


OPENING = "The lighthouse lamp went dark at midnight, and the boats are still out."
CARD = {
    "name": "Old Tom",
    "persona": "A gruff marsh ferryman, slow to trust, who knows every channel of the swamp.",
    "greeting": "Hmph. Another one lost in the reeds.",
}


def story_attach(session_id: str, **extra) -> dict:
    return {
        **attach_message(session_id, prompt="a rocky coast with a lighthouse", seed=11),
        "category": "stories",
        "story_opening": OPENING,
        **extra,
    }


def character_attach(session_id: str) -> dict:
    return {**attach_message(session_id), "category": "characters", "character": CARD}


def kind_is(kind: str):
    return lambda m: m["type"] == kind


async def started(worker, placement, layer, listener, attach: dict) -> str:
    assert placement.reserve_slot(attach["session_id"]) == worker.name
    await send(layer, worker, attach)
    await listener.status("live")
    return attach["session_id"]


async def choose(layer, worker, session_id, choice_id, option):
    message = {"type": "session.choose", "session_id": session_id, "choice_id": choice_id}
    await send(layer, worker, {**message, "option": option})


async def test_a_story_session_is_offered_two_choices_after_its_opening(worker, layer, placement):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, story_attach(session_id))
        choices = await listener.next(kind_is("session.choices"))
    assert choices["choice_id"] == "c1"
    assert choices["story"] == [OPENING]
    assert len(choices["options"]) == 2 and choices["options"][0] != choices["options"][1]


async def test_a_pick_changes_the_world_and_the_next_pair_follows(worker, layer, placement, engine):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, story_attach(session_id))
        await listener.next(kind_is("session.choices"))
        session = worker.sessions[session_id]
        # Pick the option with a visible world state change (weather or time).
        option = next(
            i for i, o in enumerate(session.narrative.options) if o.event[0] in ("weather", "time")
        )
        picked = session.narrative.options[option]
        before = engine.describe(session.world_id)
        await choose(layer, worker, session_id, "c1", option)
        following = await listener.next(kind_is("session.choices"))
        after = engine.describe(session.world_id)
        frames = await listener.frames(3)
    # the clock runs on while frames are made: compare everything but the minute
    expected = apply_to_description(before, picked.event)
    assert without_clock(after) == without_clock(expected) != without_clock(before)
    assert following["choice_id"] == "c2"
    assert following["story"] == [OPENING, picked.narration]
    assert len(frames) == 3


async def test_a_stale_or_unknown_choice_gets_an_error_and_the_world_plays_on(
    worker, layer, placement
):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, story_attach(session_id))
        await listener.next(kind_is("session.choices"))
        await choose(layer, worker, session_id, "c7", 0)
        unknown = await listener.next(kind_is("session.error"))
        await choose(layer, worker, session_id, "c1", 0)
        await choose(layer, worker, session_id, "c1", 1)  # a double click
        stale = await listener.next(kind_is("session.error"))
        following = await listener.next(kind_is("session.choices"))
        for junk in [
            {"type": "session.choose", "session_id": session_id},
            {"type": "session.choose", "session_id": session_id, "choice_id": [1], "option": {}},
            {"type": "session.say", "session_id": session_id, "text": "hi"},
        ]:
            await send(layer, worker, junk)
        errors = [await listener.next(kind_is("session.error")) for _ in range(3)]
        frames = await listener.frames(3)
    assert unknown["code"] == stale["code"] == "stale_choice"
    assert following["choice_id"] == "c2" and len(following["story"]) == 2
    assert [e["code"] for e in errors] == ["stale_choice", "stale_choice", "unsupported"]
    assert len(frames) == 3 and session_id in worker.sessions


async def test_the_story_survives_a_snapshot_and_a_restore_re_offers_the_pair(
    worker, layer, placement
):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, story_attach(session_id))
        await listener.next(kind_is("session.choices"))
        await choose(layer, worker, session_id, "c1", 1)
        offered = await listener.next(kind_is("session.choices"))
        snapshot = placement.load_snapshot(session_id)
        await send(layer, worker, {"type": "session.end", "session_id": session_id, "reason": "t"})
        await listener.status("ended")
    meta, _ = unpack_snapshot(snapshot)
    assert meta["narrative"]["index"] == 2 and len(meta["narrative"]["lines"]) == 2
    placement.save_snapshot(session_id, snapshot)
    placement.reserve_slot(session_id)
    async with GroupListener(layer, session_id) as listener:
        restore = {"type": "session.attach", "session_id": session_id, "restore": True}
        await send(layer, worker, restore)
        again = await listener.next(kind_is("session.choices"))
        await choose(layer, worker, session_id, "c2", 0)
        third = await listener.next(kind_is("session.choices"))
    assert again == offered
    assert third["choice_id"] == "c3" and third["story"][:2] == offered["story"]


async def test_a_reconnecting_player_is_sent_the_pair_on_offer(worker, layer, placement):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, story_attach(session_id))
        first = await listener.next(kind_is("session.choices"))
        await send(layer, worker, {"type": "session.detach", "session_id": session_id})
        await send(layer, worker, story_attach(session_id))
        again = await listener.next(kind_is("session.choices"))
    assert again == first


async def test_a_character_greets_then_answers_in_character(worker, layer, placement):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, character_attach(session_id))
        greeting = await listener.next(kind_is("session.say"))
        await send(
            layer, worker, {"type": "session.say", "session_id": session_id, "text": "who are you?"}
        )
        echo = await listener.next(kind_is("session.say"))
        reply = await listener.next(kind_is("session.say"))
    assert (greeting["speaker"], greeting["text"]) == (CARD["name"], CARD["greeting"])
    assert (echo["speaker"], echo["slot"], echo["text"]) == ("Player 1", 0, "who are you?")
    assert reply["speaker"] == "Old Tom" and "ferryman" in reply["text"]
    assert worker.sessions[session_id].narrative.turn == 1


async def test_a_line_screening_held_back_gets_a_refusal_in_character_and_no_echo(
    worker, layer, placement
):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, character_attach(session_id))
        await listener.next(kind_is("session.say"))  # the greeting
        # a forged text beside `refused` is dropped on reading: the words never reach the worker
        line = {"type": "session.say", "session_id": session_id, "text": "secret", "refused": True}
        await send(layer, worker, line)
        reply = await listener.next(kind_is("session.say"))
    assert (reply["speaker"], reply["text"]) == ("Old Tom", REFUSAL_OPENERS["gruff"])
    memory = worker.sessions[session_id].narrative.memory
    assert memory[-2:] == (("you", HARMFUL_LINE), ("Old Tom", REFUSAL_OPENERS["gruff"]))


async def test_a_player_who_comes_back_to_a_character_is_sent_the_talk_so_far(
    worker, layer, placement
):
    # a reload (or a newcomer) found an empty chat: the greeting went out once, to nobody now
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, character_attach(session_id))
        await listener.next(kind_is("session.say"))
        line = {"type": "session.say", "session_id": session_id, "text": "who are you?"}
        await send(layer, worker, line)
        await listener.next(kind_is("session.say"))  # the echo
        reply = await listener.next(kind_is("session.say"))
        await send(layer, worker, {"type": "session.detach", "session_id": session_id})
        await send(layer, worker, character_attach(session_id))
        replay = [await listener.next(lambda m: m["type"] == "session.say") for _ in range(3)]
    said = [(m["speaker"], m["text"], m["history"], m["only_slot"]) for m in replay]
    assert said == [
        (CARD["name"], CARD["greeting"], 0, 0),
        ("Player 1", "who are you?", 1, 0),  # alone in the world: their own line, by name
        (CARD["name"], reply["text"], 2, 0),
    ]
    assert replay[1]["slot"] == 0


async def test_a_spectator_is_sent_the_talk_so_far_on_their_channel_alone(worker, layer, placement):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, character_attach(session_id))
        await listener.next(kind_is("session.say"))
        line = {"type": "session.say", "session_id": session_id, "text": "who are you?"}
        await send(layer, worker, line)
        await listener.next(kind_is("session.say"))  # the echo
        reply = await listener.next(kind_is("session.say"))
        spectator = await layer.new_channel()
        watch = {"type": "session.watch", "session_id": session_id, "channel": spectator}
        await send(layer, worker, watch)
        replay = [await asyncio.wait_for(layer.receive(spectator), 10) for _ in range(3)]
        # Nothing of it went to the group: the players' chats are not replayed to them.
        with pytest.raises(TimeoutError):
            await listener.next(kind_is("session.say"), timeout=0.5)
    said = [(m["speaker"], m["text"], m["history"], m["only_slot"]) for m in replay]
    assert said == [
        (CARD["name"], CARD["greeting"], 0, -1),
        ("Player 1", "who are you?", 1, -1),  # the one player's line, by their name
        (CARD["name"], reply["text"], 2, -1),
    ]


async def test_a_character_asked_for_rain_makes_it_rain(worker, layer, placement, engine):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, character_attach(session_id))
        await listener.next(kind_is("session.say"))
        world_id = worker.sessions[session_id].world_id
        engine.worlds[world_id].weather = 0  # clear, so the rain is news
        line = {"type": "session.say", "session_id": session_id, "text": "can you make it rain?"}
        await send(layer, worker, line)
        await listener.next(lambda m: m["type"] == "session.say" and m["slot"] == 0)
        reply = await listener.next(kind_is("session.say"))
        weather = engine.describe(world_id)["weather"]
        await send(layer, worker, {**line, "text": 12})
        error = await listener.next(kind_is("session.error"))
    assert weather == "rain"
    assert EVENTS[("weather", "rain")] in reply["text"]
    assert error["code"] == "bad_text"


async def test_audience_votes_go_out_as_one_tally_not_one_broadcast_each(worker, layer, placement):
    # each vote, even the same one again, re-sent the pair to every socket of the session
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, story_attach(session_id))
        offered = await listener.next(kind_is("session.choices"))
        vote = {"type": "session.vote", "session_id": session_id, "choice_id": "c1"}
        for i in range(30):
            await send(layer, worker, {**vote, "voter": "anon:a", "option": 1})
            await send(layer, worker, {**vote, "voter": f"anon:{i % 3}", "option": 0})
        tally = await listener.next(kind_is("session.choices"))
        while tally["audience"] != [3, 1]:  # option 0: anon:0, 1 and 2; option 1: anon:a
            tally = await listener.next(kind_is("session.choices"))
        await listener.frames(24)  # a second of play: no further tally comes
    tallies = [m for m in listener.seen if m["type"] == "session.choices"][1:]
    assert offered["audience"] == [0, 0]
    # 60 votes in well under a second: a tally each half second at most (it was 60)
    assert tallies[-1] is tally and len(tallies) <= 4
