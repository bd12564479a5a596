"""The contract shared by the reference simulator and the world model.

Vocabulary sizes, geometry and kinematics live here so both sides agree without the serving
path importing the simulator (an import-linter contract forbids that). Pure Python/numpy, no
torch, no Django.
"""

from __future__ import annotations

import numpy as np

MODEL_VERSION = 2

BIOMES = (
    "meadow",
    "forest",
    "desert",
    "snow",
    "beach",
    "city",  # city streets
    "cave",
    "reef",  # underwater reef
    "volcanic",
    "jungle",
    "swamp",
    "ruins",
    "canyon",
    "blossom",  # blossom garden
    "ice_cave",
    "autumn",
)
# Each biome has four tile kinds; a token is biome * len(TILE_KINDS) + kind.
TILE_KINDS = ("ground", "ground_var", "obstacle", "water")
BIOME_TOKENS = len(BIOMES) * len(TILE_KINDS)
# Things events place: tokens of their own after the biome tokens, the same in every biome.
THINGS = (
    "campfire",
    "house",
    "bridge",
    "path",
    "trees",
    "lava_pool",
    "ruins",
    "statue",
    "pond",
    "flowers",
    "rocks",
    "tent",
    "well",
    "fence",
)
WALKABLE_THINGS = frozenset({"bridge", "path", "flowers"})
NUM_TOKENS = BIOME_TOKENS + len(THINGS)
UNKNOWN_TOKEN = NUM_TOKENS  # canvas cell not generated yet
MASK_TOKEN = NUM_TOKENS + 1  # MaskGIT mask
SOLID_KINDS = frozenset({2, 3})  # obstacles and water block movement

# What lies on a tile over its token, changing as the world evolves by itself (the learned
# dynamics, `world/dynamics.py`): a burning tile, the ash it leaves (walkable, until the ground
# grows back), a rain puddle, settled snow. The token under it is kept: what did not burn or
# melt comes back as it was.
COVERS = ("none", "fire", "ash", "puddle", "snow")
# Tokens the renderer draws: the canvas tokens, UNKNOWN and MASK, then one per cover (a
# covered tile is drawn as its cover, `render_tokens`).
FIRST_COVER_TOKEN = NUM_TOKENS + 2  # the render token of COVERS[1]
RENDER_TOKENS = FIRST_COVER_TOKEN + len(COVERS) - 1
TICK_FRAMES = 6  # world frames per dynamics tick: 4 ticks a second at 24 fps
# Processes an event text can start (`world/dynamics.py` carries them on).
PROCESSES = ("fire",)

# Atmospheres (the "weather" of a world): lighting, haze and a particle layer each.
WEATHERS = (
    "clear",
    "rain",
    "snow",
    "fog",
    "thunderstorm",
    "sandstorm",
    "ash",
    "petals",
    "fireflies",
)
# Time of day is continuous: a minute of the day (0..1439) that advances with the world clock.
# These named moments are what text can ask for, and what the light is called around them.
TIMES = ("dawn", "day", "dusk", "night")
TIME_MINUTES = (6 * 60 + 30, 12 * 60, 18 * 60 + 30, 23 * 60)  # dawn and dusk at their lights' peaks
DAY_MINUTES = 24 * 60
FRAMES_PER_MINUTE = 10  # a whole day in 10 minutes of play at 24 fps
WORLD_FPS = 24  # world frames a second of play (the served rate)
CREATURES = (
    "fox",
    "deer",
    "rabbit",
    "wolf",
    "bird",
    "fish",
    "crab",
    "frog",
    "bear",
    "cat",
    "butterfly",
    "ghost",
)
# The creatures and things the model draws itself, as words: the open-vocabulary reader reads
# them beside its concepts, so their words place no second, open-vocabulary one.
DRAWN_NAMES = (*CREATURES, *(t.replace("_", " ") for t in THINGS))

# How people say the concepts whose names here are identifiers (the world page, the API).
SHOWN = {
    "biome": {
        "snow": "snowfield",
        "city": "city streets",
        "reef": "underwater reef",
        "volcanic": "volcanic land",
        "blossom": "blossom garden",
        "ice_cave": "ice cave",
        "autumn": "autumn woods",
    },
    "weather": {
        "snow": "falling snow",
        "ash": "falling ash",
        "petals": "drifting petals",
    },
}


def shown(kind: str, name: str) -> str:
    """A concept's name as people say it ("ice_cave" -> "ice cave")."""
    return SHOWN.get(kind, {}).get(name, name)


# Avatar colours by seat slot (slot % 8).
AVATAR_RGB = (
    (220, 40, 40),
    (40, 80, 230),
    (240, 210, 30),
    (220, 50, 220),
    (30, 200, 210),
    (255, 140, 20),
    (250, 250, 250),
    (120, 60, 200),
)
AVATAR_COLORS = len(AVATAR_RGB)
# Sprite kinds: avatars first, then creatures.
SPRITE_KINDS = AVATAR_COLORS + len(CREATURES)
MAX_SPRITES = 10  # per frame; the rest are not drawn

