"""Words players use beyond the phrasing banks: more names for what the model has, and names
for what it does not have.

The banks (`phrasing`) write training and evaluation text from a few nouns per concept; a
player says "an owl", "a moose", "a fen", "a cabin". These words only join the concept names a
text's phrases are matched to (`training.simulator.phrasing.concept_names`); no text is drawn
from them, so the
heads never train on them and the evaluation's held-out phrasings stay the test of wording the
model never saw. `UNKNOWN` names what the model has no concept for ("a horse", "a windmill"):
a phrase nearest one of them names nothing the model has, so the text is `unsupported` ("the
world model has no horse") rather than the nearest creature or thing the heads would guess.
"""

from __future__ import annotations

# More names of what the model has, by kind and concept (the keys of spec's lists).
SYNONYMS: dict[str, dict[str, tuple[str, ...]]] = {
    "biome": {
        "meadow": (
            "prairie",
            "grassland",
            "pasture",
            "open field",
            "savanna",
            "heath",
            "village green",
        ),
        "forest": ("enchanted forest", "redwood forest", "pinewood", "birch wood"),
        "desert": ("dunes", "sahara", "arid desert", "oasis in the desert", "salt flats"),
        "snow": (
            "alpine slopes",
            "ski slopes",
            "winter wonderland",
            "snowy tundra plains",
            "snowy mountains",
            "snow-capped peaks",
            "mountain village in the snow",
        ),
        "beach": ("seaside", "coast", "shoreline", "cove", "sandy shore", "palm beach"),
        "city": (
            "downtown",
            "metropolis",
            "alleyways",
            "neon city",
            "city lights",
            "market square",
        ),
        "cave": ("caves", "underground", "catacombs", "abandoned mine", "stalactites"),
        "reef": ("underwater", "undersea", "ocean depths", "bottom of the sea", "coral"),
        "volcanic": (
            "lava flows",
            "caldera",
            "obsidian plain",
            "smoking volcano",
            "hell",
            "inferno",
        ),
        "jungle": ("rainforest", "amazon", "tropical forest", "rain forest", "jungle canopy"),
        "swamp": ("marsh", "bog", "fen", "everglades", "mire", "mangroves"),
        "ruins": (
            "ruined temple",
            "ancient temple",
            "cemetery",
            "necropolis",
            "ruined castle",
            "ruined city",
            "lost city",
            "abandoned buildings",
        ),
        "canyon": ("gorge", "ravine", "mesa", "chasm", "butte", "gulch", "red cliffs"),
        "blossom": ("cherry blossoms", "sakura", "rose garden", "botanical garden", "tulip garden"),
        "ice_cave": ("ice cavern", "ice grotto", "frozen cave", "glacier tunnel", "icicle cave"),
        "autumn": ("fall foliage", "autumn leaves", "maple grove", "golden woods", "autumn park"),
    },
    "creature": {
        "fox": ("fox cub", "vixen", "fennec fox", "foxes", "silver fox"),
        "deer": ("elk", "moose", "reindeer", "caribou", "roe deer", "buck", "antlers"),
        "rabbit": ("bunnies", "jackrabbit", "cottontail", "snow hare", "rabbits"),
        "wolf": ("wolves", "wolf pup", "pack of wolves", "coyote", "dire wolf"),
        "bird": (
            "birds",
            "owl",
            "eagle",
            "hawk",
            "falcon",
            "pigeon",
            "dove",
            "duck",
            "goose",
            "swan",
            "parrot",
            "robin",
            "finch",
            "magpie",
            "heron",
            "pelican",
            "hummingbird",
            "woodpecker",
            "vulture",
            "flamingo",
            "gulls",
        ),
        "fish": (
            "fishes",
            "salmon",
            "carp",
            "koi",
            "minnow",
            "tuna",
            "clownfish",
            "school of fish",
        ),
        "crab": ("crabs", "fiddler crab", "sand crab", "king crab"),
        "frog": ("frogs", "toads", "tadpole", "pond frog"),
        "bear": ("bears", "bear cub", "grizzly bear", "cave bear"),
        "cat": ("kitty", "kittens", "tabby", "tomcat", "house cat", "alley cat", "cats"),
        "butterfly": ("butterflies", "moth", "monarch", "swallowtail"),
        "ghost": ("ghosts", "specter", "apparition", "poltergeist", "spook", "banshee", "spirits"),
    },
    "thing": {
        "campfire": ("bonfire", "cooking fire", "camp fire"),
        "house": ("cabin", "cottage", "hut", "shack", "farmhouse", "lodge", "log cabin"),
        "bridge": ("footbridge", "rope bridge", "wooden bridge", "stone arch bridge"),
        "path": ("trail", "footpath", "dirt road", "walkway", "pathway"),
        "trees": ("oak trees", "pine trees", "a grove"),
        "lava_pool": (),  # "lava pool", "lava pit" made "a desert" one at 0.4
        "ruins": ("rubble", "crumbling walls", "ruined walls"),
        "statue": ("sculpture", "idol", "obelisk"),
        "pond": ("water hole", "fishpond", "small lake"),
        "flowers": ("flower bed", "tulips", "roses", "daisies", "sunflowers", "poppies"),
        "rocks": ("boulders", "stones", "boulder", "rock pile"),
        "tent": ("teepee", "yurt", "camping tent"),
        "well": ("wishing well", "stone well"),
        "fence": ("railing", "palisade", "wooden fence"),
    },
}

# What the model has no concept for, creatures and things alike (places, atmospheres and times
# it lacks are left to the heads: "a dragon" is a creature the model cannot draw, "a cloudy
# sky" is near enough to fog or rain).
UNKNOWN: tuple[str, ...] = (
    # animals
    "dog", "puppy", "horse", "pony", "donkey", "cow", "bull", "pig", "sheep", "goat",
    "chicken", "rooster", "snake", "lizard", "turtle", "crocodile", "squirrel", "mouse", "rat",
    "hedgehog", "raccoon", "otter", "beaver", "monkey", "gorilla", "elephant", "giraffe",
    "zebra", "lion", "tiger", "leopard", "camel", "kangaroo", "panda", "koala", "whale",
    "dolphin", "shark", "octopus", "jellyfish", "lobster", "spider", "scorpion", "bee", "ant",
    "beetle", "dragonfly", "bat", "penguin",
    # creatures of legend and people
    "dragon", "unicorn", "dinosaur", "griffin", "zombie", "skeleton", "vampire", "goblin",
    "troll", "fairy", "mermaid", "person", "knight", "wizard", "pirate", "soldier", "robot",
    "alien",
    # things
    "tower", "windmill", "lighthouse", "church", "skyscraper", "palace", "car",
    "truck", "tractor", "bus", "train", "boat", "ship", "spaceship", "rocket", "airplane",
    "helicopter", "hot air balloon",
    "bicycle", "cart", "wagon", "lamp post", "bench", "table", "chair", "door", "gate",
    "treasure chest", "barrel", "sword", "cannon", "flag", "market stall", "fountain",
    "waterfall", "river", "portal", "pyramid", "clock",
    # events and places
    "earthquake", "outer space",
)  # fmt: skip
