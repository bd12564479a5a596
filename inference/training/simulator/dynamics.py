"""The processes of the world (the teacher of the learned dynamics) and a small canvas to run them.

Every rule is a probability per tick (0.25 s) of a tile's next cover, of a lava tile cooling, or
of a creature's next heading, computed from the same batches the model gets
(`world/dynamics.py`: TileBatch, CreatureBatch) and drawn with the same uniforms, so the model
is trained on these probabilities and a perfect one replays the teacher bit for bit.

- fire burns on flammable tiles (the grass and trees of green biomes, wooden things), spreads to
  flammable 8-neighbours (each burning neighbour is another chance; lava pools ignite their
  neighbours too), slower in the wet; burns out to ash, faster in rain or snow. Puddles, snow
  and ash do not ignite.
- ash grows back slowly (about 80 s), never next to a fire.
- puddles: in rain, hollows (kind ground_var) fill, then ground beside puddles (ponds grow); they
  dry when it does not rain, faster in the sun.
- snow settles on the ground while it snows (faster beside snow) and melts when it does not,
  by day much faster than at night, fast beside a fire.
- lava pools cool to rocks from their edges.
- creatures keep to their habitat (fish, crabs and frogs by water), flee fire, drift toward
  water; wolves and bears are drawn to the nearest player, rabbits, deer, birds and cats are
  scared off by one close by. Fires and solid tiles block them.
Every non-zero rate is above `P_FLOOR` (the floor under which neither side draws a class).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from inference.training.simulator.world import random_biomes, random_minutes, terrain_tokens
from inference.world import spec
from inference.world.dynamics import (
    ASH,
    FIRE,
    LAVA,
    MARGIN,
    NO_PLAYER,
    PATCH,
    PUDDLE,
    SIGHT,
    SNOW,
    VIEW,
    CreatureBatch,
    TileBatch,
    apply_tiles,
    blocks_movement,
    creature_uniforms,
    daylight,
    draw,
)
from inference.world.noise import value_noise

_W = {name: i for i, name in enumerate(spec.WEATHERS)}
_B = {name: i for i, name in enumerate(spec.BIOMES)}
_T = {name: spec.thing_token(i) for i, name in enumerate(spec.THINGS)}
_ALL_TOKENS = spec.NUM_TOKENS + 2  # with UNKNOWN and MASK


def _token_table(biomes: dict[str, tuple], things: dict[str, float]) -> np.ndarray:
    """A float per token: biome name -> value per tile kind, thing name -> value."""
    table = np.zeros(_ALL_TOKENS)
    for name, per_kind in biomes.items():
        for kind, value in enumerate(per_kind):
            table[spec.token_of(_B[name], kind)] = value
    for name, value in things.items():
        table[_T[name]] = value
    return table


# How readily a tile catches fire (0: never): green biomes' ground and trees, wooden things.
FLAMMABLE = _token_table(
    {
        "meadow": (1.0, 1.0, 0.8, 0),
        "forest": (0.8, 0.8, 1.0, 0),
        "autumn": (1.0, 1.0, 1.0, 0),
        "blossom": (0.8, 0.8, 0.9, 0),
        "jungle": (0.5, 0.5, 0.7, 0),
        "swamp": (0.3, 0.3, 0.5, 0),
        "ruins": (0.4, 0.4, 0, 0),
    },
    {"trees": 1.0, "flowers": 0.8, "house": 0.6, "tent": 0.8, "fence": 0.7},
)
_NO_PUDDLE = {"reef", "snow", "ice_cave"}  # underwater, frozen
# Where rain gathers: 2 on hollows (ground_var), 1 on ground beside a puddle.
PUDDLING = _token_table(
    {b: (1.0, 2.0, 0, 0) for b in spec.BIOMES if b not in _NO_PUDDLE}, {"path": 1.0}
)
SNOWABLE = _token_table(
    {b: (1.0, 1.0, 0, 0) for b in spec.BIOMES if b != "reef"}, {"path": 1.0, "flowers": 1.0}
)
WATER = _token_table({b: (0, 0, 0, 1.0) for b in spec.BIOMES}, {"pond": 1.0}).astype(bool)

# Per atmosphere: how much a burning neighbour's chance shrinks (the wet) and how fast a fire
# burns out.
IGNITE = 0.045  # chance per tick that one burning neighbour lights a fully flammable tile
DAMP = np.ones(len(spec.WEATHERS))
DAMP[[_W["rain"], _W["thunderstorm"], _W["snow"], _W["fog"]]] = (0.35, 0.3, 0.25, 0.8)
BURN_OUT = np.full(len(spec.WEATHERS), 0.04)  # mean 6 s of burning in the dry
BURN_OUT[[_W["rain"], _W["thunderstorm"], _W["snow"]]] = (0.12, 0.15, 0.15)
RAIN = np.zeros(len(spec.WEATHERS))  # how hard it rains
RAIN[[_W["rain"], _W["thunderstorm"]]] = (1.0, 1.5)
REGROW = 0.003  # ash -> ground, per tick (about 80 s)
DRY, DRY_SUN = 0.0025, 0.01  # puddle -> ground when it does not rain, at night and added by day
SETTLE, SETTLE_BESIDE = 0.004, 0.03  # snow settling alone and beside snowy 8-neighbours
MELT, MELT_SUN, MELT_FIRE = 0.0025, 0.02, 0.05
COOL = 0.004  # a lava pool's edge tile cooling to rocks, per tick (x3 in rain or snow)

_N8 = [(dx, dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dx or dy]
_N4 = [(1, 0), (-1, 0), (0, 1), (0, -1)]


def _neighbours(mask: np.ndarray, offsets) -> np.ndarray:
    """(N, PATCH, PATCH) bool -> (N, 8, 8) count of the interior tiles' neighbours set."""
    c, m = spec.CHUNK, MARGIN
    return sum(
        mask[:, m + dy : m + dy + c, m + dx : m + dx + c].astype(np.int64) for dx, dy in offsets
    )


