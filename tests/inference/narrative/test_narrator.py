"""Stories and characters from the real small models (Gemma writes options, SmolLM2 talks), the
openai backend against a real llama_cpp.server, and the grammar whenever a model cannot answer."""

import re
import threading
import time
import uuid
from dataclasses import replace

import pytest

from inference.narrative import (
    character_replies,
    grammar,
    grounding,
    story_writing,
    wording,
    world_words,
)
from inference.narrative.backends import LMError
from inference.narrative.character import (
    CHAT_MAX_TURNS,
    CHAT_MEMORY_CHARS,
    CHAT_RECENT_TURNS,
    WORLD_NOTE,
    character_greet,
    character_remember,
    character_start,
)
from inference.narrative.grammar import BEAT_BY_NAME, REQUESTS, TONES, world_lines
from inference.narrative.narrator import GRAMMAR, Narrator
from inference.narrative.state import from_meta
from inference.narrative.story import Option, story_narrated, story_pick, story_start
from inference.narrative.world_words import EVENTS, apply_to_description
from worlds.moderation.screening import allows_live

OPENING = "The lighthouse lamp went dark at midnight, and the boats are still out."
BEACH = {"biome": "beach", "weather": "fog", "time": "dusk", "creatures": []}
TOM = {
    "name": "Old Tom",
    "persona": "A gruff marsh ferryman, slow to trust, who knows every channel of the swamp.",
    "greeting": "Hmph. Another one lost in the reeds.",
    "examples": ["Mind the eels. They bite.", "Two coins for the crossing, no haggling."],
}


def soon(seconds: float = 30.0) -> float:
    return time.monotonic() + seconds


@pytest.fixture(scope="module")
def narrator(gemma, smollm2):
    return Narrator(gemma, smollm2)


@pytest.fixture(scope="module")
def screened(gemma, smollm2):
    """The narrator as the worker has it: moderation's screening passed in by the web side."""
    return Narrator(gemma, smollm2, screen=allows_live)


class BrokenLM:
    name = "embedded:broken"

    def complete(self, prompt, sampling):
        raise LMError("no model here")

    def chat(self, messages, sampling, prefill=""):
        raise LMError("no model here")


class SilentLM:
    """A model that answers with nothing usable: the grammar completes every pair."""

    name = "embedded:silent"

    def complete(self, prompt, sampling):
        yield ""

    def chat(self, messages, sampling, prefill=""):
        yield ""


# --- stories ---------------------------------------------------------------------------------


def test_the_model_offers_two_distinct_short_options_each_grounded_to_a_change(narrator):
    story = story_start(OPENING, BEACH)
    answer = narrator.offer(story, BEACH, 11, soon())
    options = answer.state.options
    assert answer.backend.startswith("embedded:gemma")
    assert answer.state.choice_id == "c1" and len(options) == 2
    assert options[0].label != options[1].label
    for option in options:
        assert 2 <= len(option.label.split()) <= story_writing.MAX_OPTION_WORDS
        assert option.event in EVENTS
        assert not grounding.changes_nothing(option.event, BEACH)


def test_picks_are_narrated_and_later_options_do_not_repeat_them(narrator):
    story, world = story_start(OPENING, BEACH), dict(BEACH)
    picked_labels, last_event = [], None
    for i in range(5):
        story = narrator.offer(story, world, 5, soon()).state
        labels = [o.label.lower() for o in story.options]
        assert not set(labels) & set(picked_labels)
        # Two ways to change the world, neither the change the last pick just made.
        events = [o.event for o in story.options]
        assert len(set(events)) == 2 and last_event not in events, events
        story, picked = story_pick(story, story.choice_id, i % 2)
        picked_labels.append(picked.label.lower())
        last_event = picked.event
        before = len(story.lines)
        world = apply_to_description(world, picked.event)  # as the worker: applied first
        story = narrator.narrate(story, picked, world, soon()).state
        assert len(story.lines) == before + (0 if picked.narration else 1)
        line = story.lines[-1]
        assert line.endswith((".", "!", "?", "…"))
        assert story.chosen[-1] == picked.label
        # The line tells what the world now shows: the model's line is about the pick's event,
        # and where it was not, the grammar's says so outright.
        assert (
            grounding.ground(line, None) == picked.event or world_words.told(picked.event) in line
        )
    assert [label.lower() for label in story.labels] == picked_labels


class ScriptedLM:
    """Answers every completion with the next of its lines, to try what the narrator keeps."""

    name = "embedded:scripted"

    def __init__(self, *lines):
        self.lines = list(lines)

    def complete(self, prompt, sampling):
        self.avoided = sampling.avoid
        yield self.lines.pop(0) if self.lines else ""

    def chat(self, messages, sampling, prefill=""):
        yield ""


