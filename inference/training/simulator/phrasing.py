"""World and event specs rendered into many natural-language phrasings (templates x synonyms).

Labels use the indices of `inference.world.spec`; -1 means "not mentioned / no change" (world
prompts default to clear weather at "day" instead).

Every synonym and template list holds back its last entry for evaluation: `split="train"` never
draws it, `split="eval"` draws it half the time, so evaluation meets phrasings training never
saw. The plain phrasings of `spec.EVENT_PHRASES` all sit in the training part of the banks.
"""

from __future__ import annotations

import numpy as np

from inference.world import spec as ws
from inference.world import vocabulary

SPLITS = ("train", "eval")
EVAL_HELD_OUT = 0.5  # how often an eval draw takes a held-out entry

# ---------------------------------------------------------------- world prompts

BIOME_NOUNS = {
    "meadow": [
        "meadow",
        "grassy meadow",
        "green pasture",
        "open grassland",
        "field of wildflowers",
        "rolling grass field",
        "flowery prairie",
        "grassy plain",
        "rolling green hills",
        "grassy hillside",
    ],
    "forest": [
        "forest",
        "dense woodland",
        "pine forest",
        "old oak woods",
        "shady grove",
        "deep forest",
        "woods",
        "evergreen forest",
        "leafy woodland",
    ],
    "desert": [
        "desert",
        "sandy wasteland",
        "sea of dunes",
        "arid badlands",
        "cactus desert",
        "sun-baked sands",
        "dry desert plain",
        "sand dunes",
        "scorching dune sea",
    ],
    "snow": [
        "tundra",
        "frozen wasteland",
        "winter landscape",
        "icy plain",
        "snowfield",
        "arctic wilderness",
        "snow-covered hills",
        "frozen tundra",
        "frozen lake",
        "snowbound valley",
    ],
    "beach": [
        "beach",
        "sandy coastline",
        "seaside shore",
        "rocky coast",
        "tropical beach",
        "ocean shoreline",
        "seashore",
        "sandy bay",
        "stretch of coastline",
    ],
    "city": [
        "city",
        "city streets",
        "downtown district",
        "bustling metropolis",
        "urban neighborhood",
        "big city",
        "town centre",
        "paved city blocks",
        "busy town square",
    ],
    "cave": [
        "cave",
        "underground cavern",
        "rocky grotto",
        "deep mine tunnels",
        "subterranean cavern",
        "rocky cave system",
        "mountain cave",
        "underground tunnels",
        "cavern beneath the mountain",
    ],
    "reef": [
        "underwater reef",
        "coral reef",
        "kelp forest",
        "sea floor",
        "ocean floor",
        "sunken lagoon",
        "underwater garden of coral",
        "seabed",
        "deep blue reef",
    ],
    "volcanic": [
        "volcanic wasteland",
        "lava fields",
        "volcano",
        "smouldering volcanic crater",
        "land of molten rock",
        "volcanic badlands",
        "fiery volcanic plain",
        "scorched volcanic slope",
    ],
    "jungle": [
        "jungle",
        "tropical rainforest",
        "dense jungle",
        "steamy tropical jungle",
        "overgrown wilds",
        "thick vine-covered jungle",
        "tropical wilderness",
        "vine-choked tropics",
    ],
    "swamp": [
        "swamp",
        "murky marsh",
        "boggy wetland",
        "bayou",
        "marshland",
        "mangrove swamp",
        "muddy bog",
        "stagnant wetlands",
    ],
    "ruins": [
        "ruins",
        "ancient ruins",
        "crumbling temple",
        "ruined city",
        "forgotten ruins",
        "abandoned castle remains",
        "overgrown ruins",
        "lost civilization",
        "old graveyard",
        "ruins of an old fortress",
    ],
    "canyon": [
        "canyon",
        "red rock canyon",
        "deep gorge",
        "rocky ravine",
        "desert canyon",
        "towering cliffs",
        "narrow gully",
        "winding canyon valley",
    ],
    "blossom": [
        "blossom garden",
        "cherry blossom park",
        "flower garden",
        "sakura grove",
        "orchard in bloom",
        "japanese garden",
        "garden of blooming trees",
        "spring garden in full bloom",
    ],
    "ice_cave": [
        "ice cave",
        "frozen cavern",
        "glacier cave",
        "crystal ice grotto",
        "icy tunnels",
        "cave of ice",
        "frozen grotto",
        "cavern of blue ice",
    ],
    "autumn": [
        "autumn woods",
        "fall forest",
        "autumn forest",
        "woods in autumn",
        "maple forest",
        "forest of golden leaves",
        "grove of red and orange trees",
        "autumnal woodland",
    ],
}
ADJECTIVES = [
    "peaceful",
    "quiet",
    "vast",
    "mysterious",
    "beautiful",
    "lonely",
    "wild",
    "hidden",
    "sprawling",
    "serene",
    "little",
    "huge",
    "strange",
    "faraway",
]
# Two biomes in one prompt: {x}/{y} are noun phrases with articles, {xb}/{yb} the bare nouns.
# The first named is "biome", the second "biome2".
BIOME_JOINERS = [
    "{x} running down to {y}",
    "{x} next to {y}",
    "{x} bordering {y}",
    "{x} that fades into {y}",
    "{x} half buried in {y}",
    "{x} by {y}",
    "{x} on the edge of {y}",
    "{x} surrounded by {y}",
    "{x} beside {y}",
    "{x} giving way to {y}",
    "where {x} meets {y}",
    "{x} and {y}",
    "{x} with {y} nearby",
    "{x} blending into {y}",
    "{x} in the middle of {y}",
    "{x} leading into {y}",
    "{x} overlooking {y}",
    "{x} close to {y}",
    "half {xb}, half {yb}",
    "a mix of {xb} and {yb}",
    "part {xb}, part {yb}",
    "{x} tucked away in {y}",
]
WEATHER_WORLD = {
    "clear": [
        "under a clear sky",
        "in fine weather",
        "with not a cloud in the sky",
        "with cloudless skies",
        "in fair weather",
        "under blue skies",
        "in warm sunshine",
        "with the sun shining down",
        "in calm, dry weather",
    ],
    "rain": [
        "in the rain",
        "during a rainstorm",
        "under pouring rain",
        "in a light drizzle",
        "while it rains",
        "with rain falling",
        "as rain pours down",
        "in a rain shower",
        "with raindrops falling",
        "under grey rain clouds",
        "in a steady downpour",
    ],
    "snow": [
        "in falling snow",
        "during a snowfall",
        "while it snows",
        "in a blizzard",
        "under drifting snowflakes",
        "under a heavy snowfall",
        "as snowflakes drift down",
        "in a snowstorm",
        "while snow falls softly",
        "with snow coming down",
    ],
    "fog": [
        "in thick fog",
        "shrouded in mist",
        "wrapped in fog",
        "under a blanket of fog",
        "lost in the mist",
        "in a grey haze",
        "in misty weather",
        "with fog everywhere",
        "hidden in mist",
        "in a dense fog",
    ],
    "thunderstorm": [
        "during a thunderstorm",
        "in a raging thunderstorm",
        "with thunder and lightning",
        "under a stormy sky full of lightning",
        "as thunder rumbles overhead",
        "in a lightning storm",
        "as lightning splits the sky",
        "under rumbling thunderclouds",
        "in a violent storm",
        "in an electrical storm",
    ],
    "sandstorm": [
        "in a sandstorm",
        "during a dust storm",
        "with sand whipping through the air",
        "in a howling sandstorm",
        "as dust blows everywhere",
        "in blowing sand",
        "as a dust storm rages",
        "with gritty winds of sand",
        "in a cloud of sand",
        "in swirling sand",
    ],
    "ash": [
        "under falling ash",
        "with volcanic ash drifting down",
        "in a rain of ash",
        "as ash falls from the sky",
        "in a haze of ash and embers",
        "as ash rains down",
        "with soot drifting down",
        "under an ashen sky",
        "with glowing embers floating",
        "as the volcano spits ash",
        "with cinders in the air",
    ],
    "petals": [
        "with petals drifting in the wind",
        "under a shower of cherry petals",
        "with blossom petals falling",
        "as pink petals float by",
        "in a flurry of petals",
        "with pink petals everywhere",
        "as cherry blossoms fall",
        "with sakura petals in the air",
        "with petals twirling down",
        "with flower petals on the breeze",
    ],
    "fireflies": [
        "with fireflies glowing",
        "full of fireflies",
        "lit by fireflies",
        "with fireflies dancing in the air",
        "as fireflies twinkle",
        "with fireflies blinking",
        "where fireflies flicker",
        "with fireflies drifting about",
        "as fireflies glimmer",
        "among swarms of glowing fireflies",
    ],
}
# Weather as an adjective: "a rainy night in the city", "a foggy swamp" (clear: scenes only).
WEATHER_ADJ = {
    "clear": ["clear", "cloudless", "calm", "fair", "sunny", "sunlit", "blue-skied", "crisp"],
    "rain": ["rainy", "wet", "drizzly", "showery", "drenched", "sodden", "rain-soaked"],
    "snow": ["snowy", "wintry", "blizzard-swept", "snow-dusted", "snowing", "snow-flurried"],
    "fog": ["foggy", "misty", "fog-bound", "hazy", "fog-wrapped", "mist-covered", "mist-shrouded"],
    "thunderstorm": [
        "stormy",
        "thundery",
        "lightning-lit",
        "thunderous",
        "storm-tossed",
        "lightning-struck",
        "storm-lashed",
    ],
    "sandstorm": [
        "dusty",
        "sand-blown",
        "dust-choked",
        "dust-blown",
        "gritty",
        "sand-choked",
        "sandstorm-swept",
    ],
    "ash": [
        "ashen",
        "ash-choked",
        "ash-filled",
        "sooty",
        "ash-covered",
        "ash-dusted",
        "cinder-strewn",
    ],
    "petals": [
        "petal-strewn",
        "petal-filled",
        "petal-swept",
        "petal-dusted",
        "blossom-filled",
        "petal-showered",
    ],
    "fireflies": [
        "firefly-lit",
        "firefly-filled",
        "firefly-speckled",
        "firefly-spangled",
        "firefly-haunted",
        "firefly-dotted",
    ],
}
TIME_WORLD = {
    "dawn": [
        "at dawn",
        "at sunrise",
        "at first light",
        "as the sun comes up",
        "in the early morning",
        "as morning breaks",
        "in the pale morning light",
        "just after sunrise",
        "in the first rays of the sun",
        "at daybreak",
    ],
    "day": [
        "during the day",
        "at noon",
        "in bright daylight",
        "at midday",
        "in the afternoon",
        "in full daylight",
        "under the noon sun",
        "on a bright afternoon",
        "in the daytime",
        "in the middle of the day",
    ],
    "dusk": [
        "at dusk",
        "at sunset",
        "in the evening twilight",
        "as the sun goes down",
        "in the golden evening light",
        "as evening falls",
        "at the end of the day",
        "in the fading light",
        "at the close of day",
        "at twilight",
    ],
    "night": [
        "at night",
        "under the stars",
        "at midnight",
        "in the dead of night",
        "on a moonlit night",
        "in the dark of night",
        "after dark",
        "beneath a starry sky",
        "by moonlight",
        "late at night",
    ],
}
# Time as the head of a scene: "a stormy night in the desert".
TIME_NOUNS = {
    "dawn": ["dawn", "sunrise", "early morning", "morning", "sunup", "early dawn", "daybreak"],
    "day": ["day", "afternoon", "noon", "midday", "daytime", "high noon", "lunchtime", "noontime"],
    "dusk": [
        "evening",
        "dusk",
        "sunset",
        "twilight",
        "sundown",
        "nightfall",
        "eventide",
        "late evening",
    ],
    "night": [
        "night",
        "midnight",
        "moonlit night",
        "nighttime",
        "starry night",
        "dark night",
        "late night",
    ],
}
SCENES = [
    "{s} in {w}",
    "{s} spent in {w}",
    "{s} deep in {w}",
    "{s} out in {w}",
    "{s} somewhere in {w}",
]
# The last of each list is held out, as everywhere. Since 2026-12-04 (thirteenth session) "fawn",
# "seagull", "bullfrog" and "tabby cat" sit in the training part (so among the concept names,
# which players need) and "hind", "starling", "spotted toad" and "ginger tom" are held out: no
# weights trained on either, and no name (`vocabulary`) is a held-out word.
CREATURE_NOUNS = {
    "fox": ["fox", "red fox", "little fox", "arctic fox"],
    "deer": ["deer", "stag", "doe", "fawn", "hind"],
    "rabbit": ["rabbit", "bunny", "hare", "little rabbit"],
    "wolf": ["wolf", "grey wolf", "lone wolf", "timber wolf"],
    "bird": ["bird", "crow", "raven", "sparrow", "songbird", "seagull", "starling"],
    "fish": ["fish", "goldfish", "little fish", "tropical fish", "trout"],
    "crab": ["crab", "hermit crab", "red crab", "little crab"],
    "frog": ["frog", "toad", "tree frog", "bullfrog", "spotted toad"],
    "bear": ["bear", "brown bear", "grizzly", "black bear", "polar bear"],
    "cat": ["cat", "kitten", "stray cat", "black cat", "tabby cat", "ginger tom"],
    "butterfly": ["butterfly", "monarch butterfly", "blue butterfly", "colorful butterfly"],
    "ghost": ["ghost", "spirit", "phantom", "spectre", "wraith", "ghostly figure"],
}
# {a}: the creature with its article, {p}: its plural.
CREATURE_WORLD = [
    "with {a} wandering around",
    "where {a} roams",
    "home to {p}",
    "with {a} nearby",
    "with {p} roaming about",
    "where {p} live",
    "inhabited by {p}",
    "with {a} to keep me company",
    "full of {p}",
    "where you might meet {a}",
]
CREATURE_LEAD = [
    "{a} in {w}",
    "{p} roaming {w}",
    "{a} exploring {w}",
    "{p} living in {w}",
    "{a} wandering through {w}",
    "{a} hiding in {w}",
    "{p} scattered across {w}",
]
# Prompts around a place ({w} a biome or a mix of two) ...
# Scene details that name no biome, atmosphere, time or creature: a share of prompts carry one,
# so the heads learn that "lit by lanterns" or "with wooden docks" changes none of those.
DETAILS = [
    "with market stalls",
    "lit by lanterns",
    "with an old windmill",
    "with wooden docks",
    "with a small stone shrine",
    "along a dusty trade road",
    "with a lighthouse",
    "with a cluttered map room",
    "with a hidden treasure",
    "where travellers rest",
    "with a mysterious door",
    "with glowing mushrooms",
    "full of secrets",
    "with an old caravan",
    "where heroes train",
    "with a race track",
    "with a crumbling tower",
    "with hanging lanterns",
    "with a bustling crowd",
    "with fountains",
    "with banners and flags",
    "with a giant old tree",
    "with strange symbols carved in stone",
    "with a wizard's tower",
    "with hot springs",
    "with an old mill",
    "for a long adventure",
    "for a treasure hunt",
    "where a quest begins",
    "with a bell tower",
    "with cozy cabins",
    "with stepping stones",
    "with sailing ships",
    "with a winding staircase",
    "with colourful tents",
    "with a forgotten shrine",
    "where music drifts",
    "with a quiet tea house",
    "with a broken cart",
    "with a dragon's hoard",
]
DETAIL_SHARE = 0.4

