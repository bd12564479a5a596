"""Story votes in a session: its players vote on the pair on offer (the majority picks, once
everyone voted or the window closed), its spectators vote apart as the audience (a tie-break
only). Plain functions on ``LiveSession``, and ``StoryVotes``, their clock on the event loop."""

import asyncio
from collections.abc import Awaitable, Callable, Coroutine

from inference.narrative.story import ChoiceError, Option, Story, choices_message, story_pick
from inference.serving import messages as m
from inference.serving.session import Ballot, LiveSession, Refusal

# Audience votes go out as one tally this often at most: each re-sent the pair to every socket
# of the session, so a spectator voting 60 times a second made 60 broadcasts a second.
AUDIENCE_TALLY_EVERY_S = 0.5
MAX_AUDIENCE = 10_000  # spectators counted per pair; later ones may change a vote, not add one


NO_STORY = Refusal("unsupported", "No story in this world.")
STALE_CHOICE = Refusal("stale_choice", "That choice is no longer on offer.")


def ballot_for(session: LiveSession, story: Story) -> Ballot:
    """The session's ballot on the pair on offer (a fresh one once the pair changed)."""
    if session.ballot.choice_id != story.choice_id:
        session.ballot = Ballot(choice_id=story.choice_id)
    return session.ballot


def player_vote(session: LiveSession, slot: int, choice_id: str, option: int) -> Refusal | None:
    """Count a seated player's vote on the pair on offer (None), or say why not."""
    story = session.narrative
    if not isinstance(story, Story):
        return NO_STORY
    if not story.options or choice_id != story.choice_id or option < 0:
        return STALE_CHOICE
    ballot_for(session, story).players[slot] = option
    return None


def open_window(ballot: Ballot, now: float, window_s: float) -> bool:
    """Start the vote's time on its first vote. -> whether it started now."""
    if ballot.closes_at is not None:
        return False
    ballot.closes_at = now + window_s
    return True


def audience_vote(session: LiveSession, voter: str, choice_id: str, option: int) -> bool:
    """Count a spectator's vote (it never closes the vote). -> whether a count changed."""
    story = session.narrative
    if not isinstance(story, Story) or not story.options:
        return False
    if choice_id != story.choice_id or option < 0 or not voter:
        return False
    ballot = ballot_for(session, story)
    if ballot.audience.get(voter) == option:
        return False  # the same vote again changes no count
    if voter not in ballot.audience and len(ballot.audience) >= MAX_AUDIENCE:
        return False
    ballot.audience[voter] = option
    return True


def close(session: LiveSession, *, timed_out: bool = False) -> Option | None:
    """Close the vote when every seated player voted (or its time is up): the majority's option
    is taken off the offer and returned (None: the vote stays open)."""
    story, ballot = session.narrative, session.ballot
    if not isinstance(story, Story) or ballot.choice_id != story.choice_id:
        return None
    if not ballot.players:
        return None
    everyone = set(session.cameras) <= set(ballot.players)
    if not (everyone or timed_out):
        return None
    try:
        # Taken off the offer at once: a late vote or a stale tab gets an error.
        story, picked = story_pick(story, ballot.choice_id, ballot.winner())
    except ChoiceError:
        return None
    session.narrative = story
    session.ballot = Ballot()
    session.last_pick = picked.label
    return picked


def choices(session: LiveSession, now: float) -> m.Choices | None:
    """The pair on offer with the votes so far (None: no story in this world)."""
    story = session.narrative
    if not isinstance(story, Story):
        return None
    ballot = ballot_for(session, story)
    closes_in = None
    if ballot.closes_at is not None:
        closes_in = round(max(0.0, ballot.closes_at - now), 1)
    return m.Choices(
        **choices_message(story),
        votes=tuple(ballot.counts(ballot.players)),
        audience=tuple(ballot.counts(ballot.audience)),
        closes_in=closes_in,
        picked=session.last_pick,
    )


class StoryVotes:
    """The worker's votes: the window that closes a vote, the audience's throttled tally."""

    def __init__(
        self,
        *,
        window_s: float,
        spawn: Callable[[Coroutine], None],
        send_choices: Callable[[LiveSession], Awaitable[None]],
        on_pick: Callable[[LiveSession, Option], Coroutine],
        holds: Callable[[LiveSession], bool],
    ) -> None:
        """``on_pick(session, option)``: the story step of a closed vote's pick;
        ``holds(session)``: the session is still this worker's."""
        self.window_s = window_s
        self.spawn = spawn
        self.send_choices = send_choices
        self.on_pick = on_pick
        self.holds = holds

    def choose(self, session: LiveSession, slot: int, message: m.Choose) -> Refusal | None:
        """A player's vote; with everyone voted (alone: at once) or the window closed, the
        majority is the pick."""
        refusal = player_vote(session, slot, message.choice_id, message.option)
        if refusal is not None:
            return refusal
        ballot = session.ballot
        if open_window(ballot, asyncio.get_running_loop().time(), self.window_s):
            self.spawn(self._close_later(session, ballot))
        if not self._close(session):
            self.spawn(self.send_choices(session))
        return None

    def audience(self, session: LiveSession, message: m.Vote) -> None:
        """A spectator's vote: counted apart, as the audience; it never closes the vote."""
        counted = audience_vote(session, message.voter, message.choice_id, message.option)
        if counted and not session.audience_tally_due:
            session.audience_tally_due = True
            self.spawn(self._tally(session))

    def unseat(self, session: LiveSession, slot: int) -> None:
        """A player left: their vote goes, and the others' may now close it."""
        session.ballot.players.pop(slot, None)
        self._close(session)

    def _close(self, session: LiveSession, *, timed_out: bool = False) -> bool:
        picked = close(session, timed_out=timed_out)
        if picked is not None:
            self.spawn(self.on_pick(session, picked))
        return picked is not None

    async def _close_later(self, session: LiveSession, ballot: Ballot) -> None:
        await asyncio.sleep(max(0.0, ballot.closes_at - asyncio.get_running_loop().time()))
        if self.holds(session) and session.ballot is ballot:
            self._close(session, timed_out=True)

    async def _tally(self, session: LiveSession) -> None:
        await asyncio.sleep(AUDIENCE_TALLY_EVERY_S)
        session.audience_tally_due = False
        await self.send_choices(session)