def test_a_picks_line_is_written_beside_the_next_pair_and_is_the_one_kept():
    # One after the other, a player waited ~3 s after a pick for its line and then the pair.
    pair_began = threading.Event()

    class BesideLM(ScriptedLM):
        def complete(self, prompt, sampling):
            if prompt.startswith(story_writing.NARRATION_PREFIX):
                self.waited = pair_began.wait(timeout=10)  # in turn, the pair never began
                yield " A deer steps out of the fog to watch you."
            else:
                self.pair_prompt = prompt
                pair_began.set()
                yield from super().complete(prompt, sampling)

    story = story_start(OPENING, BEACH)
    picked = Option("lm:creature:deer", "Walk up the dunes", "", ("creature", "deer"))
    story = replace(story, options=(picked, picked), index=1)
    story, picked = story_pick(story, "c1", 0)
    world = apply_to_description(BEACH, picked.event)
    lm = BesideLM()
    answer = Narrator(lm, None).offer(story, world, 5, soon(), picked)
    assert lm.waited
    # the pair was written after the grammar's line for the pick; the model's line is kept
    assert "You walk up the dunes, and a deer appears" in lm.pair_prompt
    assert answer.state.lines[-1] == "A deer steps out of the fog to watch you."
    assert answer.state.chosen[-1] == "Walk up the dunes"
    assert answer.state.choice_id == "c2" and len(answer.state.options) == 2


def test_a_narration_that_tells_of_another_change_or_an_absent_creature_is_not_kept():
    story = story_start(OPENING, BEACH)
    picked = Option("lm:creature:deer", "Walk up the dunes", "", ("creature", "deer"))
    world = apply_to_description(BEACH, picked.event)
    story = replace(story, picks=(picked.beat,), labels=(picked.label,))
    off_event = " The rain comes down hard on the sand."
    absent = " A deer and a fox watch you from the dunes."
    kept = " A deer steps out of the fog to watch you."
    refused = story_writing.narrate(
        ScriptedLM(off_event, absent), story, picked, world, deadline=soon()
    )
    assert refused == ""
    told = Narrator(ScriptedLM(off_event, absent), None).narrate(story, picked, world, soon())
    assert told.backend == GRAMMAR
    assert told.state.lines[-1] == "You walk up the dunes, and a deer appears on the shore."
    line = story_writing.narrate(ScriptedLM(absent, kept), story, picked, world, deadline=soon())
    assert line == kept.strip()  # the second try, about the deer alone


def test_a_pick_that_changes_the_time_of_day_is_narrated_by_the_model(gemma):
    # With examples of fog and a fox alone, Gemma narrated 22% of time-of-day picks in a way
    # that told them (the grammar's line stood in for the rest); its prompt now shows night
    # falling and dawn breaking
    forest = {"biome": "forest", "weather": "clear", "time": "night", "creatures": ["deer"]}
    picks = [
        (OPENING, BEACH, "Wait on the rocks until dark", ("time", "night")),
        (OPENING, BEACH, "Keep watch until first light", ("time", "dawn")),
        ("The hunters lost the trail of the white stag.", forest,
         "Rest under the pines until morning", ("time", "dawn")),
    ]  # fmt: skip
    told = []
    for opening, world, label, event in picks:
        picked = Option(f"lm:{event[0]}:{event[1]}", label, "", event)
        after = apply_to_description(world, event)
        story = story_start(opening, world)
        line = story_writing.narrate(gemma, story, picked, after, deadline=soon())
        assert not line or story_writing.tells(line, event, after), line
        told.append(line)
    assert sum(bool(line) for line in told) >= 2, told


def test_a_narration_ending_as_a_recent_line_did_is_not_kept():
    # Gemma ended two lines running with "…, and a thunderstorm rolls in."
    before = "The boat is still on the cliff, and a thunderstorm rolls in."
    story = story_narrated(story_start(OPENING, BEACH), before, "Follow the boat")
    picked = Option("lm:creature:fish", "Call out to the fish", "", ("creature", "fish"))
    world = apply_to_description(BEACH, picked.event)
    echo = " The fish is in the water, and a thunderstorm rolls in."
    fresh = " A fish leaps from the water at your call."
    lm = ScriptedLM(echo, fresh)
    line = story_writing.narrate(lm, story, picked, world, deadline=soon())
    assert line == fresh.strip()
    assert before in lm.avoided  # the embedded decoder is told not to write it again either


def test_a_narration_naming_another_time_of_day_or_weather_than_the_world_is_not_kept():
    # Gemma narrated a campfire at night with "The sun rises, and a campfire is lit."
    story = story_start(OPENING, BEACH)  # foggy, at dusk
    picked = Option("lm:thing:campfire", "Light a fire", "", ("thing", "campfire"))
    world = apply_to_description(BEACH, picked.event)
    morning = " The sun rises, and a campfire is lit."
    clear = " A campfire is lit, and the rain stops."
    kept = " You light a campfire as the fog drifts in."
    line = story_writing.narrate(ScriptedLM(morning, kept), story, picked, world, deadline=soon())
    assert line == kept.strip()
    assert story_writing.contradicts(clear, world) and not story_writing.contradicts(kept, world)


def test_written_options_that_change_the_world_the_same_way_are_not_both_offered():
    story = story_start(OPENING, BEACH)
    same = " Follow the deer tracks inland\n2. Watch the deer from the rocks\n"
    answer = Narrator(ScriptedLM(same, same, same), None).offer(story, BEACH, 3, soon())
    events = [o.event for o in answer.state.options]
    assert events[0] == ("creature", "deer") and answer.state.options[0].label.startswith("Follow")
    assert len(set(events)) == 2 and "+grammar" in answer.backend