def teacher_tile_probs(batch: TileBatch) -> tuple[np.ndarray, np.ndarray]:
    """-> (cover probabilities (N, 8, 8, len(COVERS)), lava-cooling probabilities (N, 8, 8))."""
    tokens, cover = np.asarray(batch.tokens), np.asarray(batch.cover)
    c, m = spec.CHUNK, MARGIN
    tok, cov = tokens[:, m : m + c, m : m + c], cover[:, m : m + c, m : m + c]
    w = np.asarray(batch.weather)[:, None, None]
    sun = daylight(batch.minute)[:, None, None]
    raining, snowing = RAIN[w] > 0, w == _W["snow"]
    fires = _neighbours(cover == FIRE, _N8)
    heat = fires + 2 * _neighbours(tokens == LAVA, _N8)
    bare = cov == 0
    to = np.zeros((*tok.shape, len(spec.COVERS)))  # chance of leaving the current cover for each
    to[..., FIRE] = bare * (1 - (1 - IGNITE * DAMP[w] * FLAMMABLE[tok]) ** heat)
    puddles = _neighbours(cover == PUDDLE, _N4)
    wet = PUDDLING[tok]
    pool = np.where(wet == 2, 0.012 + 0.03 * puddles / 4, 0.03 * puddles / 4) * (wet > 0)
    to[..., PUDDLE] = bare * RAIN[w] * pool
    snowy = _neighbours(cover == SNOW, _N8)
    to[..., SNOW] = bare * snowing * (SNOWABLE[tok] > 0) * (SETTLE + SETTLE_BESIDE * snowy / 8)
    out = np.zeros(tok.shape)  # chance of going back to no cover
    out += (cov == ASH) * (fires == 0) * REGROW
    out += (cov == PUDDLE) * ~raining * (DRY + DRY_SUN * sun)
    melt = ~snowing * (MELT + MELT_SUN * sun) * np.where(raining, 2.0, 1.0) + MELT_FIRE * fires
    out += (cov == SNOW) * np.minimum(melt, 1.0)
    to[..., 0] = out
    to[..., ASH] += (cov == FIRE) * BURN_OUT[w]
    probs = to
    stay = 1 - to.sum(-1)
    np.put_along_axis(probs, cov[..., None].astype(np.int64), stay[..., None], -1)
    open_edge = _neighbours((tokens != LAVA) & (tokens != spec.UNKNOWN_TOKEN), _N4) > 0
    cool = (tok == LAVA) * open_edge * COOL * np.where(raining | snowing, 3.0, 1.0)
    return probs, cool


