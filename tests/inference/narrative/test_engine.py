"""Story picks and character dialogue (the story, character and grammar modules of
inference.narrative) on the shipped world model."""

import numpy as np
import pytest

from inference.narrative.character import (
    MAX_REPLY_CHARS,
    Character,
    character_greet,
    character_start,
)
from inference.narrative.grammar import (
    BEATS,
    REPLIES,
    REQUESTS,
    TIME_SENTENCES,
    WEATHER_PHRASES,
    WEATHER_SENTENCES,
    _candidates,
    _reply_slots,
    character_reply,
    classify,
    story_offer,
    tone,
)
from inference.narrative.state import begin, from_meta
from inference.narrative.story import (
    STORY_LINES_SHOWN,
    ChoiceError,
    choices_message,
    story_narrated,
    story_pick,
    story_start,
)
from inference.narrative.world_words import (
    EVENTS,
    LANDMARKS,
    PLACES,
    THING_WORDS,
    TIME_PHRASES,
    TIME_WORDS,
    TOLD,
    WEATHER_WORDS,
    apply_to_description,
    changes_nothing,
    in_place,
    time_of,
)
from inference.world import spec

OPENING = "The lighthouse lamp went dark at midnight, and the boats are still out."
BEACH = {"biome": "beach", "weather": "fog", "time": "dusk", "creatures": []}
TOM = {
    "name": "Old Tom",
    "persona": "A gruff marsh ferryman, slow to trust, who knows every channel of the swamp.",
    "greeting": "Hmph. Another one lost in the reeds.",
}


@pytest.fixture
def world_of(engine):
    """A world in a known state: one player, no creatures, the given atmosphere and time."""
    made = []

    def make(weather="clear", time="day"):
        wid = engine.create_world(prompt="a quiet meadow", seed=5)
        world = engine.worlds[wid]
        world.weather = spec.WEATHERS.index(weather)
        world.minute = spec.TIME_MINUTES[spec.TIMES.index(time)]
        world.creatures = []
        engine.add_player(wid)
        made.append(wid)
        return wid

    yield make
    for wid in made:
        engine.drop_world(wid)


# Needs the v2 world model weights (inference/weights/world_model.safetensors trained on spec v2).
@pytest.mark.parametrize("event", list(EVENTS), ids=lambda e: f"{e[0]}-{e[1]}")
def test_every_event_text_changes_the_world_as_intended(engine, world_of, event):
    kind, value = event
    wid = world_of(
        weather="snow" if value == "clear" else "clear",
        time="dusk" if value == "night" else "night",
    )
    before = engine.describe(wid)
    engine.apply_event(wid, EVENTS[event])
    after = engine.describe(wid)
    assert after == apply_to_description(before, event) != before
    if kind == "thing":  # placed beside the player, as tokens of its own
        world = engine.worlds[wid]
        player = world.players[0]
        cells = spec.place_cells(spec.THINGS.index(value), player.x, player.y)
        assert all(world.token_at(x, y) == token for x, y, token in cells)


def test_events_are_the_canonical_phrases_of_every_v2_event():
    assert EVENTS == {
        (kind, value): text
        for kind, phrases in spec.EVENT_PHRASES.items()
        for value, text in phrases.items()
        if kind != "process"  # a fire spreads over tiles: no description tells it
    }
    kinds = {kind for kind, _ in EVENTS}
    assert kinds == {"weather", "time", "creature", "thing"}
    assert {v for k, v in EVENTS if k == "thing"} == set(spec.THINGS)
    assert {v for k, v in EVENTS if k == "weather"} == set(spec.WEATHERS)
    assert {v for k, v in EVENTS if k == "time"} == set(spec.TIMES)