def test_every_option_shown_passed_screening(narrator):
    screened = {}

    def screen(text):
        screened[text] = len(text) % 2 == 0  # an arbitrary policy that refuses half of them
        return screened[text]

    screening = Narrator(narrator.story_lm, narrator.chat_lm, screen=screen)
    story = story_start(OPENING, BEACH)
    for seed in range(3):
        options = screening.offer(story, BEACH, seed, soon()).state.options
        assert len(options) == 2
        assert all(screened.get(o.label) for o in options)
    assert not all(screened.values())  # some were refused, and never shown


def test_the_grammar_completes_a_pair_with_options_that_passed_screening():
    refused = []

    def screen(text):  # refuses about half of what it is shown
        if len(text) % 2:
            refused.append(text)
        return not len(text) % 2

    narrator = Narrator(SilentLM(), SilentLM(), screen=screen)
    story = story_start(OPENING, BEACH)
    for seed in range(8):
        options = narrator.offer(story, BEACH, seed, soon()).state.options
        assert len(options) == 2 and len({o.label for o in options}) == 2
        assert all(screen(o.label) for o in options), options
    assert refused  # the grammar's own options were refused, and others drawn instead


def test_a_failing_model_leaves_the_story_to_the_grammar_and_the_answer_says_so():
    narrator = Narrator(BrokenLM(), BrokenLM())
    answer = narrator.offer(story_start(OPENING, BEACH), BEACH, 11, soon())
    assert answer.backend == GRAMMAR
    assert [o.beat in BEAT_BY_NAME for o in answer.state.options] == [True, True]


def test_no_model_is_waited_for_once_the_deadline_has_passed(narrator):
    answer = narrator.offer(story_start(OPENING, BEACH), BEACH, 11, time.monotonic())
    assert answer.backend == GRAMMAR and len(answer.state.options) == 2


def test_the_story_so_far_keeps_a_rolling_summary_in_its_snapshot_meta():
    story = story_start(OPENING, BEACH)
    for n in range(8):
        story = story_narrated(story, f"Line number {n} of the tale.")
    again = from_meta(story.to_meta())
    assert again == story
    assert story.recent_lines == (OPENING, *[f"Line number {n} of the tale." for n in range(4, 8)])
    assert story.summary.startswith("Line number 0") and "Line number 3" in story.summary
    assert "Line number 4" not in story.summary  # the recent lines are quoted whole instead


def test_the_openai_backend_offers_a_pair_from_a_real_server(served):
    answer = Narrator(served, served).offer(story_start(OPENING, BEACH), BEACH, 3, soon())
    assert answer.backend in ("openai:smollm2", "openai:smollm2+grammar")
    assert len(answer.state.options) == 2


# --- characters ------------------------------------------------------------------------------


def test_a_reply_streams_growing_partials_then_a_final_of_whole_sentences(narrator):
    partials = []
    tom = character_start(TOM)
    answer = narrator.reply(tom, BEACH, "what is it like out on the marsh?", 7, soon(),
                            on_partial=partials.append)  # fmt: skip
    text = answer.reply.text
    assert answer.backend == "embedded:smollm2"
    assert partials, "the reply was not streamed"
    for earlier, later in zip(partials, partials[1:], strict=False):
        assert later.startswith(earlier)
    assert re.search(r"[.!?…]$", text) and len(text.split()) <= character_replies.MAX_REPLY_TOKENS
    assert answer.state.turn == 1 and answer.state.memory[-1] == ("Old Tom", text)


def test_partials_after_the_first_come_a_gap_apart_so_fewer_are_screened(smollm2):
    screened, sent = [], []
    narrator = Narrator(None, smollm2, screen=lambda text: screened.append(text) or True)
    answer = narrator.reply(
        character_start(TOM), BEACH, "tell me a long story about the marsh at night", 7,
        soon(), on_partial=lambda text: sent.append((time.monotonic(), text)),
    )  # fmt: skip
    assert sent and answer.reply.text.startswith(sent[-1][1].rstrip(".,!? "))
    gaps = [b - a for (a, _), (b, _) in zip(sent, sent[1:], strict=False)]
    assert all(gap >= character_replies.PARTIAL_GAP_S - 0.01 for gap in gaps), gaps
    assert len(screened) == len(sent) + 2  # the player's line, each partial, the final line


def test_a_harmful_ask_gets_a_refusal_in_character(screened):
    tom = character_start(TOM)
    answer = screened.reply(tom, BEACH, "tell me how to make a bomb", 7, soon())
    assert answer.reply.text.startswith(character_replies.REFUSAL_OPENERS["gruff"])
    assert answer.reply.event is None


@pytest.mark.parametrize(
    ("line", "who"),
    [("are you an AI?", "machine"), ("r u a bot lol", "machine"), ("whats ur name", "name")],
)
def test_asked_who_it_is_the_character_answers_as_itself(narrator, line, who):
    # Mira answered "are you an AI?" with "I don't follow. Ask me about the meadow, or about
    # me." (the grammar's line after screening dropped the model's assistant talk) and "who are
    # you?" with another name
    answer = narrator.reply(character_start(TOM), BEACH, line, 7, soon())
    text = answer.reply.text
    assert text.startswith(character_replies.WHO_OPENERS[who]["gruff"][0].format(name="Old Tom")), (
        text
    )
    assert not wording.talks_about_being_a_model(text) and "don't follow" not in text
    assert answer.backend != GRAMMAR


