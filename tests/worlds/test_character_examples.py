"""A character's example lines: written by the creator, pinned in the version, sent to the
worker as the model's examples of the character's voice, shown on the world page."""

import re

import pytest
from rest_framework.test import APIClient

from sessions.worker_client import attach_message
from tests.worlds.factories import make_world
from worlds.models import World

TOM = {
    "title": "Ferry",
    "category": "characters",
    "prompt": "a misty marsh with reeds",
    "character_name": "Old Tom",
    "character_persona": "A gruff marsh ferryman.",
    "character_greeting": "Hmph. Need a ride?",
}


@pytest.fixture
def owner_api(owner):
    api = APIClient()
    api.force_authenticate(owner)
    return api


def test_the_api_takes_example_lines_and_the_version_pins_them(owner_api):
    examples = "Mind the eels.\n\nTwo coins for the crossing.\n"
    body = owner_api.post(
        "/api/worlds/", TOM | {"character_examples": examples, "publish": True}, format="json"
    ).json()
    world = World.objects.get(slug=body["slug"])
    assert body["character_examples"] == examples.strip()
    assert world.current_version.example_lines() == [
        "Mind the eels.",
        "Two coins for the crossing.",
    ]


def test_the_worker_is_sent_at_most_eight_example_lines(owner):
    lines = "\n".join(f"Line {n}." for n in range(12))
    world = make_world(owner, **TOM, character_examples=lines)

    class Session:
        id = "s1"
        world_version = world.current_version
        is_live_world = False
        forked_from_id = None  # not a fork
        forked_frame = forked_slot = 0

    card = attach_message(Session, restore=False).character
    assert card.examples == tuple(f"Line {n}." for n in range(8))


def test_the_world_page_shows_a_sample_exchange(client, owner):
    lines = ["Mind the eels.", "Two coins.", "The fog lies.", "Row, row.", "Hmph, the fifth."]
    world = make_world(owner, **TOM, character_examples="\n".join(lines))
    page = client.get(f"/w/{world.slug}/").content.decode()
    assert "A sample exchange" in page
    # As the chat model is shown them: the greeting and the first three lines answer the
    # visitor's cues, the rest come as they are.
    exchange = page[page.index('class="sample-exchange"') :].split("</ul>")[0]
    said = re.findall(r"<li[^>]*><b>([^<]+):</b> ([^<]+)</li>", exchange)
    assert said == [
        ("You", "Hello."),
        ("Old Tom", "Hmph. Need a ride?"),
        ("You", "Tell me about yourself."),
        ("Old Tom", "Mind the eels."),
        ("You", "What&#x27;s on your mind?"),
        ("Old Tom", "Two coins."),
        ("You", "Go on."),
        ("Old Tom", "The fog lies."),
        ("Old Tom", "Row, row."),
        ("Old Tom", "Hmph, the fifth."),
    ]


def test_a_world_without_example_lines_shows_no_exchange(client, owner):
    world = make_world(owner, **TOM)
    assert "A sample exchange" not in client.get(f"/w/{world.slug}/").content.decode()