def test_every_table_covers_every_v2_name():
    for table in (PLACES, LANDMARKS):
        assert set(table) == set(spec.BIOMES)
    for table in (
        WEATHER_WORDS,
        WEATHER_PHRASES,
        WEATHER_SENTENCES,
    ):
        assert set(table) == set(spec.WEATHERS)
    for table in (TIME_WORDS, TIME_PHRASES, TIME_SENTENCES):
        assert set(table) == set(spec.TIMES)
    assert set(THING_WORDS) == set(spec.THINGS)
    assert set(REQUESTS) == set(EVENTS)  # every event can be asked for
    assert set(TOLD) <= set(EVENTS)


def test_every_event_but_a_creature_has_a_beat_of_its_own():
    beaten = {b.event for b in BEATS}
    assert {e for e in EVENTS if e[0] != "creature"} <= beaten
    assert ("creature", "*") in beaten
    assert all(b.event in EVENTS or b.event[1] == "*" for b in BEATS)


def test_every_biome_atmosphere_and_time_gets_an_opening_options_and_replies():
    """No table lookup fails (a KeyError on a v2 name was the bug) and no slot is left unfilled."""
    tom = character_start(TOM)
    rng = np.random.default_rng(0)
    for biome in spec.BIOMES:
        for weather in spec.WEATHERS:
            for time in spec.TIMES:
                world = {"biome": biome, "weather": weather, "time": time, "creatures": []}
                story = story_start("", world)
                assert PLACES[biome] in story.lines[0]
                options = _candidates(story, world, rng)
                assert options and all(o.event in EVENTS for o in options)
                for event in (None, ("weather", "rain"), ("time", "night"), ("thing", "well")):
                    slots = _reply_slots(tom, world, event, rng)
                    for templates in REPLIES.values():
                        for template in templates:
                            text = template.format(**slots)
                            assert "{" not in text and "_" not in text, text


def test_a_full_v2_description_and_one_with_only_a_clock_both_work():
    full = {
        "biome": "volcanic",
        "biomes": ["volcanic", "cave"],
        "weather": "ash",
        "time": "night",
        "clock": "23:10",
        "creatures": ["ghost"],
        "things": ["campfire", "lava_pool"],
    }
    assert in_place(full) == "on the lava fields"
    clock_only = {"biome": "ice_cave", "weather": "fireflies", "clock": "06:30"}
    assert time_of(clock_only) == "dawn"
    assert changes_nothing(("time", "dawn"), clock_only)
    assert story_start("", clock_only).lines == ("You arrive in the ice cavern at dawn.",)
    for world in (full, clock_only, {}):
        _, reply = character_reply(character_start(TOM), world, "what time is it?", seed=3)
        assert reply.text
    after = apply_to_description(full, ("time", "dawn"))
    assert after["time"] == "dawn" and after["clock"] == "06:30"
    assert apply_to_description(full, ("thing", "well"))["things"][-1] == "well"
    assert "things" not in apply_to_description(clock_only, ("weather", "rain"))


def test_weather_or_time_as_it_is_changes_nothing_and_a_thing_always_changes_something():
    world = {"biome": "city", "weather": "petals", "time": "dusk", "things": ["well"]}
    assert changes_nothing(("weather", "petals"), world)
    assert changes_nothing(("time", "dusk"), world)
    assert not changes_nothing(("weather", "rain"), world)
    assert not changes_nothing(("thing", "well"), world)  # a second well
    assert not changes_nothing(("creature", "cat"), world)


def test_a_v1_snapshot_option_is_read_as_a_thing():
    story = story_offer(story_start(OPENING, BEACH), BEACH, seed=11)
    meta = story.to_meta()
    meta["options"] = [["spring", "Dig", "You dig.", "feature", "pond"], *meta["options"][1:]]
    assert from_meta(meta).options[0].event == ("thing", "pond")


def test_a_story_offers_two_distinct_options_with_its_opening():
    story = story_offer(story_start(OPENING, BEACH), BEACH, seed=11)
    message = choices_message(story)
    first, second = story.options
    assert message["choice_id"] == "c1"
    assert message["story"] == [OPENING]
    assert len(message["options"]) == 2 and first.label != second.label
    # Diverse: the two picks steer the world in different ways.
    assert first.event[0] != second.event[0]
    assert all(option.event in EVENTS for option in story.options)