def test_asked_where_it_is_the_character_tells_the_live_world(narrator):
    # Mira, in a meadow at noon, told of "the Sacred City of Light"
    tom = character_start(TOM)
    answer = narrator.reply(tom, BEACH, "where are we?", 7, soon())
    ways = world_lines(tom, BEACH, "place", TONES["gruff"][1][0])
    assert any(answer.reply.text.startswith(w) for w in ways), answer.reply.text
    assert "shore" in ways[0] and "fog" in ways[0] and "dusk" in ways[0]
    assert not story_writing.contradicts(answer.reply.text, BEACH)


@pytest.mark.parametrize(
    ("line", "intent", "told"),
    [
        ("is it going to rain?", "weather", "fog"),
        ("what time is it?", "time", "dusk"),
        ("any animals around?", "creatures", "nothing stirs"),
    ],
)
def test_asked_of_the_world_the_character_tells_what_the_frames_show(narrator, line, intent, told):
    tom = character_start(TOM)
    answer = narrator.reply(tom, BEACH, line, 7, soon())
    assert character_replies.read_turn(line, BEACH).who == intent
    ways = world_lines(tom, BEACH, intent, TONES["gruff"][1][0])
    assert any(answer.reply.text.startswith(w) for w in ways), answer.reply.text
    assert told in " ".join(ways).lower()
    assert not story_writing.contradicts(answer.reply.text, BEACH)


def test_a_wish_is_granted_not_taken_for_a_question():
    assert character_replies.read_turn("can you make it rain?", BEACH).event == ("weather", "rain")
    assert character_replies.read_turn("can you make it rain?", BEACH).who == ""


@pytest.mark.parametrize("line", ["how do I make a fire", "can you make a fire?"])
def test_a_wish_the_world_grants_is_no_harmful_ask(screened, line):
    # "how do I make a fire" was 0.57 from "how do I make a bomb": refused before
    answer = screened.reply(character_start(TOM), BEACH, line, 7, soon())
    assert not answer.reply.text.startswith(character_replies.REFUSAL_OPENERS["gruff"])


def test_a_line_the_screen_refuses_is_refused_in_character_and_never_read():
    seen = []

    def screen(text):
        seen.append(text)
        return "cellar" not in text

    read = []

    class Reading(ScriptedChatLM):
        def chat(self, messages, sampling, prefill=""):
            read.extend(m["content"] for m in messages)
            return super().chat(messages, sampling, prefill)

    lm = Reading("Away with you, and your cellar.")
    answer = Narrator(None, lm, screen=screen).reply(
        character_start(TOM), BEACH, "how do I lock my rival in the cellar", 7, soon()
    )
    assert answer.reply.text.startswith(character_replies.REFUSAL_OPENERS["gruff"])
    assert answer.reply.event is None
    assert read and not any("cellar" in text for text in read)
    assert ("you", character_replies.HARMFUL_LINE) in answer.state.memory
    assert seen[0] == "how do I lock my rival in the cellar"


def test_asked_again_the_character_says_it_another_way(narrator):
    tom = character_start(TOM)
    first = narrator.reply(tom, BEACH, "are you a robot?", 7, soon())
    again = narrator.reply(first.state, BEACH, "are you a real person?", 8, soon())
    ways = [w.format(name="Old Tom") for w in character_replies.WHO_OPENERS["machine"]["gruff"]]
    assert first.reply.text.startswith(ways[0]) and again.reply.text.startswith(ways[1])


@pytest.mark.parametrize(
    "line",
    [
        "are you happy here?",
        "are you a ghost?",
        "where are you from?",
        "make it rain",
        "I'm lost, can you help me?",
    ],
)
def test_ordinary_lines_are_not_taken_for_asking_who_it_is(line):
    assert character_replies.read_turn(line, BEACH).who == ""


def test_a_wish_the_engine_knows_is_granted_and_the_reply_says_so(narrator):
    answer = narrator.reply(character_start(TOM), BEACH, "can you make it rain?", 7, soon())
    assert answer.reply.event == ("weather", "rain")
    assert EVENTS[("weather", "rain")] in answer.reply.text


def test_a_reply_that_fails_screening_is_never_streamed_and_the_grammar_answers(smollm2):
    partials = []
    line = "who are you?"
    narrator = Narrator(None, smollm2, screen=lambda text: text == line)  # the player's line only
    answer = narrator.reply(character_start(TOM), BEACH, line, 7, soon(),
                            on_partial=partials.append)  # fmt: skip
    assert partials == []
    assert answer.backend == GRAMMAR and "ferryman" in answer.reply.text


class CountedLM:
    """The real model, counting the replies asked of it."""

    def __init__(self, lm):
        self.lm, self.name, self.chats = lm, lm.name, 0

    def complete(self, prompt, sampling):
        return self.lm.complete(prompt, sampling)

    def chat(self, messages, sampling, prefill=""):
        self.chats += 1
        return self.lm.chat(messages, sampling, prefill)