# ---------------------------------------------------------------- creatures

AQUATIC = np.isin(
    np.arange(len(spec.CREATURES)), [spec.CREATURES.index(c) for c in ("fish", "crab", "frog")]
)
HUNTERS = np.isin(
    np.arange(len(spec.CREATURES)), [spec.CREATURES.index(c) for c in ("wolf", "bear")]
)
SHY = np.isin(
    np.arange(len(spec.CREATURES)),
    [spec.CREATURES.index(c) for c in ("rabbit", "deer", "bird", "cat")],
)
FLEE, LINGER = 4.0, 0.5  # preference away from fire, for standing still
PULL_WATER = (0.6, 2.0)  # land creatures, the aquatic ones away from water
STAY_BY_WATER = 1.5  # the aquatic ones beside water like to stay
HUNT, HUNT_RANGE = 2.0, 16.0  # toward a player within 16 tiles
SCARE, SCARE_RANGE = 3.0, 6.0

_D = np.array(spec.DIRECTIONS, dtype=np.float64)
_UNIT = _D / np.maximum(np.hypot(_D[:, 0], _D[:, 1]), 1.0)[:, None]  # (9, 2), stay is (0, 0)
_OFF = np.stack(np.meshgrid(np.arange(VIEW) - SIGHT, np.arange(VIEW) - SIGHT, indexing="xy"), -1)
_DIST = np.hypot(_OFF[..., 0], _OFF[..., 1]).astype(np.float64)  # (VIEW, VIEW) tiles


def _pull(mask: np.ndarray) -> np.ndarray:
    """(M, VIEW, VIEW) bool -> (M, 2): the inverse-square-weighted direction toward the set tiles
    (its length grows as they come close: 1 for one tile beside the creature)."""
    weight = np.where(_DIST > 0, 1.0 / np.maximum(_DIST, 1.0) ** 3, 0.0)
    return np.einsum("mij,ijc->mc", mask * weight, _OFF.astype(np.float64))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.hypot(v[:, 0], v[:, 1]), 1e-9)[:, None]