PLACE_TEMPLATES = [
    "{w}",
    "take me to {w}",
    "I want to explore {w}",
    "a world set in {w}",
    "let's go to {w}",
    "drop me into {w}",
    "start me off in {w}",
    "I'd like to wander through {w}",
    "let me play in {w}",
    "somewhere in {w}",
    "a level set in {w}",
    "show me {w}",
    "generate {w}",
    "create {w}",
    "make {w}",
    "imagine {w}",
    "a cozy game in {w}",
    "I dream of {w}",
    "transport me to {w}",
]
# ... and around any scene ("a rainy night in ...", "a fox in ...").
SCENE_TEMPLATES = [
    "{w}",
    "show me {w}",
    "generate {w}",
    "create {w}",
    "imagine {w}",
    "picture {w}",
    "I want {w}",
    "give me {w}",
    "render {w}",
    "dream up {w}",
]

# ---------------------------------------------------------------- events

WEATHER_EVENTS = {
    "clear": [
        "the sky clears",
        "the rain stops",
        "the sun comes out",
        "the weather clears up",
        "the storm passes",
        "the fog lifts",
        "the clouds part",
        "clear the skies",
        "the air turns calm and clear",
    ],
    "rain": [
        "it starts to rain",
        "rain begins to fall",
        "a downpour begins",
        "heavy rain rolls in",
        "the sky opens up and it pours",
        "it begins drizzling",
        "make it rain",
        "a rainstorm starts",
    ],
    "snow": [
        "it starts to snow",
        "snowflakes begin to fall",
        "a blizzard sweeps in",
        "snow starts falling",
        "it begins snowing heavily",
        "make it snow",
        "a snowstorm hits",
    ],
    "fog": [
        "fog rolls in",
        "a thick mist descends",
        "mist covers everything",
        "a dense fog settles",
        "it gets foggy",
        "make it foggy",
        "the air grows hazy with fog",
    ],
    "thunderstorm": [
        "a thunderstorm rolls in",
        "thunder and lightning fill the sky",
        "lightning flashes and thunder rumbles",
        "a storm breaks overhead",
        "summon a thunderstorm",
        "thunder booms overhead",
        "a lightning storm begins",
    ],
    "sandstorm": [
        "a sandstorm sweeps in",
        "a dust storm blows in",
        "sand whips through the air",
        "the wind kicks up a sandstorm",
        "a wall of sand rolls over us",
        "start a sandstorm",
        "dust swirls everywhere",
    ],
    "ash": [
        "ash falls from the sky",
        "volcanic ash falls",
        "ash begins to rain down",
        "cinders drift down from above",
        "the sky fills with ash",
        "make ash fall",
        "embers and ash float down",
    ],
    "petals": [
        "petals drift on the wind",
        "cherry petals drift down",
        "blossom petals start falling",
        "a shower of petals begins",
        "pink petals float through the air",
        "make petals fall",
        "the wind carries flower petals",
    ],
    "fireflies": [
        "fireflies light up the air",
        "fireflies glow all around",
        "fireflies come out",
        "the air fills with fireflies",
        "tiny firefly lights dance around",
        "summon fireflies",
        "glowing fireflies appear",
    ],
}
TIME_EVENTS = {
    "dawn": [
        "dawn breaks",
        "the sun rises",
        "the sun comes up",
        "morning comes",
        "first light creeps over the horizon",
        "day breaks",
        "make it dawn",
        "sunrise begins",
    ],
    "day": [
        "the sun rises high",
        "it becomes day",
        "it's the middle of the day",
        "noon arrives",
        "the sun is high in the sky",
        "daylight returns",
        "make it daytime",
        "broad daylight returns",
    ],
    "dusk": [
        "the sun begins to set",
        "evening comes",
        "dusk settles in",
        "twilight falls",
        "the sky turns orange as the sun sets",
        "the sun goes down",
        "make it sunset",
        "the light fades into evening",
    ],
    "night": [
        "night falls",
        "it gets dark",
        "darkness falls",
        "the stars come out",
        "it becomes night",
        "the moon rises",
        "make it night",
        "midnight comes",
    ],
}
CREATURE_EVENTS = [
    "{a} appears",
    "you see {a} nearby",
    "a wild {c} wanders in",
    "suddenly {a} shows up",
    "{a} comes out of hiding",
    "spawn {a}",
    "summon {a}",
    "I spot {a}",
    "bring in {a}",
    "add {a}",
    "{a} comes by",
    "some {p} show up",
    "{a} turns up out of nowhere",
]
# How each creature moves, after "{a} ": "a fox runs past", "a crab scuttles past".
CREATURE_MOVES = {
    "fox": ["runs past", "trots by", "darts across the ground", "sniffs around"],
    "deer": ["runs past", "grazes nearby", "leaps past", "wanders by", "stops to watch you"],
    "rabbit": ["runs past", "hops by", "nibbles the grass nearby", "bounds across"],
    "wolf": ["runs past", "prowls past", "howls in the distance", "stalks nearby"],
    "bird": ["flies overhead", "lands nearby", "swoops down", "sings from above"],
    "fish": ["swims by", "darts through the water", "swims in circles", "glides past"],
    "crab": ["scuttles past", "crawls out of the sand", "walks sideways by", "snaps its claws"],
    "frog": ["hops by", "croaks nearby", "leaps past", "jumps out"],
    "bear": ["runs past", "lumbers past", "wanders out", "growls nearby"],
    "cat": ["runs past", "wanders by", "purrs nearby", "slinks past"],
    "butterfly": [
        "flutters by",
        "flits past",
        "dances through the air",
        "lands nearby",
        "rests on a leaf",
    ],
    "ghost": ["floats past", "haunts the place", "drifts by", "glides through the wall"],
}
THING_EVENTS = {
    "campfire": [
        "build a campfire",
        "light a fire",
        "start a campfire",
        "a campfire crackles to life",
        "make a bonfire",
        "we sit around a campfire",
        "set up a fire pit",
    ],
    "house": [
        "a house appears",
        "build a house",
        "a cottage appears",
        "a little cabin stands here",
        "put up a hut",
        "construct a home",
        "a small house is built here",
    ],
    "bridge": [
        "build a bridge",
        "a stone bridge spans the water",
        "a wooden bridge appears",
        "lay a bridge across",
        "put a bridge here",
        "a bridge stretches across the stream",
    ],
    "path": [
        "a path appears",
        "lay a path",
        "build a road",
        "a cobblestone path winds ahead",
        "pave a trail",
        "a dirt track opens up",
    ],
    "trees": [
        "trees grow here",
        "plant some trees",
        "a grove of trees sprouts",
        "trees spring up",
        "grow a few trees",
        "saplings shoot up into trees",
    ],
    "lava_pool": [
        "a pool of lava bubbles up",
        "a lava pool bubbles up",
        "molten lava pours out",
        "lava wells up from the ground",
        "make a lava pit",
        "a pit of magma opens",
    ],
    "ruins": [
        "ancient ruins rise",
        "crumbling ruins appear",
        "old ruins emerge from the ground",
        "build some ruins",
        "broken pillars rise from the earth",
        "the remains of an old temple appear",
    ],
    "statue": [
        "a statue appears",
        "a statue rises",
        "build a statue",
        "a stone statue stands here",
        "carve a statue",
        "a marble monument appears",
    ],
    "pond": [
        "a pond appears",
        "water bubbles up from the ground",
        "a small lake forms nearby",
        "dig a pond",
        "make a pond",
        "a spring of water emerges",
    ],
    "flowers": [
        "flowers bloom around me",
        "wildflowers sprout",
        "plant some flowers",
        "colorful flowers grow nearby",
        "the ground blossoms",
        "a patch of flowers appears",
    ],
    "rocks": [
        "rocks tumble down",
        "boulders tumble down",
        "rocks rise from the ground",
        "a pile of stones appears",
        "put some rocks here",
        "a rockslide blocks the way",
    ],
    "tent": [
        "pitch a tent",
        "put up a tent",
        "a tent appears",
        "set up camp with a tent",
        "build a tent",
        "a canvas tent stands here",
    ],
    "well": [
        "a well appears",
        "dig a well",
        "build a well",
        "an old stone well appears",
        "put a well here",
        "a water well stands here",
    ],
    "fence": [
        "build a fence",
        "a fence appears",
        "put up a fence",
        "a wooden fence runs along here",
        "fence off this area",
        "a picket fence goes up",
    ],
}
# Openers: before statements ("out of nowhere a fox appears"), before commands ("please ...").
EVENT_PREFIXES = [
    "all of a sudden ",
    "out of nowhere ",
    "now ",
    "just then ",
    "after a while ",
    "then ",
    "look, ",
]
COMMAND_PREFIXES = [
    "please ",
    "can you ",
    "now ",
    "go ahead and ",
    "let's ",
    "quick, ",
    "could you ",
]
COMMAND_VERBS = frozenset(
    "add bring build carve clear construct dig fence grow lay light make pave pitch plant put "
    "set spawn start summon".split()
)
# Between two events; before a command ("... and build a fence") only the COMMAND_JOINERS.
JOINERS = [
    " and ",
    ", then ",
    ", and ",
    " while ",
    " as ",
    " and then ",
    ", meanwhile ",
    "; ",
    " and suddenly ",
    ". then ",
    ", after that ",
]
COMMAND_JOINERS = [" and ", ", then ", " and then ", ", and ", ". then ", "; ", ", after that "]
# Text that names nothing the model can do: the heads answer "none" ("unsupported").
NON_EVENTS = [
    "hello there",
    "what is this place",
    "who are you",
    "lol",
    "I like turtles",
    "how do I win",
    "tell me a story",
    "asdf",
    "ok",
    "can you hear me",
    "nothing happens",
    "I am bored",
    "what time is it",
    "let's go",
    "thanks",
    "where am I",
    "play some music",
    "zzz",
    "help",
    "a sword hangs on the wall",
    "the crowd goes wild",
    "a spaceship lands",
    "I win the game",
    "turn into a dragon",
    "give me a sword",
    "the music gets louder",
    "open the door",
    "jump",
    "a dragon lands nearby",
    "a car drives by",
    "a train pulls into the station",
    "the phone rings",
    "I level up",
    "save the game",
    "teleport me home",
    "make me invisible",
    "a robot walks in",
    "a wizard casts a spell",
    "an army marches in",
    "the king gives a speech",
    "dance with me",
    "eat an apple",
    "pick up the key",
    "a treasure chest appears",
    "start a new quest",
    "I'm hungry",
    "roll the dice",
    "what can I do here",
    "the castle explodes",
]