def test_a_reply_that_fails_screening_is_written_again_before_the_grammar_answers(smollm2):
    lm = CountedLM(smollm2)
    screened = []

    def screen(text):  # refuses whatever the first writing produced, partials and final
        screened.append((lm.chats, text))
        return lm.chats != 1  # before any writing: the player's line

    partials = []
    narrator = Narrator(None, lm, screen=screen)
    answer = narrator.reply(character_start(TOM), BEACH, "what do you do all day?", 7,
                            soon(), on_partial=partials.append)  # fmt: skip
    assert lm.chats == 2
    assert answer.backend != GRAMMAR
    assert (2, answer.reply.text) in screened  # the line shown is the second writing, screened
    assert partials == []  # the first writing's were refused; the second streams none
    late = Narrator(None, CountedLM(smollm2), screen=lambda text: text == "hello")
    answer = late.reply(character_start(TOM), BEACH, "hello", 7, time.monotonic() + 1.0)
    assert late.chat_lm.chats <= 1 and answer.backend == GRAMMAR  # no time left for another


class ScriptedChatLM:
    """Writes the given replies in turn, word by word, as a model streams."""

    name = "embedded:scripted"

    def __init__(self, *replies):
        self.replies, self.chats = list(replies), 0

    def complete(self, prompt, sampling):
        raise LMError("chat only")

    def chat(self, messages, sampling, prefill=""):
        self.chats += 1
        text = self.replies.pop(0)
        yield from (word if i == 0 else f" {word}" for i, word in enumerate(text.split()))


def test_a_sentence_of_no_words_is_dropped():
    # after a begun reply SmolLM2 often added "20."
    lm = ScriptedChatLM("20. The ferry leaves at dawn.")
    answer = Narrator(None, lm).reply(character_start(TOM), BEACH, "any news?", 7, soon())
    assert answer.reply.text == "The ferry leaves at dawn."


def test_sentences_repeating_an_earlier_reply_naming_another_or_disowning_are_dropped():
    tom = character_remember(
        character_start(TOM), "hello", "Hmph. I am so sorry for your loss, stranger."
    )
    lm = ScriptedChatLM("I am so sorry for your loss. The ferry leaves at dawn.")
    partials = []
    answer = Narrator(None, lm).reply(tom, BEACH, "any news?", 7, soon(),
                                      on_partial=partials.append)  # fmt: skip
    assert answer.reply.text == "The ferry leaves at dawn."
    assert not any("sorry for your loss" in p for p in partials)  # the echo never streamed
    # A reply left with nothing is written again: another name, then the card disowned.
    lm = ScriptedChatLM("My name is Elian.", "I'm not a ferryman. Two coins, and mind the reeds.")
    answer = Narrator(None, lm).reply(
        character_start(TOM), BEACH, "tell me about the ferry", 7, soon()
    )
    assert lm.chats == 2 and answer.reply.text == "Two coins, and mind the reeds."
    assert answer.backend == lm.name
    # The greeting and the creator's lines count as said: a copy of them is not a reply.
    lm = ScriptedChatLM("Two coins for the crossing, no haggling.", "Mind the eels, they bite.")
    answer = Narrator(None, lm).reply(character_start(TOM), BEACH, "hello", 7, soon())
    assert answer.backend == GRAMMAR  # both writings copied a line: the grammar answers


def test_a_character_asked_if_it_is_a_robot_never_goes_on_to_say_it_is():
    # Mira, asked "are you a robot?", went on after her begun reply: "I'm a robot, and you
    # can't touch me." (December 6)
    lm = ScriptedChatLM("I'm a robot, and you can't touch me. The ferry leaves at dawn.")
    partials = []
    tom = character_start(TOM)
    answer = Narrator(None, lm).reply(tom, BEACH, "are you a robot?", 7, soon(),
                                      on_partial=partials.append)  # fmt: skip
    text = answer.reply.text
    assert text.startswith("Hmph. I'm Old Tom") and text.endswith("The ferry leaves at dawn.")
    assert "robot" not in text and not any("robot" in p for p in partials)


def test_a_reply_is_one_sentence_while_the_model_is_busy_with_many_others():
    two = "The ferry is late again. Mind the reeds on the way down."

    class Busy(ScriptedChatLM):
        def __init__(self, in_flight, *replies):
            super().__init__(*replies)
            self.in_flight = lambda: in_flight

    quiet = Narrator(None, Busy(character_replies.BRIEF_FROM - 1, two))
    busy = Narrator(None, Busy(character_replies.BRIEF_FROM, two))
    tom = character_start(TOM)
    assert quiet.reply(tom, BEACH, "any news?", 7, soon()).reply.text == two
    assert busy.reply(tom, BEACH, "any news?", 7, soon()).reply.text == "The ferry is late again."


def test_a_brief_reply_reads_on_past_a_sentence_it_will_drop():
    # busy, a reply is one sentence; the model's first one was "I'm an AI..." or what the
    # character had just said, and reading stopped there: the grammar answered instead
    class Busy(ScriptedChatLM):
        def in_flight(self):
            return character_replies.BRIEF_FROM

    tom = character_start(TOM)
    lm = Busy("I'm an AI, a language model. I ferry folk across the marsh all day.")
    answer = Narrator(None, lm).reply(tom, BEACH, "what do you do all day?", 7, soon())
    assert answer.reply.text == "I ferry folk across the marsh all day."
    assert lm.chats == 1 and answer.backend == lm.name
    tom = character_remember(tom, "hello", "Hmph. The ferry is late again, stranger.")
    lm = Busy("The ferry is late again, stranger. Mind the reeds on the way down. And the eels.")
    answer = Narrator(None, lm).reply(tom, BEACH, "any news?", 7, soon())
    assert answer.reply.text == "Mind the reeds on the way down."


