"""Story picks and character dialogue (inference.narrative.engine) on the shipped world model."""

import pytest

from inference.narrative import engine as narrative
from inference.world import spec as ws

OPENING = "The lighthouse lamp went dark at midnight, and the boats are still out."
COAST = {"biome": "coast", "weather": "fog", "time": "dusk", "creatures": []}
TOM = {
    "name": "Old Tom",
    "persona": "A gruff marsh ferryman, slow to trust, who knows every channel of the swamp.",
    "greeting": "Hmph. Another one lost in the reeds.",
}


@pytest.fixture
def world_of(engine):
    """A world in a known state: clear, day, no creatures, one player."""
    made = []

    def make(weather="clear", time="day"):
        wid = engine.create_world(prompt="a quiet meadow", seed=5)
        world = engine.worlds[wid]
        world.weather, world.time = ws.WEATHERS.index(weather), ws.TIMES.index(time)
        world.creatures = []
        engine.add_player(wid)
        made.append(wid)
        return wid

    yield make
    for wid in made:
        engine.drop_world(wid)


@pytest.mark.parametrize("event", list(narrative.EVENTS), ids=lambda e: f"{e[0]}-{e[1]}")
def test_every_event_text_changes_the_world_as_intended(engine, world_of, event):
    kind, value = event
    wid = world_of(
        weather="snow" if value == "clear" else "clear",
        time="dusk" if value == "night" else "night",
    )
    before = engine.describe(wid)
    tokens_before = {k: v.copy() for k, v in engine.worlds[wid].chunks.items()}
    engine.apply_event(wid, narrative.EVENTS[event])
    after = engine.describe(wid)
    if kind == "feature":
        world = engine.worlds[wid]
        cx, cy = ws.feature_center(world.players[0].x, world.players[0].y)
        kind_at = world.token_at(cx, cy) % len(ws.TILE_KINDS)
        assert kind_at == ws.FEATURE_KIND[value]
        assert any((world.chunks[k] != v).any() for k, v in tokens_before.items())
        assert after == before  # and nothing else changed
    else:
        assert after == narrative.apply_to_description(before, event)
        assert after != before


def test_a_story_offers_two_distinct_options_with_its_opening():
    story = narrative.story_offer(narrative.story_start(OPENING, COAST), COAST, seed=11)
    message = narrative.choices_message(story)
    first, second = story.options
    assert message["choice_id"] == "c1"
    assert message["story"] == [OPENING]
    assert len(message["options"]) == 2 and first.label != second.label
    # Diverse: the two picks steer the world in different ways.
    assert first.event[0] != second.event[0]
    assert all(option.event in narrative.EVENTS for option in story.options)


def test_options_are_deterministic_for_seed_index_and_story():
    start = narrative.story_start(OPENING, COAST)
    again = narrative.story_offer(start, COAST, seed=11)
    assert narrative.story_offer(start, COAST, seed=11).options == again.options


def test_options_depend_on_the_story_so_far():
    caravan = "You wake beside a cold campfire; the caravan's tracks lead east across the grass."
    offers = {
        opening: narrative.story_offer(narrative.story_start(opening, COAST), COAST, seed=11)
        for opening in (OPENING, caravan)
    }
    labels = {k: [o.label for o in v.options] for k, v in offers.items()}
    assert labels[OPENING] != labels[caravan]
    # The opening's own things turn up in the options and their narration.
    assert any("boat" in o.label + o.narration for o in offers[OPENING].options)


def test_options_never_offer_what_the_world_already_is():
    for weather in ws.WEATHERS:
        for time in ws.TIMES:
            world = {**COAST, "weather": weather, "time": time}
            story = narrative.story_offer(narrative.story_start("", world), world, seed=3)
            for option in story.options:
                kind, value = option.event
                assert kind not in ("weather", "time") or world[kind] != value