_EVENT_KINDS = ("weather", "time", "creature", "thing")
_KIND_SIZES = {
    "weather": len(ws.WEATHERS),
    "time": len(ws.TIMES),
    "creature": len(ws.CREATURES),
    "thing": len(ws.THINGS),
}
_IRREGULAR_PLURALS = {
    "wolf": "wolves",
    "deer": "deer",
    "fish": "fish",
    "goldfish": "goldfish",
    "trout": "trout",
}


def _check_banks() -> None:
    """The banks cover the spec exactly, every list holds something back, and every plain
    phrasing of the spec is in a training part."""
    for bank, names in (
        (BIOME_NOUNS, ws.BIOMES),
        (WEATHER_WORLD, ws.WEATHERS),
        (WEATHER_ADJ, ws.WEATHERS),
        (WEATHER_EVENTS, ws.WEATHERS),
        (TIME_WORLD, ws.TIMES),
        (TIME_NOUNS, ws.TIMES),
        (TIME_EVENTS, ws.TIMES),
        (CREATURE_NOUNS, ws.CREATURES),
        (CREATURE_MOVES, ws.CREATURES),
        (THING_EVENTS, ws.THINGS),
    ):
        if list(bank) != list(names):
            raise ValueError(f"phrasing bank keys {list(bank)} != spec {list(names)}")
    lists = [
        *BIOME_NOUNS.values(),
        *WEATHER_WORLD.values(),
        *WEATHER_ADJ.values(),
        *WEATHER_EVENTS.values(),
        *TIME_WORLD.values(),
        *TIME_NOUNS.values(),
        *TIME_EVENTS.values(),
        *CREATURE_NOUNS.values(),
        *CREATURE_MOVES.values(),
        *THING_EVENTS.values(),
        ADJECTIVES,
        BIOME_JOINERS,
        SCENES,
        CREATURE_WORLD,
        CREATURE_LEAD,
        PLACE_TEMPLATES,
        SCENE_TEMPLATES,
        CREATURE_EVENTS,
        EVENT_PREFIXES,
        COMMAND_PREFIXES,
        JOINERS,
        COMMAND_JOINERS,
        NON_EVENTS,
    ]
    if any(len(options) < 2 for options in lists):
        raise ValueError("every phrasing list needs a training part and a held-out entry")
    for c, nouns in CREATURE_NOUNS.items():
        if nouns[0] != c:
            raise ValueError(f"the first noun of {c!r} must be its spec name")
    plain = {"weather": WEATHER_EVENTS, "time": TIME_EVENTS, "thing": THING_EVENTS}
    for kind, bank in plain.items():
        for name, text in ws.EVENT_PHRASES[kind].items():
            if text not in train_part(bank[name]):
                raise ValueError(f"{text!r} ({kind} {name}) is not a training phrasing")
    if "{a} appears" not in train_part(CREATURE_EVENTS):
        raise ValueError("'a {creature} appears' is not a training phrasing")


