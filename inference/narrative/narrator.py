"""The one interface the worker uses for stories and characters, whatever writes them.

``Narrator`` holds a model for story options and one for characters (``backends/``; the same
object for the openai backend) and falls back to the grammar (``grammar.py``) when the model is
off, fails, or runs past the request's deadline. Every answer says which backend wrote it
("embedded:gemma", "openai:<model>", "grammar"), and the worker puts that in the session's
status. Synchronous: the worker calls these on its generation threads (``runner.py``),
``concurrency`` of them at once (the backends take calls from several threads).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from inference.narrative import character_replies, grammar, grounding, story_writing, wording
from inference.narrative.backends import open_backends
from inference.narrative.character import Character, Reply
from inference.narrative.lm import LanguageModel, NarrativeConfig
from inference.narrative.story import Option, Story, story_narrated

log = logging.getLogger(__name__)

GRAMMAR = "grammar"
MIN_TIME_LEFT_S = 0.3  # with less left before the deadline, the grammar answers at once
FAILURES_TO_PAUSE = 3  # consecutive failures of a backend before it rests
PAUSE_S = 30.0  # how long it rests: the grammar answers meanwhile, without waiting on it


@dataclass(frozen=True)
class Answer:
    state: Story | Character  # the narrative state after this step
    backend: str  # who wrote the text: a backend's name or "grammar"
    reply: Reply | None = None  # a character's reply (dialogue only)


class Narrator:
    def __init__(
        self,
        story_lm: LanguageModel | None = None,
        chat_lm: LanguageModel | None = None,
        *,
        screen: wording.Screen = wording.allow_all,
        concurrency: int = 1,
    ) -> None:
        self.story_lm = story_lm
        self.chat_lm = chat_lm
        self.screen = screen
        self.concurrency = concurrency  # jobs the worker's runner runs at once
        self._failures: dict[str, int] = {}
        self._paused_until: dict[str, float] = {}

    @classmethod
    def from_config(
        cls, config: NarrativeConfig, *, screen: wording.Screen = wording.allow_all
    ) -> Narrator:
        story_lm, chat_lm = open_backends(config)
        concurrency = config.concurrency if config.backend != "off" else 1
        return cls(story_lm, chat_lm, screen=screen, concurrency=concurrency)

    @classmethod
    def from_env(cls, *, screen: wording.Screen = wording.allow_all) -> Narrator:
        return cls.from_config(NarrativeConfig.from_env(), screen=screen)

    @classmethod
    def grammar(cls) -> Narrator:
        return cls(None, None)

    @property
    def backends(self) -> str:
        names = {lm.name for lm in (self.story_lm, self.chat_lm) if lm is not None}
        return ", ".join(sorted(names)) or GRAMMAR

    def warm_up(self) -> None:
        """Load embedded weights and embed what every line is compared with (the asks, the
        requests, the grounding exemplars, screening's own) now: the first player should not
        wait for them, and 8 first replies at once each embedded them (about 2.5 s each in the
        bench's flood)."""
        for lm in (self.story_lm, self.chat_lm):
            load = getattr(lm, "load", None)
            if load is not None:
                try:
                    load()
                except Exception as exc:
                    log.warning("narrative model %s unavailable: %s", lm.name, exc)
        try:
            character_replies.warm_up()
            grounding.ground_many(["hello there"], None)
            self.screen("hello there")
        except Exception as exc:  # noqa: BLE001 (the first replies will embed them instead)
            log.warning("narrative warm-up: %s", exc)

    # --- stories ---------------------------------------------------------------------------
    def offer(self, story: Story, world: dict, seed: int, deadline: float,
              picked: Option | None = None) -> Answer:  # fmt: skip
        """The next pair. After a pick (`picked`, as ``story.story_pick`` left the story), its
        line too, written beside the pair: the pair from the story with the grammar's line for
        the pick (the pick and its event, what the model's line tells too) while the model
        writes its own, the one kept. One after the other, the player waited for both: the next
        pair came ~3 s after a pick, one session alone."""
        if picked is None or picked.narration:  # a grammar beat told itself at the pick
            return self._pair(story, world, seed, deadline)
        told = _ASIDE.submit(self.narrate, story, picked, world, deadline)
        line = story_writing.grammar_narration(picked, world)
        offered = self._pair(story_narrated(story, line, picked.label), world, seed, deadline)
        narrated = told.result().state
        state = replace(
            offered.state, lines=narrated.lines, summary=narrated.summary, chosen=narrated.chosen
        )
        return Answer(state, offered.backend)

    def _pair(self, story: Story, world: dict, seed: int, deadline: float) -> Answer:
        lm = self._usable(self.story_lm, deadline)
        if lm is not None:
            try:
                offered, written = story_writing.offer(
                    lm, story, world, seed, deadline=deadline, screen=self.screen
                )
                self._succeeded(lm)
                return Answer(offered, lm.name if written else f"{lm.name}+{GRAMMAR}")
            except Exception as exc:
                self._failed(lm, exc)
        return Answer(grammar.story_offer(story, world, seed), GRAMMAR)

    def narrate(self, story: Story, picked: Option, world: dict,
                deadline: float) -> Answer:  # fmt: skip
        """The story with the pick's line added (a grammar beat already carries one)."""
        if picked.narration:
            return Answer(story, GRAMMAR)
        lm = self._usable(self.story_lm, deadline)
        line = ""
        if lm is not None:
            try:
                line = story_writing.narrate(
                    lm, story, picked, world, deadline=deadline, screen=self.screen
                )
                self._succeeded(lm)
            except Exception as exc:
                self._failed(lm, exc)
        backend = lm.name if line and lm is not None else GRAMMAR
        line = line or story_writing.grammar_narration(picked, world)
        return Answer(story_narrated(story, line, picked.label), backend)

    # --- characters ------------------------------------------------------------------------
    def reply(
        self,
        character: Character,
        world: dict,
        line: str,
        seed: int,
        deadline: float,
        on_partial: Callable[[str], None] | None = None,
        refused: bool = False,
    ) -> Answer:
        """`refused`: screening held the player's line back; the character refuses in its
        voice without ever reading it (`line` is ignored)."""
        lm = self._usable(self.chat_lm, deadline)
        if lm is not None:
            try:
                busy = getattr(lm, "in_flight", lambda: 0)()  # a server does not say: 0
                turned, reply, written = character_replies.reply(
                    lm, character, world, line, seed,
                    deadline=deadline, screen=self.screen, on_partial=on_partial,
                    brief=busy >= character_replies.BRIEF_FROM, refused=refused,
                )  # fmt: skip
                self._succeeded(lm)
                return Answer(turned, lm.name if written else GRAMMAR, reply)
            except Exception as exc:
                self._failed(lm, exc)
        turned, reply = character_replies.grammar_reply(
            character, world, line, seed, refused=refused, screen=self.screen
        )
        return Answer(turned, GRAMMAR, reply)

    def preread(self, character: Character, world: dict, deadline: float) -> None:
        """The chat model reads the character's context ahead of the first line; a failure
        here costs only that head start (the reply will read the context itself)."""
        lm = self._usable(self.chat_lm, deadline)
        if lm is not None:
            try:
                character_replies.preread(lm, character, world, deadline=deadline)
            except Exception as exc:
                log.info("narrative model %s: no pre-read: %s", lm.name, exc)

    # --- backend health ----------------------------------------------------------------------
    def _usable(self, lm: LanguageModel | None, deadline: float) -> LanguageModel | None:
        if lm is None or deadline - time.monotonic() < MIN_TIME_LEFT_S:
            return None
        if self._paused_until.get(lm.name, 0.0) > time.monotonic():
            return None
        return lm

    def _succeeded(self, lm: LanguageModel) -> None:
        self._failures[lm.name] = 0

    def _failed(self, lm: LanguageModel, exc: Exception) -> None:
        count = self._failures.get(lm.name, 0) + 1
        self._failures[lm.name] = count
        log.warning("narrative backend %s failed (%d in a row): %s", lm.name, count, exc)
        if count >= FAILURES_TO_PAUSE:
            self._paused_until[lm.name] = time.monotonic() + PAUSE_S
            self._failures[lm.name] = 0


# A pick's narration runs beside its pair (``Narrator.offer``): one thread each for
# as many story steps as run at once; the models batch both (``decoding.py``).
_ASIDE = ThreadPoolExecutor(max_workers=8, thread_name_prefix="narrate-aside")