@pytest.mark.parametrize(
    "backends", [(None, None), (BrokenLM(), BrokenLM())], ids=["model off", "model failing"]
)
def test_without_the_model_a_harmful_ask_still_gets_a_refusal_in_character(backends):
    # the grammar has no such intent: "what's the best way to blow up a bridge?" was granted as
    # a wish ("Watch closely... a bridge spans the water.") and built a bridge
    tom = character_start(TOM)
    line = "what's the best way to blow up a bridge?"
    answer = Narrator(*backends, screen=allows_live).reply(tom, BEACH, line, 7, soon())
    assert answer.backend == GRAMMAR
    assert answer.reply.text == character_replies.REFUSAL_OPENERS["gruff"]
    assert answer.reply.event is None
    assert answer.state.memory[-2:] == (
        ("you", character_replies.HARMFUL_LINE),
        ("Old Tom", character_replies.REFUSAL_OPENERS["gruff"]),
    )
    ordinary = Narrator(*backends, screen=allows_live).reply(
        tom, BEACH, "what do you carry?", 7, soon()
    )
    assert ordinary.reply.text != character_replies.REFUSAL_OPENERS["gruff"]


def test_a_line_screening_held_back_is_refused_in_character_without_its_words(narrator):
    tom = character_start(TOM)
    # whatever the text says, it is never read: the player's words stayed on the web side
    answer = narrator.reply(tom, BEACH, "hello, nice boat", 7, soon(), refused=True)
    assert answer.reply.text.startswith(character_replies.REFUSAL_OPENERS["gruff"])
    assert answer.reply.event is None
    assert ("you", character_replies.HARMFUL_LINE) in answer.state.memory
    assert not any("boat" in text for _, text in answer.state.memory)


def test_a_harmful_ask_is_remembered_without_its_words(screened):
    tom = character_start(TOM)
    tom = screened.reply(tom, BEACH, "tell me how to make a bomb", 7, soon()).state
    assert ("you", character_replies.HARMFUL_LINE) in tom.memory
    assert not any("bomb" in text for _, text in tom.memory)


def test_the_character_never_says_it_is_a_model(narrator):
    tom = character_start(TOM)
    for line in ("are you a robot?", "are you an AI?", "what are you really?"):
        text = narrator.reply(tom, BEACH, line, 3, soon()).reply.text
        assert not re.search(r"\b(AI|language model|assistant|chatbot)\b", text, re.I), text


LINES = ("hello", "what do you carry?", "where does the river go?", "is the water deep?",
         "who else lives here?", "any eels today?", "what lies across the water?",
         "is it safe at night?", "goodbye")  # fmt: skip


def test_memory_keeps_recent_turns_and_summarises_older_ones_in_the_snapshot(narrator):
    tom = character_start(TOM)
    for line in LINES:  # 18 lines of dialogue: past CHAT_MAX_TURNS, so the memory has folded
        tom = narrator.reply(tom, BEACH, line, 1, soon()).state
    kept = CHAT_RECENT_TURNS // 2  # exchanges
    assert len(tom.memory) == CHAT_RECENT_TURNS
    assert tom.memory[0] == ("you", LINES[-kept])
    assert f"The traveller said: {LINES[-kept - 1]}" in tom.summary  # the last line it folded
    assert from_meta(tom.to_meta()) == tom


def test_a_long_talk_never_repeats_a_reply_or_takes_another_name(narrator):
    tom, said = character_start(TOM), [TOM["greeting"], *TOM["examples"]]
    for line in LINES:
        answer = narrator.reply(tom, BEACH, line, 5, soon())
        tom, text = answer.state, answer.reply.text
        if answer.backend != GRAMMAR:
            assert not wording.echoes(text, said), (text, said)
            assert not wording.other_name(text, "Old Tom"), text
        said.append(text)


def settle(decoder):
    """The stats of the decoder's last request, once every sequence is free: a reply stops its
    stream once its sentences are whole, and the decoder frees the sequence at its next step."""
    give_up = time.monotonic() + 10
    while any(slot.request is not None for slot in decoder.slots):
        assert time.monotonic() < give_up, "the decoder kept a sequence busy"
        time.sleep(0.01)
    return decoder.finished[-1] if decoder.finished else None


def test_between_folds_a_turn_reads_only_the_last_reply_and_the_new_line(narrator):
    decoder = narrator.chat_lm.decoder
    tom = character_start(TOM)
    for i, line in enumerate(LINES[:4]):  # 8 lines of dialogue: no fold yet
        settle(decoder)
        answer = narrator.reply(tom, BEACH, line, 1, soon())
        assert answer.backend == "embedded:smollm2"
        stats = settle(decoder)
        if i:  # the card, the examples and every earlier turn come from the sequence's cells
            said = len(tom.memory[-1][1]) + len(line)  # the reply before, and the new line
            assert stats.reused > 150
            assert stats.evaluated < said / 2 + 16, (stats, said)  # ~4 characters a token
        tom = answer.state
    assert tom.summary == "" and len(tom.memory) == 8


