"""Load the demo creator and a starter catalog. Idempotent: worlds already there are left alone."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from worlds import services, trending
from worlds.models import World

DEMO_USERNAME = "parallax"

# (title, category, prompt, description, extra fields)
DEMO_WORLDS = [
    (
        "Pine Valley Run",
        "games",
        "a snowy pine forest valley with frozen ponds under a clear winter sky",
        "Race through the pines before the storm closes the pass.",
        {},
    ),
    (
        "Dune Sprinter",
        "games",
        "a dry desert of red sand dunes and cacti under a blazing noon sun",
        "How far can you get before sunset?",
        {},
    ),
    (
        "Lava Steps",
        "games",
        "a volcanic field of black rock and glowing lava rivers under falling ash",
        "Hop the cooled rocks. Do not touch the orange.",
        {},
    ),
    (
        "Reef Diver",
        "games",
        "a bright coral reef under the sea with tropical fish and crabs",
        "Swim the reef: coral, fish and crabs under the waves.",
        {},
    ),
    (
        "The Lantern Keeper",
        "stories",
        "a foggy fishing village by the sea with a lighthouse at dusk",
        "Someone has to keep the light burning.",
        {
            "story_opening": (
                "The lighthouse lamp went dark at midnight, and the boats are still out."
            )
        },
    ),
    (
        "The Last Caravan",
        "stories",
        "a dry desert of sand and acacia trees with camels on a dusty trade road"
        " under the midday sun",
        "A merchant caravan, a stolen map, a long road.",
        {
            "story_opening": (
                "You wake beside a cold campfire; the caravan's tracks lead east across the grass."
            )
        },
    ),
    (
        "Winter Court",
        "stories",
        "a frozen castle courtyard deep in snow at dusk under falling snow",
        "Intrigue at the coldest court in the north.",
        {
            "story_opening": (
                "The queen's envoy hands you a sealed letter and vanishes into the snow."
            )
        },
    ),
    (
        "Roots Below",
        "stories",
        "a mossy underground cave with glowing mushrooms and still pools",
        "Something old grows beneath the forest.",
        {"story_opening": "The ground gave way, and now the only light comes from the mushrooms."},
    ),
    (
        "Mira the Cartographer",
        "characters",
        "green rolling hills with a windmill and wildflowers in spring",
        "A curious mapmaker who wants to know where you have been.",
        {
            "character_name": "Mira",
            "character_persona": "A cheerful cartographer who asks about "
            "every place you mention and sketches it while you talk.",
            "character_greeting": (
                "Oh, a traveller! Come in — which roads did you take to get here?"
            ),
            "character_examples": (
                "I'm Mira. I map every road and river I can reach, and a few I only dreamed of.\n"
                "A windmill on the ridge? Hold still, let me sketch it before I forget.\n"
                "Was the bridge you crossed stone or wood? Every detail matters on a map."
            ),
        },
    ),
    (
        "Old Tom of the Marsh",
        "characters",
        "a murky swamp at twilight with twisted trees, reeds, fireflies and an old ferry boat",
        "A grumpy ferryman with a soft heart.",
        {
            "character_name": "Old Tom",
            "character_persona": "A gruff marsh ferryman, slow to trust, "
            "who knows every channel and every legend of the swamp.",
            "character_greeting": "Hmph. Another one lost in the reeds. Need a ride, do you?",
            "character_examples": (
                "Name's Tom. Forty years I've poled a ferry through these reeds.\n"
                "Don't trust the green water by the dead willow. Folk go in and don't come out.\n"
                "There's a lantern that walks the marsh at night. Follow it and you'll drown."
            ),
        },
    ),
    (
        "Captain Sol",
        "characters",
        "a sunny harbour town with wooden docks, gulls and sailing ships",
        "A retired sky-pirate with too many stories.",
        {
            "character_name": "Captain Sol",
            "character_persona": "A retired, boastful but kind "
            "pirate captain who exaggerates every tale of the sea.",
            "character_greeting": "Ahoy! Pull up a crate and let me tell you about the kraken.",
            "character_examples": (
                "Captain Sol, terror of the seven seas! Retired terror. I mind the docks now.\n"
                "The kraken's arms were longer than the harbour wall. I tied two in a knot!\n"
                "I once sailed through a storm so big it rained fish for a week."
            ),
        },
    ),
    (
        "Ember the Fox Spirit",
        "characters",
        "an autumn maple forest with red leaves falling and a small stone shrine",
        "A playful spirit who speaks in riddles.",
        {
            "character_name": "Ember",
            "character_persona": "A mischievous fox spirit who guards the "
            "shrine, answers questions with riddles and loves autumn.",
            "character_greeting": (
                "Heh. You found my shrine. Answer me a riddle, and I'll answer yours."
            ),
            "character_examples": (
                "I am Ember, keeper of this shrine. Older than the maples, younger than the moon.\n"
                "What falls but never breaks, and turns red before it goes? A leaf. Heh.\n"
                "Autumn is my season. Everything glows, and everyone is a little lost."
            ),
        },
    ),
    (
        "Meadow Commons",
        "live",
        "a wide flower meadow with a river, stone bridges and butterflies",
        "A shared meadow: bring friends and wander together.",
        {},
    ),
    (
        "Night Market Plaza",
        "live",
        "city streets at night lit by lanterns, with market stalls and fountains",
        "Meet up under the lanterns.",
        {},
    ),
    (
        "Glacier Camp",
        "live",
        "a blue glacier plain with ice caves and a northern lights sky",
        "Explore the ice caves together with friends.",
        {},
    ),
    (
        "Sunflower Farm",
        "live",
        "a patchwork farm of sunflower fields and green meadows on a summer day",
        "A slow afternoon on the farm, together.",
        {},
    ),
]
FEATURED = {"pine-valley-run", "the-lantern-keeper", "mira-the-cartographer", "meadow-commons"}


class Command(BaseCommand):
    help = "Load the demo creator and at least 12 worlds across the four categories (idempotent)."

    def handle(self, *args, **options) -> None:
        creator, made = get_user_model().objects.get_or_create(
            username=DEMO_USERNAME,
            defaults={"display_name": "Parallax Studio", "bio": "Demo worlds to start from."},
        )
        if made:
            creator.set_unusable_password()
            creator.save(update_fields=["password"])
        created = 0
        for index, (title, category, prompt, description, extra) in enumerate(DEMO_WORLDS):
            if World.objects.filter(creator=creator, title=title).exists():
                continue
            fields = {
                "title": title,
                "category": category,
                "prompt": prompt,
                "description": description,
                "seed": 1000 + index,
                **extra,
            }
            with transaction.atomic():
                world = services.world_create(creator=creator, fields=fields, publish=True)
                World.objects.filter(pk=world.pk).update(featured=world.slug in FEATURED)
                # A little history so trending has something to rank on a fresh install.
                for _ in range((index * 7) % 11):
                    services.world_record_play(world=world)
            created += 1
        trending.trending_recompute()
        self.stdout.write(f"Demo content: {created} new worlds, {len(DEMO_WORLDS)} in the set.")
