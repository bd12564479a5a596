"""The worker's narrative glue with the real language models (Gemma for options, SmolLM2 for the
character): what the session group hears, streamed replies included, and what screening keeps
back. test_worker_narrative.py covers the same glue with the grammar's deterministic text."""

import asyncio
import dataclasses
import time
import uuid

import pytest

from inference.narrative.backends import EmbeddedLM
from inference.narrative.character import CHAT_MAX_TURNS, WORLD_NOTE
from inference.narrative.narrator import GRAMMAR, Narrator
from inference.narrative.world_words import apply_to_description
from inference.world import spec
from tests.inference.narrative.lm_support import gemma, smollm2  # noqa: F401
from tests.inference.serving.test_worker_narrative import (
    character_attach,
    choose,
    kind_is,
    started,
    story_attach,
)
from tests.inference.serving.worker_support import (
    GroupListener,
    running_worker,
    send,
    without_clock,
)


@pytest.fixture
async def worker(layer, placement, engine, gemma, smollm2):  # noqa: F811
    async with running_worker(
        layer=layer, placement=placement, engine=engine, capacity=2,
        narrator=Narrator(gemma, smollm2),
    ) as worker:  # fmt: skip
        yield worker


async def test_a_starting_worker_loads_its_language_models_before_anyone_asks(
    layer,
    placement,
    engine,
    smollm2,  # noqa: F811 (the weights are there)
):
    lm = EmbeddedLM("smollm2")  # not loaded yet: a worker of its own starts it
    try:
        async with running_worker(
            layer=layer, placement=placement, engine=engine, narrator=Narrator(None, lm)
        ):
            deadline = time.monotonic() + 30
            while lm.decoder is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert lm.decoder is not None, "the chat model was not loaded at start"
            assert lm.decoder.generated == 0  # nobody asked it anything
    finally:
        if lm.decoder is not None:
            lm.decoder.close()


def narrator_status(message) -> bool:
    return message["type"] == "session.status" and bool(message.get("narrator"))


async def say(layer, worker, session_id, text):
    await send(layer, worker, {"type": "session.say", "session_id": session_id, "text": text})


async def test_a_story_is_offered_written_options_and_its_status_names_the_model(
    worker, layer, placement
):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, story_attach(session_id))
        choices = await listener.next(kind_is("session.choices"))
        status = await listener.next(narrator_status)
    assert choices["choice_id"] == "c1" and len(set(choices["options"])) == 2
    assert status["narrator"].startswith("embedded:gemma")
    assert worker.sessions[session_id].narrator == status["narrator"]


async def test_a_pick_changes_the_world_and_a_narrated_line_joins_the_story(
    worker, layer, placement, engine
):
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, story_attach(session_id))
        await listener.next(kind_is("session.choices"))
        session = worker.sessions[session_id]
        picked = session.narrative.options[0]
        before = engine.describe(session.world_id)
        await choose(layer, worker, session_id, "c1", 0)
        following = await listener.next(kind_is("session.choices"))
        after = engine.describe(session.world_id)
    # the clock runs on while frames are made: compare everything but the minute
    expected = apply_to_description(before, picked.event)
    assert without_clock(after) == without_clock(expected)
    assert following["choice_id"] == "c2" and len(following["story"]) == 2
    assert following["story"][1].endswith((".", "!", "?", "…"))
    assert picked.label in session.narrative.labels


LINES = ("what is it like out here at night?", "where does this channel lead?", "tell me a tale")


async def test_a_reply_streams_as_partial_lines_then_the_final_one(worker, layer, placement):
    session_id = str(uuid.uuid4())
    turns = []  # (echo, partials, final) per line
    async with GroupListener(layer, session_id) as listener:
        await started(worker, placement, layer, listener, character_attach(session_id))
        await listener.next(kind_is("session.say"))  # the greeting
        # A reply the model wrote streams; one it could not (the grammar's) comes whole: of a
        # few lines, at least one is the model's.
        for line in LINES:
            await say(layer, worker, session_id, line)
            echo = await listener.next(kind_is("session.say"))
            lines = [await listener.next(kind_is("session.say"))]
            while lines[-1].get("partial"):
                lines.append(await listener.next(kind_is("session.say")))
            turns.append((echo, lines[:-1], lines[-1]))
    assert [(echo["speaker"], echo["slot"], echo["text"]) for echo, _, _ in turns] == [
        ("Player 1", 0, t) for t in LINES
    ]
    assert any(partials for _, partials, _ in turns), "no reply was streamed"
    for _, partials, final in turns:
        assert all(p["speaker"] == "Old Tom" and p["partial"] is True for p in partials)
        assert final["speaker"] == "Old Tom" and not final.get("partial") and final["text"]
    assert worker.sessions[session_id].narrative.memory[-1] == ("Old Tom", turns[-1][2]["text"])


WREN = {
    "name": f"Pilot {uuid.uuid4().hex[:6]}",  # a card no sequence holds yet, in any test order
    "persona": "A sunburnt harbour pilot who counts every gull and trusts no tide table.",
    "greeting": "Keep your boots dry and your eyes on the buoys.",
}