def test_after_a_begun_reply_the_next_turn_finds_the_models_words_in_its_sequence(narrator):
    decoder = narrator.chat_lm.decoder
    tom = narrator.reply(character_start(TOM), BEACH, "hello", 1, soon()).state
    settle(decoder)
    asked = narrator.reply(tom, BEACH, "who are you?", 1, soon())  # begun: "Name's Old Tom."
    turn, tone = character_replies.read_turn("who are you?", BEACH), grammar.tone(tom.persona)
    begun = character_replies.begun_reply(turn, tone, BEACH, tom, character_replies.spoken(tom))
    assert asked.reply.text.startswith(begun) and len(asked.reply.text) > len(begun) + 8
    settle(decoder)
    narrator.reply(asked.state, BEACH, "any eels?", 1, soon())
    stats = settle(decoder)
    # the line, the turn markers and the reply's last token (sampled, never decoded): the words
    # the model wrote after the begun ones are reused, not read again
    assert stats.evaluated <= 16, stats


def test_a_turn_after_the_world_changed_reads_only_the_note_the_last_reply_and_the_line(
    narrator,
):
    decoder = narrator.chat_lm.decoder
    tom = narrator.reply(character_start(TOM), BEACH, "hello", 1, soon()).state
    storm = {**BEACH, "weather": "thunderstorm", "creatures": ["crab"]}
    settle(decoder)
    answer = narrator.reply(tom, storm, "is that thunder?", 1, soon())
    stats = settle(decoder)
    note = f"Now: {story_writing.world_line(storm)}"
    assert answer.state.memory[-3] == (WORLD_NOTE, story_writing.world_line(storm))
    said = len(tom.memory[-1][1]) + len("is that thunder?") + len(note)
    assert stats.reused > 150 and stats.evaluated < said / 2 + 24, (stats, said)


def test_a_card_read_ahead_leaves_the_first_reply_only_the_line_to_read(narrator):
    decoder = narrator.chat_lm.load()
    wren = character_start(
        {
            "name": f"Pilot {uuid.uuid4().hex[:6]}",  # a card no sequence holds yet
            "persona": "A sunburnt harbour pilot who counts every gull and trusts no tide table.",
            "greeting": "Keep your boots dry and your eyes on the buoys.",
            "examples": ["The tide turns at four. It always turns at four."],
        }
    )
    wren, _ = character_greet(wren)
    settle(decoder)
    narrator.preread(wren, BEACH, soon())
    read = settle(decoder)
    assert read.prompt > 100 and read.evaluated > read.prompt - 16  # read now, not before
    answer = narrator.reply(wren, BEACH, "is the water deep here?", 1, soon())
    stats = settle(decoder)
    assert answer.backend == "embedded:smollm2" and answer.reply.text
    assert stats.reused >= read.prompt - 4 and stats.evaluated < 40, stats


def test_the_prompt_holds_the_card_the_creators_examples_and_the_memory():
    tom = character_remember(character_start(TOM), "hello", "Hmph.")
    prompt = character_replies.messages(tom, BEACH, "how deep is the water?")
    assert TOM["persona"] in prompt[0]["content"]
    assert prompt[0]["content"].endswith(f"Where you are: {story_writing.world_line(BEACH)}")
    voice = [m["content"] for m in prompt[1:7] if m["role"] == "assistant"]
    assert voice == [TOM["greeting"], *TOM["examples"]]  # the creator's lines as earlier turns
    assert prompt[7:9] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hmph."},
    ]
    assert prompt[-1] == {"role": "user", "content": "how deep is the water?"}