def concept_names() -> list[tuple[str, int, str]]:
    """(kind, index, name) for the training part of every biome noun, atmosphere and time of
    day phrasing, of every creature noun and of every thing's event phrasings, and ("other", 0,
    ...) for scene details, plus `vocabulary`'s words (("unknown", its index, ...) for what the
    model does not have): the names a text's phrases are matched to (a phrase nearest to a
    creature, a thing, a detail or an unknown names no atmosphere; a creature the heads read
    needs a phrase nearest to one of its names).
    The event banks' phrasings name the same atmospheres and times ("a downpour begins", "day
    breaks"): a prompt's "in a steady downpour" or "at daybreak" finds its concept through them
    where the world phrasings' words miss it."""
    out = []
    for kind, banks, keys in (
        ("biome", (BIOME_NOUNS,), ws.BIOMES),
        ("weather", (WEATHER_WORLD, WEATHER_ADJ, WEATHER_EVENTS), ws.WEATHERS),
        ("time", (TIME_WORLD, TIME_NOUNS, TIME_EVENTS), ws.TIMES),
        ("creature", (CREATURE_NOUNS,), ws.CREATURES),
        ("thing", (THING_EVENTS,), ws.THINGS),
    ):
        for bank in banks:
            for key, options in bank.items():
                out += [(kind, keys.index(key), name) for name in train_part(options)]
    out += [("other", 0, name) for name in train_part(DETAILS)]
    # the words players use beyond the banks, and those for what the model does not have
    for kind, keys in (("biome", ws.BIOMES), ("creature", ws.CREATURES), ("thing", ws.THINGS)):
        for key, names in vocabulary.SYNONYMS[kind].items():
            out += [(kind, keys.index(key), name) for name in names]
    out += [("unknown", i, name) for i, name in enumerate(vocabulary.UNKNOWN)]
    return out