def requests_from_now(decoder):
    """-> a function listing the decoder's requests finished since this call, oldest first."""
    earlier = {id(stats) for stats in decoder.finished}
    return lambda: [stats for stats in list(decoder.finished) if id(stats) not in earlier]


async def test_the_card_is_read_while_the_greeting_shows_so_the_first_reply_reads_the_line(
    worker,
    layer,
    placement,
    smollm2,  # noqa: F811
):
    since = requests_from_now(smollm2.load())
    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        attach = {**character_attach(session_id), "character": WREN}  # a card nobody read yet
        await started(worker, placement, layer, listener, attach)
        await listener.next(kind_is("session.say"))  # the greeting
        give_up = time.monotonic() + 30
        while not since():  # nobody has said anything yet: only the card is read
            assert time.monotonic() < give_up, "the character's card was not read ahead"
            await asyncio.sleep(0.05)
        (read,) = since()
        world = worker.engine.worlds[worker.sessions[session_id].world_id]
        world.weather = spec.WEATHERS.index("thunderstorm")  # the world changes meanwhile
        await say(layer, worker, session_id, "is the water deep here?")
        await listener.next(kind_is("session.say"))  # the echo
        reply = await listener.next(lambda m: m["type"] == "session.say" and not m.get("partial"))
    assert read.generated == 1 and read.prompt > 80 and read.evaluated > read.prompt - 16
    while len(since()) < 2:  # a reply's sequence is freed at the decoder's next step
        assert time.monotonic() < give_up + 30, "the reply's request never finished"
        await asyncio.sleep(0.05)
    first = since()[1]
    assert reply["speaker"] == WREN["name"] and reply["text"]
    # the card as read ahead, then the line with a note of the storm
    assert first.reused >= read.prompt - 4 and first.evaluated < 60, first
    assert worker.sessions[session_id].narrative.memory[0][0] == WORLD_NOTE


async def test_a_memory_that_folded_is_read_ahead_so_the_next_reply_reads_the_line(
    worker,
    layer,
    placement,
    smollm2,  # noqa: F811
):
    since = requests_from_now(smollm2.load())

    async def settled(count):  # a request's sequence is freed at the decoder's next step
        give_up = time.monotonic() + 30
        while len(since()) < count:
            assert time.monotonic() < give_up, f"{len(since())} of {count} requests finished"
            await asyncio.sleep(0.05)
        return since()[count - 1]

    session_id = str(uuid.uuid4())
    async with GroupListener(layer, session_id) as listener:
        card = {**WREN, "name": f"Pilot {uuid.uuid4().hex[:6]}"}
        await started(worker, placement, layer, listener, {**character_attach(session_id),
                                                          "character": card})  # fmt: skip
        await listener.next(kind_is("session.say"))  # the greeting
        await settled(1)  # the card, read ahead
        session = worker.sessions[session_id]
        full = [("you", f"how many gulls at buoy {i}?") if i % 2 == 0
                else (card["name"], f"Buoy {i - 1} had {i + 3} gulls on it.")
                for i in range(CHAT_MAX_TURNS)]  # fmt: skip
        session.narrative = dataclasses.replace(session.narrative, memory=tuple(full))
        for line in ("and the tide?", "is the water deep here?"):
            await say(layer, worker, session_id, line)
            await listener.next(kind_is("session.say"))  # the echo
            await listener.next(lambda m: m["type"] == "session.say" and not m.get("partial"))
            if line == "and the tide?":  # this exchange folded the memory
                assert session.narrative.summary and len(session.narrative.memory) == 4
    folding, ahead, after = [await settled(n) for n in (2, 3, 4)]
    assert ahead.generated == 1 and ahead.evaluated > 100  # the summary and the turns kept
    assert after.reused >= ahead.prompt - 4 and after.evaluated < 40, (folding, ahead, after)


async def test_a_generated_line_screening_refuses_is_never_sent(
    layer,
    placement,
    engine,
    smollm2,  # noqa: F811
):
    refused = []
    said = "who are you?"

    def screen(text):  # the player's line passes (the web side let it through); nothing generated
        if text == said:
            return True
        refused.append(text)
        return False

    async with running_worker(
        layer=layer, placement=placement, engine=engine, capacity=1,
        narrator=Narrator(None, smollm2), screen=screen,
    ) as worker:  # fmt: skip
        session_id = str(uuid.uuid4())
        async with GroupListener(layer, session_id) as listener:
            await started(worker, placement, layer, listener, character_attach(session_id))
            await listener.next(kind_is("session.say"))
            await say(layer, worker, session_id, said)
            await listener.next(kind_is("session.say"))  # the echo
            reply = await listener.next(kind_is("session.say"))
            status = await listener.next(narrator_status)
    assert refused, "nothing was screened"
    assert not reply.get("partial") and reply["text"] not in refused
    assert status["narrator"] == GRAMMAR