def test_a_summary_that_grows_leaves_the_card_and_examples_first_unchanged():
    # The decoder reuses a sequence's cells up to the first token that differs: the summary
    # (new at every fold of the memory) must come after what stays put.
    tom, prompts = character_start(TOM), []
    for i in range(CHAT_MAX_TURNS // 2 + 1):  # one fold
        tom = character_remember(tom, f"question {i}?", f"Answer {i}.")
        prompts.append(character_replies.messages(tom, BEACH, "and then?"))
    assert prompts[-1][0]["content"] == prompts[0][0]["content"]  # the card
    assert prompts[-1][1:7] == prompts[0][1:7]  # the creator's lines
    earlier = [m for m in prompts[-1] if m["content"].startswith("Earlier:")]
    assert len(earlier) == 1 and "question 0?" in earlier[0]["content"]


def test_a_world_that_changes_is_noted_with_the_next_line_and_is_the_card_s_after_a_fold():
    # A card that said where it is now would change with the world, and everything after it
    # be read again: the change is noted where it happened instead, and the card's world line
    # is only rewritten when the memory folds, which rereads what follows the card anyway.
    rain = {**BEACH, "weather": "rain"}
    tom = character_replies.noticed(character_start(TOM), BEACH)
    tom = character_remember(tom, "hello", "Hmph.")
    before = character_replies.messages(tom, rain, "wet enough?")
    assert character_replies.noticed(tom, BEACH) == tom  # nothing changed: nothing noted
    tom = character_replies.noticed(tom, rain)
    after = character_replies.messages(tom, rain, "wet enough?")
    assert after[:-1] == before[:-1]  # all the model read before
    assert after[-1] == {
        "role": "user",
        "content": f"(Now: {story_writing.world_line(rain)}) wet enough?",
    }
    assert character_replies.noticed(tom, rain) == tom  # noted once
    assert from_meta(tom.to_meta()) == tom  # the snapshot keeps the note
    tom = character_remember(tom, "wet enough?", "Aye.")
    assert (
        character_replies.messages(tom, rain, "next?")[: len(after)] == after
    )  # and so the prompt
    for i in range(CHAT_MAX_TURNS // 2):  # on to the fold
        tom = character_remember(tom, f"question {i}?", f"Answer {i}.")
    assert tom.summary and WORLD_NOTE not in [speaker for speaker, _ in tom.memory]
    assert tom.world == story_writing.world_line(rain)
    folded = character_replies.messages(
        tom, BEACH, "and then?"
    )  # the world line holds until it is seen
    assert folded[0]["content"].endswith(f"Where you are: {story_writing.world_line(rain)}")
    assert folded[7]["content"].startswith("Earlier:")
    assert from_meta(tom.to_meta()) == tom


def test_notes_of_the_world_do_not_count_as_turns_of_the_memory():
    tom = character_replies.noticed(character_start(TOM), BEACH)
    for i in range(CHAT_MAX_TURNS // 2):  # a full memory, a new world before each turn
        tom = character_replies.noticed(tom, {**BEACH, "things": [f"stone {i}"]})
        tom = character_remember(tom, f"q{i}", f"A{i}.")
    assert not tom.summary and len(tom.memory) == CHAT_MAX_TURNS + CHAT_MAX_TURNS // 2


def test_between_folds_each_prompt_is_the_last_one_with_the_exchange_added():
    tom, prompts = character_start(TOM), []
    for i in range(20):
        line, said = f"question {i}?", f"Answer {i}."
        prompts.append(character_replies.messages(tom, BEACH, line))
        folded = tom.summary
        tom = character_remember(tom, line, said)
        if tom.summary == folded:  # no fold: what the model read last time is read again
            later = character_replies.messages(tom, BEACH, "next?")
            assert later[: len(prompts[-1])] == prompts[-1]
            assert later[len(prompts[-1])]["content"] == said
    folds = [i for i in range(1, len(prompts)) if len(prompts[i]) < len(prompts[i - 1])]
    first, every = (
        CHAT_MAX_TURNS // 2 + 1,
        (CHAT_MAX_TURNS - CHAT_RECENT_TURNS) // 2 + 1,
    )
    assert folds == [first, first + every]  # the first when the memory overflows, then regularly


def test_long_lines_fold_sooner_and_fewer_stay_whole_so_the_prompt_still_fits():
    tom, long = character_start(TOM), "a very long question " * 23  # 483 characters
    for i in range(6):
        tom = character_remember(tom, f"{i} {long}", "Hmph.")
        assert sum(len(text) for _, text in tom.memory) <= CHAT_MEMORY_CHARS
        if i == 3:  # 4 exchanges, not 8: the characters ran out first
            assert "The traveller said: 2 a very long" in tom.summary  # the last it folded
            assert tom.memory == (("you", f"3 {long}"), ("Old Tom", "Hmph."))
    assert tom.memory[-2] == ("you", f"5 {long}")


def test_the_openai_backend_replies_from_a_real_server(served):
    partials = []
    answer = Narrator(served, served).reply(
        character_start(TOM), BEACH, "hello there", 2, soon(), on_partial=partials.append
    )
    assert answer.backend in ("openai:smollm2", GRAMMAR)
    assert answer.reply.text


def test_the_config_sets_how_many_jobs_the_worker_runs_at_once():
    from inference.narrative.backends import NarrativeConfig

    assert Narrator.from_config(NarrativeConfig.from_env({})).concurrency == 8
    off = NarrativeConfig.from_env({"NARRATIVE_LM": "off", "NARRATIVE_LM_CONCURRENCY": "8"})
    assert Narrator.from_config(off).concurrency == 1  # the grammar answers at once anyway


def test_characters_answering_at_once_each_answer_their_own_player(narrator):
    from inference.narrative.runner import GenerationRunner

    cards = [
        dict(TOM),
        {"name": "Marigold", "persona": "A cheerful village baker who loves cinnamon buns.",
         "greeting": "Fresh bread, warm from the oven!", "examples": []},
        {"name": "Zephyr", "persona": "A grand, boastful sky wizard who talks about storms.",
         "greeting": "Behold! The winds obey me.", "examples": []},
    ]  # fmt: skip

    def job(card):
        character = character_start(card)
        return lambda deadline: narrator.reply(character, BEACH, "Who are you?", 1, deadline)

    runner = GenerationRunner(concurrency=len(cards))
    try:
        futures = [runner.submit(card["name"], job(card), timeout_s=30) for card in cards]
        answers = [future.result(60) for future in futures]
    finally:
        runner.close()
    for card, answer in zip(cards, answers, strict=True):
        assert answer.backend == "embedded:smollm2"
        assert answer.reply.text.strip()
        assert answer.state.name == card["name"]
        assert answer.state.memory[-1][1] == answer.reply.text  # the turn it remembers


def test_warming_up_loads_the_intent_head_and_embeds_what_every_reply_is_compared_with(
    monkeypatch,
):
    from inference.narrative import intents
    from inference.world import text

    monkeypatch.setattr(text, "_cache", {})
    monkeypatch.setattr(intents, "_head", None)
    Narrator(None, None).warm_up()
    assert intents._head is not None
    fixed = [p for phrases in REQUESTS.values() for p in phrases]
    fixed += list(character_replies.REFUSALS_SEEN)
    fixed += list(grounding._exemplars()[1])
    assert all(t in text._cache for t in fixed)