def test_options_are_deterministic_for_seed_index_and_story():
    start = story_start(OPENING, BEACH)
    again = story_offer(start, BEACH, seed=11)
    assert story_offer(start, BEACH, seed=11).options == again.options


def test_options_depend_on_the_story_so_far():
    caravan = "You wake beside a cold campfire; the caravan's tracks lead east across the grass."
    offers = {
        opening: story_offer(story_start(opening, BEACH), BEACH, seed=11)
        for opening in (OPENING, caravan)
    }
    labels = {k: [o.label for o in v.options] for k, v in offers.items()}
    assert labels[OPENING] != labels[caravan]
    # The opening's own things turn up in the options and their narration.
    assert any(
        thing in o.label + o.narration
        for o in offers[OPENING].options
        for thing in ("boat", "lighthouse")
    )


def test_options_never_offer_what_the_world_already_is():
    for weather in spec.WEATHERS:
        for time in spec.TIMES:
            world = {**BEACH, "weather": weather, "time": time}
            story = story_offer(story_start("", world), world, seed=3)
            for option in story.options:
                kind, value = option.event
                assert kind not in ("weather", "time") or world[kind] != value


def test_a_pick_appends_its_narration_and_a_stale_pick_is_refused():
    story = story_offer(story_start(OPENING, BEACH), BEACH, seed=11)
    picked_story, picked = story_pick(story, "c1", 1)
    assert picked == story.options[1]
    assert picked_story.lines == (OPENING, picked.narration)
    assert picked_story.options == () and picked_story.choice_id == ""
    with pytest.raises(ChoiceError):
        story_pick(picked_story, "c1", 0)  # already picked
    with pytest.raises(ChoiceError):
        story_pick(story, "c0", 0)
    world = apply_to_description(BEACH, picked.event)
    following = story_offer(picked_story, world, seed=11)
    assert following.choice_id == "c2"
    assert choices_message(following)["story"][-1] == picked.narration


def test_each_line_of_the_story_keeps_the_option_picked_before_it():
    story = story_offer(story_start(OPENING, BEACH), BEACH, seed=11)
    story, first = story_pick(story, "c1", 0)
    story = story_narrated(story, "The gulls scatter as you row out.", "Row out")
    message = choices_message(story)
    assert message["story"] == [OPENING, first.narration, "The gulls scatter as you row out."]
    assert message["chosen"] == ["", first.label, "Row out"]
    assert from_meta(story.to_meta()) == story
    # A snapshot from before the picks were kept: its lines come back with no pick named.
    old = {k: v for k, v in story.to_meta().items() if k != "chosen"}
    assert choices_message(from_meta(old))["chosen"] == ["", "", ""]
    # Only the last lines are sent, each still beside its own pick.
    for n in range(STORY_LINES_SHOWN):
        story = story_narrated(story, f"Line {n}.", f"Pick {n}")
    message = choices_message(story)
    assert len(message["story"]) == len(message["chosen"]) == STORY_LINES_SHOWN
    assert (message["story"][-1], message["chosen"][-1]) == (f"Line {n}.", f"Pick {n}")


def test_a_story_survives_its_snapshot_meta():
    story = story_offer(story_start(OPENING, BEACH), BEACH, seed=11)
    assert from_meta(story.to_meta()) == story
    assert from_meta({"kind": "story", "lines": 5}) is None
    assert from_meta("garbage") is None


@pytest.mark.parametrize(
    ("line", "intent"),
    [
        ("hello!", "greeting"),
        ("who are you?", "identity"),
        ("where are we?", "place"),
        ("is it raining?", "weather"),
        ("what time is it", "time"),
        ("any animals around?", "creatures"),
        ("how are you", "wellbeing"),
        ("bye!", "farewell"),
        ("can you make it rain?", "change"),
        ("I like turtles", "unknown"),
    ],
)
def test_a_players_line_is_sorted_into_its_intent(line, intent):
    assert classify(line)[0] == intent