# What a player can do: the keys held (anything else is ignored) and text up to this long.
KEYS = frozenset({"w", "a", "s", "d", "space"})
MAX_PROMPT_CHARS = 500

TILE = 8  # pixels per tile
CHUNK = 8  # tiles per chunk side
FRAME = 128  # frame side in pixels
WINDOW = FRAME // TILE + 3  # tiles decoded per frame: visible 17 plus a context margin
SPRITE = 8
PLAYER_SPEED = 2  # pixels per frame along each held axis
CREATURE_SPEED = 1
CREATURE_TURN_EVERY = 24  # frames between creature direction changes
BOX_HALF = 3  # half-size of the collision box of avatars and creatures
SPAWN_ZONE = (-2, 1)  # tile range on both axes kept walkable around the origin

OVERLAY = 32  # particle texture side (tiled over the frame)
OVERLAY_SCROLL = {
    "clear": (0, 0),
    "rain": (1, 3),
    "snow": (1, 1),
    "fog": (1, 0),
    "thunderstorm": (2, 5),
    "sandstorm": (4, 1),
    "ash": (0, 1),
    "petals": (2, 1),
    "fireflies": (1, 0),
}

KEY_DIRS = {"w": (0, -1), "s": (0, 1), "a": (-1, 0), "d": (1, 0)}
DIRECTIONS = ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))

_MASK64 = (1 << 64) - 1


def avatar_hex(slot: int) -> str:
    """The CSS colour of a seat's avatar (what the page shows beside the player's name)."""
    return "#{:02x}{:02x}{:02x}".format(*AVATAR_RGB[slot % AVATAR_COLORS])


def token_of(biome: int, kind: int) -> int:
    return biome * len(TILE_KINDS) + kind


def thing_token(thing: int) -> int:
    return BIOME_TOKENS + thing


def in_spawn_zone(tx, ty) -> np.ndarray:
    """Whether tiles (tx, ty) lie in the walkable spawn zone (numpy arrays broadcast)."""
    lo, hi = SPAWN_ZONE
    return (tx >= lo) & (tx <= hi) & (ty >= lo) & (ty <= hi)


def is_solid_token(token: int) -> bool:
    """The ground truth the collision head learns."""
    if token >= NUM_TOKENS:
        return True
    if token >= BIOME_TOKENS:
        return THINGS[token - BIOME_TOKENS] not in WALKABLE_THINGS
    return token % len(TILE_KINDS) in SOLID_KINDS


def time_name(minute: int) -> str:
    """What the light at this minute of the day is called."""
    m = int(minute) % DAY_MINUTES
    if m < 5 * 60 + 30 or m >= 20 * 60:
        return "night"
    if m < 8 * 60:
        return "dawn"
    if m < 17 * 60 + 30:
        return "day"
    return "dusk"


def time_label(minute: int) -> int:
    return TIMES.index(time_name(minute))


def clock_text(minute: int) -> str:
    m = int(minute) % DAY_MINUTES
    return f"{m // 60:02d}:{m % 60:02d}"


# Cells of each placed thing, as tile offsets from its centre (three tiles right of the player).
_DISC = tuple((dx, dy) for dy in range(-2, 3) for dx in range(-2, 3) if dx * dx + dy * dy <= 4)
PLACE_SHAPES = {
    "campfire": ((0, 0),),
    "house": tuple((dx, dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)),
    "bridge": tuple((dx, 0) for dx in range(-2, 7)),
    "path": tuple((dx, 0) for dx in range(-2, 9)),
    "trees": ((0, -2), (-1, 0), (1, 1), (0, 2), (2, -1), (-2, 2)),
    "lava_pool": _DISC,
    "ruins": ((-1, -1), (0, -1), (2, -1), (-1, 0), (-1, 1), (2, 1), (1, 1)),
    "statue": ((0, 0),),
    "pond": _DISC,
    "flowers": _DISC,
    "rocks": ((0, 0), (1, -1), (-1, 1), (2, 1), (-1, -2)),
    "tent": ((0, 0), (1, 0), (0, 1), (1, 1)),
    "well": ((0, 0),),
    "fence": tuple((0, dy) for dy in range(-3, 4)),
}


def mix_hash(*values: int) -> int:
    """splitmix64 over a tuple of ints: the seeded randomness both sides share."""
    h = 0x9E3779B97F4A7C15
    for v in values:
        h = (h ^ (int(v) & _MASK64)) & _MASK64
        h = (h + 0x9E3779B97F4A7C15) & _MASK64
        z = h
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        h = z ^ (z >> 31)
    return h


def keys_to_dir(keys) -> tuple[int, int]:
    """Held keys -> unit direction; unknown keys are ignored, opposite keys cancel."""
    dx = dy = 0
    for key in keys:
        d = KEY_DIRS.get(key)
        if d:
            dx += d[0]
            dy += d[1]
    return max(-1, min(1, dx)), max(-1, min(1, dy))


def box_tiles(x: int, y: int) -> list[tuple[int, int]]:
    """Tiles overlapped by the collision box centred on pixel (x, y)."""
    x0, x1 = (x - BOX_HALF) // TILE, (x + BOX_HALF - 1) // TILE
    y0, y1 = (y - BOX_HALF) // TILE, (y + BOX_HALF - 1) // TILE
    return [(tx, ty) for ty in range(y0, y1 + 1) for tx in range(x0, x1 + 1)]


