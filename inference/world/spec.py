"""The contract shared by the reference simulator and the world model.

Vocabulary sizes, geometry and kinematics live here so both sides agree without the serving
path importing the simulator (an import-linter contract forbids that). Pure Python/numpy, no
torch, no Django.
"""

from __future__ import annotations

BIOMES = ("meadow", "forest", "desert", "snow", "coast", "town", "cave")
# Each biome has four tile kinds; a token is biome * len(TILE_KINDS) + kind.
TILE_KINDS = ("ground", "ground_var", "obstacle", "water")
NUM_TOKENS = len(BIOMES) * len(TILE_KINDS)
UNKNOWN_TOKEN = NUM_TOKENS  # canvas cell not generated yet
MASK_TOKEN = NUM_TOKENS + 1  # MaskGIT mask
SOLID_KINDS = frozenset({2, 3})  # obstacles and water block movement

WEATHERS = ("clear", "rain", "snow", "fog")
TIMES = ("day", "dusk", "night")
CREATURES = ("fox", "deer", "rabbit", "wolf", "bird")
FEATURES = ("pond", "flowers", "rocks")
FEATURE_KIND = {"pond": 3, "flowers": 1, "rocks": 2}

# Avatar colours by seat slot (slot % 4: a fifth player shares the first one's colour).
AVATAR_RGB = ((220, 40, 40), (40, 80, 230), (240, 210, 30), (220, 50, 220))
AVATAR_COLORS = len(AVATAR_RGB)
# Sprite kinds: avatars first, then creatures.
SPRITE_KINDS = AVATAR_COLORS + len(CREATURES)
MAX_SPRITES = 8  # per frame; the rest are not drawn

# What a player can do: the keys held (anything else is ignored) and text up to this long.
KEYS = frozenset({"w", "a", "s", "d", "space"})
MAX_PROMPT_CHARS = 500

TILE = 8  # pixels per tile
CHUNK = 8  # tiles per chunk side
FRAME = 64  # frame side in pixels
WINDOW = FRAME // TILE + 3  # tiles decoded per frame: visible 9 plus a context margin
SPRITE = 8
PLAYER_SPEED = 2  # pixels per frame along each held axis
CREATURE_SPEED = 1
CREATURE_TURN_EVERY = 24  # frames between creature direction changes
BOX_HALF = 3  # half-size of the collision box of avatars and creatures
SPAWN_ZONE = (-2, 1)  # tile range on both axes kept walkable around the origin

OVERLAY = 32  # weather particle texture side (tiled over the frame)
OVERLAY_SCROLL = {"clear": (0, 0), "rain": (1, 3), "snow": (1, 1), "fog": (0, 0)}

KEY_DIRS = {"w": (0, -1), "s": (0, 1), "a": (-1, 0), "d": (1, 0)}
DIRECTIONS = ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))

_MASK64 = (1 << 64) - 1


# What to offer when text names nothing the model can do (one line per kind of event).
EVENT_SUGGESTIONS = (
    "it starts to snow",
    "night falls",
    "a fox runs past",
    "a pond appears",
    "the fog rolls in",
    "flowers bloom around me",
)


def avatar_hex(slot: int) -> str:
    """The CSS colour of a seat's avatar (what the page shows beside the player's name)."""
    return "#{:02x}{:02x}{:02x}".format(*AVATAR_RGB[slot % AVATAR_COLORS])


def token_of(biome: int, kind: int) -> int:
    return biome * len(TILE_KINDS) + kind


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

    def free(px: int, py: int) -> bool:
        return not any(is_solid(tx, ty) for tx, ty in box_tiles(px, py))

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
    return ((0, 0), (10, 0), (-10, 0), (0, 10), (0, -10))[slot % 5]


def feature_center(x: int, y: int) -> tuple[int, int]:
    """Tile where a biome feature event is centred: three tiles right of the player."""
    return x // TILE + 3, y // TILE


def overlay_phase(weather: int, t: int) -> tuple[int, int]:
    sx, sy = OVERLAY_SCROLL[WEATHERS[weather]]
    return (-sx * t) % OVERLAY, (-sy * t) % OVERLAY
