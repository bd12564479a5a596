"""Story votes as plain functions on a session: who may vote, when a vote closes, who wins."""

from inference.narrative.story import Option, Story
from inference.narrative.world_words import EVENTS
from inference.serving import votes
from inference.serving.session import Camera, LiveSession

EVENT = next(iter(EVENTS))


def story_session(*slots: int) -> LiveSession:
    options = tuple(
        Option(beat=f"b{i}", label=f"option {i}", narration="", event=EVENT) for i in (0, 1)
    )
    session = LiveSession(session_id="s")
    session.narrative = Story(lines=("Once.",), index=1, options=options)
    for slot in slots:
        session.cameras[slot] = Camera(session_id="s", slot=slot)
    return session


def test_a_vote_on_a_pair_no_longer_on_offer_is_refused():
    session = story_session(0)
    assert votes.player_vote(session, 0, "c0", 1) == votes.STALE_CHOICE
    assert votes.player_vote(session, 0, "c1", -1) == votes.STALE_CHOICE
    assert votes.player_vote(LiveSession(session_id="t"), 0, "c1", 0) == votes.NO_STORY
    assert session.ballot.players == {}


def test_the_vote_closes_only_once_every_seated_player_voted():
    session = story_session(0, 1)
    assert votes.player_vote(session, 0, "c1", 1) is None
    assert votes.close(session) is None  # slot 1 has not voted
    assert votes.player_vote(session, 1, "c1", 1) is None
    picked = votes.close(session)
    assert picked is not None and picked.label == "option 1"
    assert session.last_pick == "option 1" and not session.narrative.options
    assert session.ballot.players == {}  # a fresh ballot for the next pair


def test_a_timed_out_vote_closes_with_the_votes_it_has():
    session = story_session(0, 1)
    votes.player_vote(session, 1, "c1", 0)
    assert votes.close(session, timed_out=True).label == "option 0"


def test_the_window_opens_on_the_first_vote_only():
    session = story_session(0)
    votes.player_vote(session, 0, "c1", 0)
    assert votes.open_window(session.ballot, now=10.0, window_s=15.0)
    assert not votes.open_window(session.ballot, now=12.0, window_s=15.0)
    assert session.ballot.closes_at == 25.0


def test_an_audience_vote_counts_once_per_voter_and_never_closes_the_vote():
    session = story_session(0)
    assert votes.audience_vote(session, "v1", "c1", 1)
    assert not votes.audience_vote(session, "v1", "c1", 1)  # the same vote again
    assert not votes.audience_vote(session, "", "c1", 1)
    assert votes.close(session) is None
    choices = votes.choices(session, now=0.0)
    assert (choices.votes, choices.audience) == ((0, 0), (0, 1))


def test_the_audience_breaks_a_tie_between_players():
    session = story_session(0, 1)
    votes.player_vote(session, 0, "c1", 0)
    votes.player_vote(session, 1, "c1", 1)
    votes.audience_vote(session, "v1", "c1", 1)
    votes.audience_vote(session, "v2", "c1", 1)
    assert votes.close(session).label == "option 1"