def test_a_pick_appends_its_narration_and_a_stale_pick_is_refused():
    story = narrative.story_offer(narrative.story_start(OPENING, COAST), COAST, seed=11)
    picked_story, picked = narrative.story_pick(story, "c1", 1)
    assert picked == story.options[1]
    assert picked_story.lines == (OPENING, picked.narration)
    assert picked_story.options == () and picked_story.choice_id == ""
    with pytest.raises(narrative.ChoiceError):
        narrative.story_pick(picked_story, "c1", 0)  # already picked
    with pytest.raises(narrative.ChoiceError):
        narrative.story_pick(story, "c0", 0)
    world = narrative.apply_to_description(COAST, picked.event)
    following = narrative.story_offer(picked_story, world, seed=11)
    assert following.choice_id == "c2"
    assert narrative.choices_message(following)["story"][-1] == picked.narration


def test_a_story_survives_its_snapshot_meta():
    story = narrative.story_offer(narrative.story_start(OPENING, COAST), COAST, seed=11)
    assert narrative.from_meta(story.to_meta()) == story
    assert narrative.from_meta({"kind": "story", "lines": 5}) is None
    assert narrative.from_meta("garbage") is None


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
    assert narrative.classify(line)[0] == intent


def test_the_character_greets_with_its_card_and_answers_in_character():
    tom = narrative.character_start(TOM)
    tom, greeting = narrative.character_greet(tom)
    assert greeting == TOM["greeting"] and tom.greeted
    tom, who = narrative.character_reply(tom, COAST, "who are you?", seed=5)
    assert "Old Tom" in who.text and "ferryman" in who.text
    assert who.event is None and tom.turn == 1
    _, weather = narrative.character_reply(tom, COAST, "what's the weather like?", seed=5)
    assert "fog" in weather.text.lower()  # the live world, not a canned line
    assert len(weather.text) <= narrative.MAX_REPLY_CHARS


def test_the_character_grants_a_world_change_it_can_make():
    tom = narrative.character_start(TOM)
    _, reply = narrative.character_reply(tom, COAST, "can you make it rain?", seed=5)
    assert reply.event == ("weather", "rain")
    assert reply.event_text == narrative.EVENTS[("weather", "rain")]
    assert reply.event_text in reply.text
    # Already foggy, already dusk: nothing to change, and the character says so.
    _, moot = narrative.character_reply(tom, COAST, "please make it foggy", seed=5)
    assert moot.event is None and "fog" in moot.text
    _, dusk = narrative.character_reply(tom, COAST, "can you make it evening?", seed=5)
    assert dusk.event is None and "dusk" in dusk.text


def test_replies_are_deterministic_per_seed_and_turn():
    tom = narrative.character_start(TOM)
    answers = {narrative.character_reply(tom, COAST, "hello", seed=s)[1].text for s in range(6)}
    again = narrative.character_reply(tom, COAST, "hello", seed=2)[1].text
    assert again == narrative.character_reply(tom, COAST, "hello", seed=2)[1].text
    assert len(answers) > 1  # and not one canned line


def test_a_character_survives_its_snapshot_meta():
    tom, _ = narrative.character_reply(narrative.character_start(TOM), COAST, "hi", seed=1)
    assert narrative.from_meta(tom.to_meta()) == tom


def test_garbage_cards_and_lines_still_get_an_answer():
    nobody = narrative.character_start({"name": None, "persona": 5})
    _, reply = narrative.character_reply(nobody, COAST, "\x00\x00 ???", seed=1)
    assert nobody.name and reply.text
    assert narrative.begin("games", COAST) is None
    assert isinstance(narrative.begin("characters", COAST, character="junk"), narrative.Character)


@pytest.mark.parametrize(
    ("line", "event"),
    [
        ("can you make it evening?", ("time", "dusk")),
        ("bring me a deer", ("creature", "deer")),
        ("please make it foggy", ("weather", "fog")),
        ("make a pond", ("feature", "pond")),
        ("is it raining?", None),  # asks about the world, asks nothing of it
        ("can you turn this into a desert?", None),  # beyond what the engine knows
    ],
)
def test_a_request_is_granted_only_when_the_engine_knows_the_change(line, event):
    clear_day = {**COAST, "weather": "clear", "time": "day"}
    _, reply = narrative.character_reply(narrative.character_start(TOM), clear_day, line, seed=2)
    assert reply.event == event