def train_part(options: list) -> list:
    """The entries `split="train"` draws from."""
    return options[:-1]


def held_out(options: list) -> list:
    """The entries only `split="eval"` draws."""
    return options[-1:]


def _pick(rng: np.random.Generator, options: list, split: str = "train"):
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    pool = held_out(options) if split == "eval" and rng.random() < EVAL_HELD_OUT else None
    pool = pool or train_part(options)
    return pool[rng.integers(len(pool))]


def _head_word(noun: str) -> str:
    """The word that decides number: "sea of dunes" -> "sea", "autumn woods" -> "woods"."""
    for sep in (" of ", " in ", " beneath "):
        noun = noun.split(sep)[0]
    return noun.split()[-1]


def _is_plural(noun: str) -> bool:
    head = _head_word(noun)
    return head.endswith("s") and not head.endswith(("ss", "is", "us"))


def _with_article(rng: np.random.Generator, words: str, plural: bool) -> str:
    if plural:
        return words if rng.random() < 0.5 else f"the {words}"
    if rng.random() < 0.2:
        return f"the {words}"
    return f"{'an' if words[0] in 'aeiou' else 'a'} {words}"


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _plural(noun: str) -> str:
    *rest, last = noun.split()
    if last in _IRREGULAR_PLURALS:
        last = _IRREGULAR_PLURALS[last]
    elif last.endswith("y") and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    elif last.endswith(("s", "x", "sh", "ch")):
        last += "es"
    else:
        last += "s"
    return " ".join([*rest, last])