def move(x: int, y: int, dx: int, dy: int, speed: int, is_solid) -> tuple[int, int]:
    """Axis-separated move: each axis is taken only if the box lands on walkable tiles. Held
    straight into an obstacle's corner, the box slides sideways round it (up to SLIDE_PX off
    the line) instead of stopping dead."""

    def free(px: int, py: int) -> bool:  # box_tiles unrolled: this runs many times a frame
        x0, x1 = (px - BOX_HALF) // TILE, (px + BOX_HALF - 1) // TILE
        for ty in range((py - BOX_HALF) // TILE, (py + BOX_HALF - 1) // TILE + 1):
            for tx in range(x0, x1 + 1):
                if is_solid(tx, ty):
                    return False
        return True

    if dx:
        nx = x + dx * speed
        if free(nx, y):
            x = nx
        elif not dy and (step := _slide(lambda k: free(nx, y + k), speed)) and free(x, y + step):
            y += step
    if dy:
        ny = y + dy * speed
        if free(x, ny):
            y = ny
        elif not dx and (step := _slide(lambda k: free(x + k, ny), speed)) and free(x + step, y):
            x += step
    return x, y


SLIDE_PX = BOX_HALF + 1  # how far off its line a blocked box looks for a way round


def _slide(clear_at, speed: int) -> int:
    """The sideways step toward the nearer side that clears the obstacle (0: none does)."""
    for k in range(1, SLIDE_PX + 1):
        for side in (1, -1):
            if clear_at(side * k):
                return side * min(speed, k)
    return 0


def creature_dir(seed: int, creature: int, t: int) -> tuple[int, int]:
    return DIRECTIONS[mix_hash(seed, 77, creature, t // CREATURE_TURN_EVERY) % len(DIRECTIONS)]


def spawn_offset(seed: int, t: int, n: int) -> tuple[int, int]:
    """Where a creature appears relative to the player that asked for it."""
    h = mix_hash(seed, 91, t, n)
    return (20 + (h % 9)) * (1 if h & 1024 else -1), ((h >> 4) % 33) - 16


def player_spawn(slot: int) -> tuple[int, int]:
    return ((0, 0), (10, 0), (-10, 0), (0, 10), (0, -10), (10, 10), (-10, -10), (10, -10))[slot % 8]


def thing_center(x: int, y: int) -> tuple[int, int]:
    """Tile where a placed thing is centred: three tiles right of the player."""
    return x // TILE + 3, y // TILE


def place_cells(thing: int, x: int, y: int) -> list[tuple[int, int, int]]:
    """(tile x, tile y, token) of the thing placed beside a player at pixel (x, y)."""
    cx, cy = thing_center(x, y)
    token = thing_token(thing)
    return [(cx + dx, cy + dy, token) for dx, dy in PLACE_SHAPES[THINGS[thing]]]


def overlay_phase(weather: int, t: int) -> tuple[int, int]:
    sx, sy = OVERLAY_SCROLL[WEATHERS[weather]]
    return (-sx * t) % OVERLAY, (-sy * t) % OVERLAY


# One plain phrasing per event the model can apply: what stories and suggestions send to
# `WorldEngine.apply_event` (the training phrasings include every one of them).
EVENT_PHRASES = {
    "weather": {
        "clear": "the sky clears",
        "rain": "it starts to rain",
        "snow": "it starts to snow",
        "fog": "fog rolls in",
        "thunderstorm": "a thunderstorm rolls in",
        "sandstorm": "a sandstorm sweeps in",
        "ash": "ash falls from the sky",
        "petals": "petals drift on the wind",
        "fireflies": "fireflies light up the air",
    },
    "time": {
        "dawn": "dawn breaks",
        "day": "the sun rises high",
        "dusk": "the sun begins to set",
        "night": "night falls",
    },
    "creature": {c: f"a {c} appears" for c in CREATURES},
    "thing": {
        "campfire": "build a campfire",
        "house": "a house appears",
        "bridge": "build a bridge",
        "path": "a path appears",
        "trees": "trees grow here",
        "lava_pool": "a pool of lava bubbles up",
        "ruins": "ancient ruins rise",
        "statue": "a statue appears",
        "pond": "a pond appears",
        "flowers": "flowers bloom around me",
        "rocks": "rocks tumble down",
        "tent": "pitch a tent",
        "well": "a well appears",
        "fence": "build a fence",
    },
    # a process the world then runs by itself (the learned dynamics spread and put out a fire)
    "process": {"fire": "a fire starts"},
}


def render_tokens(tokens, cover) -> np.ndarray:
    """The tokens the renderer draws (numpy arrays broadcast): a covered tile is its cover's."""
    tokens, cover = np.asarray(tokens), np.asarray(cover)
    return np.where(cover > 0, FIRST_COVER_TOKEN - 1 + cover.astype(np.int64), tokens)


def tick_of(t: int) -> int:
    """The dynamics tick a world frame falls in."""
    return int(t) // TICK_FRAMES