def teacher_creature_probs(batch: CreatureBatch) -> np.ndarray:
    """-> (M, len(DIRECTIONS)) heading probabilities."""
    tokens, cover = np.asarray(batch.tokens), np.asarray(batch.cover)
    kind = np.asarray(batch.kind)
    score = np.zeros((len(kind), len(spec.DIRECTIONS)))
    score[:, 0] = LINGER
    fire = _pull(cover == FIRE)
    fear = np.minimum(1.0, np.hypot(fire[:, 0], fire[:, 1]) * 2)
    score -= FLEE * fear[:, None] * (_unit(fire) @ _UNIT.T)
    score[:, 0] -= 0.5 * FLEE * fear
    water = WATER[tokens]
    beside = water[:, SIGHT - 1 : SIGHT + 2, SIGHT - 1 : SIGHT + 2].any((1, 2))
    pull = np.where(AQUATIC[kind] & ~beside, PULL_WATER[1], PULL_WATER[0])
    seen = water.any((1, 2))
    score += (pull * seen)[:, None] * (_unit(_pull(water)) @ _UNIT.T)
    score[:, 0] += STAY_BY_WATER * (AQUATIC[kind] & beside)
    player = np.asarray(batch.player, dtype=np.float64) / spec.TILE
    dist = np.hypot(player[:, 0], player[:, 1])
    toward = _unit(player) @ _UNIT.T  # (M, 9)
    hunt = HUNTERS[kind] & (dist < HUNT_RANGE) & (dist >= 1.5)
    score += (HUNT * hunt)[:, None] * toward
    scare = SHY[kind] * np.clip(1 - dist / SCARE_RANGE, 0, 1) * (dist < NO_PLAYER / 2 / spec.TILE)
    score -= (SCARE * scare)[:, None] * toward
    c = SIGHT + _D.astype(np.int64)  # (9, 2) the tile each heading steps onto
    blocked = blocks_movement(tokens[:, c[:, 1], c[:, 0]], cover[:, c[:, 1], c[:, 0]])
    blocked[:, 0] = False
    score = np.where(blocked, -np.inf, score)
    p = np.exp(score - score.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


class Teacher:
    """The processes with the model's interface (`world.dynamics.Dynamics`)."""

    def tile_probs(self, batch: TileBatch) -> tuple[np.ndarray, np.ndarray]:
        return teacher_tile_probs(batch)

    def tiles(self, batch: TileBatch) -> tuple[np.ndarray, np.ndarray]:
        return apply_tiles(batch, *teacher_tile_probs(batch))

    def creature_probs(self, batch: CreatureBatch) -> np.ndarray:
        return teacher_creature_probs(batch)

    def creatures(self, batch: CreatureBatch) -> np.ndarray:
        u = creature_uniforms(batch.seed, batch.tick, batch.ident)
        return draw(teacher_creature_probs(batch), u)


def teacher_tiles(batch: TileBatch) -> tuple[np.ndarray, np.ndarray]:
    return Teacher().tiles(batch)


def teacher_creatures(batch: CreatureBatch) -> np.ndarray:
    return Teacher().creatures(batch)


# ---------------------------------------------------------------- a canvas to run them on


@dataclass
class Canvas:
    """A few chunks of one world stepped tick by tick by a dynamics (the teacher, the model, or
    None for creatures: the old seeded wanderer). Outside the canvas is UNKNOWN (solid)."""

    seed: int
    tokens: np.ndarray  # (H, W) int64, H and W multiples of CHUNK
    cover: np.ndarray  # (H, W) uint8
    weather: int = 0
    minute: int = spec.TIME_MINUTES[1]
    tick: int = 0
    origin: tuple[int, int] = (0, 0)  # tile of the canvas's first cell
    creatures: np.ndarray = field(
        default_factory=lambda: np.zeros((0, 4), np.int64)
    )  # kind, x, y, ident (pixels)
    player: tuple[int, int] | None = None  # pixel position of the one player (he stands still)

    @classmethod
    def of_world(
        cls, seed: int, biome: int, chunks: tuple[int, int], origin=(0, 0), **kw
    ) -> Canvas:
        h, w = chunks[1] * spec.CHUNK, chunks[0] * spec.CHUNK
        ty, tx = np.mgrid[origin[1] : origin[1] + h, origin[0] : origin[0] + w]
        tokens = terrain_tokens(seed, biome, tx, ty)
        return cls(seed, tokens, np.zeros(tokens.shape, np.uint8), origin=origin, **kw)

    def padded(self, pad: int) -> tuple[np.ndarray, np.ndarray]:
        tokens = np.pad(self.tokens, pad, constant_values=spec.UNKNOWN_TOKEN)
        return tokens, np.pad(self.cover, pad)

    def tile_batch(self) -> TileBatch:
        tokens, cover = self.padded(MARGIN)
        h, w, c = self.tokens.shape[0] // spec.CHUNK, self.tokens.shape[1] // spec.CHUNK, spec.CHUNK
        cy, cx = np.mgrid[0:h, 0:w]
        cy, cx = cy.ravel(), cx.ravel()
        win = np.arange(PATCH)
        rows = (cy * c)[:, None, None] + win[None, :, None]
        cols = (cx * c)[:, None, None] + win[None, None, :]
        n = len(cx)
        return TileBatch(
            tokens=tokens[rows, cols],
            cover=cover[rows, cols],
            weather=np.full(n, self.weather),
            minute=np.full(n, self.minute),
            seed=np.full(n, self.seed),
            tick=np.full(n, self.tick),
            origin=np.stack([self.origin[0] + cx * c, self.origin[1] + cy * c], -1),
        )

    def creature_batch(self) -> CreatureBatch:
        tokens, cover = self.padded(SIGHT)
        kind, x, y, ident = self.creatures.T
        tx, ty = x // spec.TILE - self.origin[0], y // spec.TILE - self.origin[1]
        win = np.arange(VIEW)
        rows, cols = ty[:, None, None] + win[None, :, None], tx[:, None, None] + win[None, None, :]
        if self.player is None:
            player = np.full((len(kind), 2), NO_PLAYER)
        else:
            player = np.stack([self.player[0] - x, self.player[1] - y], -1)
        n = len(kind)
        return CreatureBatch(
            tokens=tokens[rows, cols],
            cover=cover[rows, cols],
            kind=kind,
            player=player,
            seed=np.full(n, self.seed),
            tick=np.full(n, self.tick),
            ident=ident,
        )

    def blocked(self, tx: int, ty: int) -> bool:
        x, y = tx - self.origin[0], ty - self.origin[1]
        if not (0 <= y < self.tokens.shape[0] and 0 <= x < self.tokens.shape[1]):
            return True
        return bool(blocks_movement(self.tokens[y, x], self.cover[y, x]))

    def step(self, dynamics, creatures=None) -> None:
        """One tick: the tiles change by `dynamics`, then each creature picks a heading on the
        new tiles (by `creatures`, default the same dynamics; "wanderer": the old seeded rule,
        spec.creature_dir) and walks it for the tick's frames."""
        c = spec.CHUNK
        tokens, cover = dynamics.tiles(self.tile_batch())
        h, w = self.tokens.shape[0] // c, self.tokens.shape[1] // c
        self.tokens = tokens.reshape(h, w, c, c).transpose(0, 2, 1, 3).reshape(h * c, w * c)
        self.cover = cover.reshape(h, w, c, c).transpose(0, 2, 1, 3).reshape(h * c, w * c)
        policy = dynamics if creatures is None else creatures
        if len(self.creatures):
            heads = None if policy == "wanderer" else policy.creatures(self.creature_batch())
            for i, (_, x, y, ident) in enumerate(self.creatures):
                for f in range(spec.TICK_FRAMES):
                    if heads is None:
                        t = self.tick * spec.TICK_FRAMES + f
                        dx, dy = spec.creature_dir(self.seed, int(ident), t)
                    else:
                        dx, dy = spec.DIRECTIONS[heads[i]]
                    x, y = spec.move(int(x), int(y), dx, dy, spec.CREATURE_SPEED, self.blocked)
                self.creatures[i, 1:3] = (x, y)
        frames = self.tick * spec.TICK_FRAMES  # the world clock: a minute every 10 frames
        self.tick += 1
        passed = (
            frames + spec.TICK_FRAMES
        ) // spec.FRAMES_PER_MINUTE - frames // spec.FRAMES_PER_MINUTE
        self.minute = (self.minute + passed) % spec.DAY_MINUTES


# ---------------------------------------------------------------- random states to learn from

GREEN = np.array([_B[b] for b in ("meadow", "forest", "autumn", "blossom", "jungle", "swamp")])
_LAVA_DISC = [(dx, dy) for dx, dy in spec.PLACE_SHAPES["lava_pool"]]


def random_patches(rng: np.random.Generator, n: int, side: int, seeds: tuple[int, int]) -> tuple:
    """(tokens (n, side, side), seed (n,)) of random places of random worlds, rich in what the
    processes act on: green biomes half the time, placed things, lava pools, canvas edges."""
    seed = rng.integers(*seeds, n)
    biome, biome2, mix = random_biomes(rng, n)
    biome = np.where(rng.random(n) < 0.5, GREEN[rng.integers(0, len(GREEN), n)], biome)
    origin = rng.integers(-320, 320, (n, 2))
    g = np.arange(side)
    tx, ty = (
        origin[:, 0, None, None] + g[None, None, :],
        origin[:, 1, None, None] + g[None, :, None],
    )
    tokens = terrain_tokens(
        seed[:, None, None], biome[:, None, None], tx, ty, biome2[:, None, None], mix[:, None, None]
    )
    placed = rng.random(tokens.shape) < 0.12 * (rng.random(n) < 0.4)[:, None, None]
    things = spec.BIOME_TOKENS + rng.integers(0, len(spec.THINGS), tokens.shape)
    tokens = np.where(placed, things, tokens)
    for i in np.nonzero(rng.random(n) < 0.2)[0]:
        cx, cy = rng.integers(0, side, 2)
        for dx, dy in _LAVA_DISC:
            if 0 <= cx + dx < side and 0 <= cy + dy < side:
                tokens[i, cy + dy, cx + dx] = LAVA
    for i in np.nonzero(rng.random(n) < 0.1)[0]:  # the edge of the generated canvas
        k = rng.integers(1, side // 2)
        axis, far = rng.integers(0, 2), rng.random() < 0.5
        sl = slice(side - k, side) if far else slice(0, k)
        if axis:
            tokens[i, sl, :] = spec.UNKNOWN_TOKEN
        else:
            tokens[i, :, sl] = spec.UNKNOWN_TOKEN
    return tokens, seed


def random_covers(rng: np.random.Generator, tokens: np.ndarray) -> np.ndarray:
    """Blobs of every cover, mostly where they could lie (fire and ash on what burns, puddles
    where rain gathers, snow where it settles), now and then anywhere."""
    n, side = tokens.shape[0], tokens.shape[-1]
    cover = np.zeros(tokens.shape, np.uint8)
    where = {FIRE: FLAMMABLE > 0, ASH: FLAMMABLE > 0, PUDDLE: PUDDLING > 0, SNOW: SNOWABLE > 0}
    g = np.arange(side)
    for c, fits in where.items():
        density = np.where(rng.random(n) < 0.45, 0.0, rng.uniform(0.02, 0.6, n))
        scale = rng.uniform(1.5, 4.0, n)[:, None, None]
        shift = rng.integers(0, 10**6, (n, 2))
        field_ = value_noise(
            rng.integers(0, 2**31),
            c,
            (g[None, None, :] + shift[:, 0, None, None]),
            (g[None, :, None] + shift[:, 1, None, None]),
            scale,
        )
        anywhere = (rng.random(n) < 0.15)[:, None, None]
        put = (field_ < density[:, None, None]) & (fits[tokens] | anywhere) & (cover == 0)
        cover[put] = c
    return cover


def random_weather(rng: np.random.Generator, n: int) -> np.ndarray:
    """Every atmosphere, the ones the processes read more often."""
    common = np.array([_W["clear"], _W["rain"], _W["thunderstorm"], _W["snow"]])
    return np.where(
        rng.random(n) < 0.7,
        common[rng.choice(4, n, p=[0.35, 0.3, 0.1, 0.25])],
        rng.integers(0, len(spec.WEATHERS), n),
    )


def random_tile_batch(rng: np.random.Generator, n: int, seeds: tuple[int, int]) -> TileBatch:
    tokens, seed = random_patches(rng, n, PATCH, seeds)
    return TileBatch(
        tokens=tokens,
        cover=random_covers(rng, tokens),
        weather=random_weather(rng, n),
        minute=random_minutes(rng, n),
        seed=seed,
        tick=rng.integers(0, 10**6, n),
        origin=rng.integers(-1000, 1000, (n, 2)),
    )


def random_creature_batch(
    rng: np.random.Generator, m: int, seeds: tuple[int, int]
) -> CreatureBatch:
    """Creatures of every kind among fires and water, a player near, far or absent."""
    tokens, seed = random_patches(rng, m, VIEW, seeds)
    cover = random_covers(rng, tokens)
    cover[:, SIGHT, SIGHT] = np.where(cover[:, SIGHT, SIGHT] == FIRE, 0, cover[:, SIGHT, SIGHT])
    reach = np.where(rng.random(m) < 0.5, 6, 20) * spec.TILE
    player = rng.integers(-reach, reach + 1, (2, m)).T
    player[rng.random(m) < 0.25] = NO_PLAYER
    return CreatureBatch(
        tokens=tokens,
        cover=cover,
        kind=rng.integers(0, len(spec.CREATURES), m),
        player=player,
        seed=seed,
        tick=rng.integers(0, 10**6, m),
        ident=rng.integers(0, 1000, m),
    )