def _biome_phrase(rng, biome: int, split: str, adjective: str | None = None) -> tuple[str, str]:
    """(noun phrase with article, bare noun) of one biome."""
    noun = _pick(rng, BIOME_NOUNS[ws.BIOMES[biome]], split)
    if adjective is None:
        adjective = _pick(rng, ADJECTIVES, split) if rng.random() < 0.4 else ""
    words = f"{adjective} {noun}".strip()
    return _with_article(rng, words, _is_plural(noun)), noun


def _creature_forms(rng, creature: int, split: str) -> dict:
    noun = _pick(rng, CREATURE_NOUNS[ws.CREATURES[creature]], split)
    return {"c": noun, "a": _a(noun), "p": _plural(noun)}


def world_prompt(rng: np.random.Generator, split: str = "train") -> tuple[str, dict]:
    """A random world description and its labels: biome, biome2 (-1 unless two are mixed),
    weather (0 = clear when not mentioned), time (index of "day" when not mentioned) and
    creature (-1 when none is mentioned)."""
    n_biomes = len(ws.BIOMES)
    biome = int(rng.integers(n_biomes))
    biome2 = -1
    if rng.random() < 0.3:
        biome2 = int((biome + rng.integers(1, n_biomes)) % n_biomes)
    say_weather, say_time = rng.random() < 0.6, rng.random() < 0.6
    weather = int(rng.integers(len(ws.WEATHERS))) if say_weather else 0
    time = int(rng.integers(len(ws.TIMES))) if say_time else ws.TIMES.index("day")
    creature = int(rng.integers(len(ws.CREATURES))) if rng.random() < 0.35 else -1
    labels = {
        "biome": biome,
        "biome2": biome2,
        "weather": weather,
        "time": time,
        "creature": creature,
    }
    w_name, t_name = ws.WEATHERS[weather], ws.TIMES[time]

    # the place: one biome (maybe weather as its adjective: "a foggy swamp") or a mix of two
    adjective = None
    if say_weather and w_name != "clear" and biome2 < 0 and rng.random() < 0.2:
        adjective, say_weather = _pick(rng, WEATHER_ADJ[w_name], split), False
    x, xb = _biome_phrase(rng, biome, split, adjective)
    if biome2 >= 0:
        y, yb = _biome_phrase(rng, biome2, split, "")
        place = _pick(rng, BIOME_JOINERS, split).format(x=x, y=y, xb=xb, yb=yb)
    else:
        place = x

    # the body: the place itself, a scene in it, or a creature in it
    forms = _creature_forms(rng, creature, split) if creature >= 0 else None
    templates = SCENE_TEMPLATES
    if forms and rng.random() < 0.3:
        body = _pick(rng, CREATURE_LEAD, split).format(w=place, **forms)
        forms = None
    elif say_time and rng.random() < 0.3:
        scene = _pick(rng, TIME_NOUNS[t_name], split)
        if say_weather and rng.random() < 0.6:
            scene, say_weather = f"{_pick(rng, WEATHER_ADJ[w_name], split)} {scene}", False
        body = _pick(rng, SCENES, split).format(s=_a(scene), w=place)
        say_time = False
    else:
        body, templates = place, PLACE_TEMPLATES
    text = _pick(rng, templates, split).format(w=body)

    # what is left to say, in any order, one of weather/time maybe up front
    extras = []
    if say_weather:
        extras.append(_pick(rng, WEATHER_WORLD[w_name], split))
    if say_time:
        extras.append(_pick(rng, TIME_WORLD[t_name], split))
    lead = extras.pop(int(rng.integers(len(extras)))) if extras and rng.random() < 0.2 else None
    if forms:
        extras.append(_pick(rng, CREATURE_WORLD, split).format(**forms))
    if rng.random() < DETAIL_SHARE:
        extras.append(_pick(rng, DETAILS, split))
    rng.shuffle(extras)
    for extra in extras:
        text += (", " if rng.random() < 0.3 else " ") + extra
    if lead:
        text = f"{lead}, {text}"
    return text, labels