def test_the_character_greets_with_its_card_and_answers_in_character():
    tom = character_start(TOM)
    tom, greeting = character_greet(tom)
    assert greeting == TOM["greeting"] and tom.greeted
    tom, who = character_reply(tom, BEACH, "who are you?", seed=5)
    assert "Old Tom" in who.text and "ferryman" in who.text
    assert who.event is None and tom.turn == 1
    # Whichever way it answers, the card is never its own sentence (a recital, not a reply).
    for seed in range(12):
        _, again = character_reply(tom, BEACH, "who are you?", seed=seed)
        assert TOM["persona"] not in again.text
    _, weather = character_reply(tom, BEACH, "what's the weather like?", seed=5)
    assert "fog" in weather.text.lower()  # the live world, not a canned line
    assert len(weather.text) <= MAX_REPLY_CHARS


def test_the_character_grants_a_world_change_it_can_make():
    tom = character_start(TOM)
    _, reply = character_reply(tom, BEACH, "can you make it rain?", seed=5)
    assert reply.event == ("weather", "rain")
    assert reply.event_text == EVENTS[("weather", "rain")]
    assert reply.event_text in reply.text
    # Already foggy, already dusk: nothing to change, and the character says so.
    _, moot = character_reply(tom, BEACH, "please make it foggy", seed=5)
    assert moot.event is None and "fog" in moot.text
    _, dusk = character_reply(tom, BEACH, "can you make it evening?", seed=5)
    assert dusk.event is None and "dusk" in dusk.text


def test_replies_are_deterministic_per_seed_and_turn():
    tom = character_start(TOM)
    answers = {character_reply(tom, BEACH, "hello", seed=s)[1].text for s in range(6)}
    again = character_reply(tom, BEACH, "hello", seed=2)[1].text
    assert again == character_reply(tom, BEACH, "hello", seed=2)[1].text
    assert len(answers) > 1  # and not one canned line


def test_a_character_survives_its_snapshot_meta():
    tom, _ = character_reply(character_start(TOM), BEACH, "hi", seed=1)
    assert from_meta(tom.to_meta()) == tom


def test_garbage_cards_and_lines_still_get_an_answer():
    nobody = character_start({"name": None, "persona": 5})
    _, reply = character_reply(nobody, BEACH, "\x00\x00 ???", seed=1)
    assert nobody.name and reply.text
    assert begin("games", BEACH) is None
    assert isinstance(begin("characters", BEACH, character="junk"), Character)


@pytest.mark.parametrize(
    ("line", "event"),
    [
        ("can you make it evening?", ("time", "dusk")),
        ("bring me a deer", ("creature", "deer")),
        ("please make it foggy", ("weather", "fog")),
        ("make a pond", ("thing", "pond")),
        ("could you light a campfire?", ("thing", "campfire")),
        ("please make a thunderstorm", ("weather", "thunderstorm")),
        ("can you make it dawn?", ("time", "dawn")),
        ("summon a ghost", ("creature", "ghost")),
        ("is it raining?", None),  # asks about the world, asks nothing of it
        ("can you turn this into a desert?", None),  # beyond what the engine knows
    ],
)
def test_a_request_is_granted_only_when_the_engine_knows_the_change(line, event):
    clear_day = {**BEACH, "weather": "clear", "time": "day"}
    _, reply = character_reply(character_start(TOM), clear_day, line, seed=2)
    assert reply.event == event


@pytest.mark.parametrize(
    ("persona", "expected"),
    [
        ("A gruff marsh ferryman, slow to trust.", "gruff"),
        (
            "The stern keeper of a mountain library, precise, strict about silence and proud "
            "of her ancient books.",
            "gruff",
        ),  # was warm: "I'm Sister Ysolde, friend."
        ("A cheerful baker who loves gossip and honey cakes.", "warm"),
        ("A mischievous young fox spirit who loves pranks and riddles.", "sly"),
    ],
)
def test_a_persona_speaks_in_the_tone_its_card_describes(persona, expected):
    assert tone(persona) == expected