def _event_phrase(rng: np.random.Generator, kind: str, value: int, split: str) -> str:
    if kind == "weather":
        return _pick(rng, WEATHER_EVENTS[ws.WEATHERS[value]], split)
    if kind == "time":
        return _pick(rng, TIME_EVENTS[ws.TIMES[value]], split)
    if kind == "creature":
        name = ws.CREATURES[value]
        forms = _creature_forms(rng, value, split)
        if rng.random() < 0.35:
            return f"{forms['a']} {_pick(rng, CREATURE_MOVES[name], split)}"
        return _pick(rng, CREATURE_EVENTS, split).format(**forms)
    if kind == "thing":
        return _pick(rng, THING_EVENTS[ws.THINGS[value]], split)
    raise ValueError(f"unknown event kind {kind!r}")


def _is_command(text: str) -> bool:
    return text.split()[0] in COMMAND_VERBS


def _with_prefix(rng: np.random.Generator, text: str, split: str) -> str:
    if rng.random() >= 0.2:
        return text
    prefixes = COMMAND_PREFIXES if _is_command(text) else EVENT_PREFIXES
    return _pick(rng, prefixes, split) + text


def event_text(rng: np.random.Generator, split: str = "train") -> tuple[str, dict]:
    """A random event phrase (none, one, or two events of different kinds) and its labels:
    weather, time, creature and thing, each an index or -1."""
    labels = dict.fromkeys(_EVENT_KINDS, -1)
    if rng.random() < 0.1:
        return _pick(rng, NON_EVENTS, split), labels
    n = 1 if rng.random() < 0.7 else 2
    texts = []
    for k in rng.choice(len(_EVENT_KINDS), size=n, replace=False):
        kind = _EVENT_KINDS[int(k)]
        labels[kind] = int(rng.integers(_KIND_SIZES[kind]))
        texts.append(_event_phrase(rng, kind, labels[kind], split))
    if n == 1:
        return _with_prefix(rng, texts[0], split), labels
    joiners = COMMAND_JOINERS if _is_command(texts[1]) else JOINERS
    return _pick(rng, joiners, split).join(texts), labels


def event_for(rng: np.random.Generator, kind: str, value: int, split: str = "eval") -> str:
    """One phrasing of one given event (kind: weather, time, creature or thing)."""
    return _event_phrase(rng, kind, int(value), split)


_check_banks()
