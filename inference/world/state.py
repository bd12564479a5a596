"""Per-world state of the world model and its exact, self-contained snapshot format.

A world is its latent canvas (generated chunks of tile tokens in world coordinates), its
conditions (biome mix and MiniLM embedding of the prompt, atmosphere, minute of the day), the
world clock, creatures, placed things and players. Everything is integers or float32 arrays,
so a snapshot restores bit for bit.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from inference.world import spec
from inference.world.concepts import BEHAVIOURS
from inference.world.text import TEXT_DIM

MAGIC = b"PXWS"
VERSION = 4  # v4: covers, chunk clocks, headings, the pending tick; v3 and v2 still load
OLDER_VERSIONS = (2, 3)
_HEAD = struct.Struct(">4sHII")  # magic, version, crc32 of body, body length
MEMO_SIZE = 4096  # entries a world's memo holds before it starts again


class SnapshotError(ValueError):
    """Corrupt or incompatible snapshot bytes."""


@dataclass
class PlayerState:
    player_id: str
    slot: int  # avatar colour is slot % AVATAR_COLORS
    x: int  # avatar centre, world pixels
    y: int


@dataclass
class CreatureState:
    kind: int
    x: int
    y: int
    ident: int
    heading: int = 0  # index into spec.DIRECTIONS, chosen each tick by the dynamics


@dataclass
class PendingTick:
    """A dynamics tick made from the world as it was at the start of tick ``tick`` and applied
    at the start of the next (so it is made off the frame path meanwhile): the tiles it
    changes and the creatures' new headings. Part of the state, so a snapshot taken between
    the two restores to the same world."""

    tick: int
    tiles: np.ndarray  # (n, 4) int64: tile x, tile y, token, cover
    headings: dict[int, int]  # creature ident -> heading


@dataclass
class ObjectState:
    """A thing of the open vocabulary (`concepts`): drawn by the sprite generator from its
    name, moving (or blocking, or giving light) as its behaviour head said when it came."""

    concept: str  # the concept's name (stable across vocabulary builds)
    motion: int  # index into concepts.BEHAVIOURS
    light: bool
    x: int  # centre, world pixels
    y: int
    ident: int


@dataclass
class WorldState:
    world_id: str
    seed: int
    prompt: str
    biome_probs: np.ndarray  # (len(BIOMES),) float32, from the prompt's text embedding
    weather: int  # atmosphere
    minute: int  # minute of the day, advances with the clock
    text_emb: np.ndarray = field(default_factory=lambda: np.zeros(TEXT_DIM, np.float32))
    t: int = 0  # world clock, frames
    chunks: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)  # (8, 8) uint8
    players: list[PlayerState] = field(default_factory=list)
    creatures: list[CreatureState] = field(default_factory=list)
    spawned: int = 0  # creatures ever spawned (their ids)
    next_slot: int = 0
    things: list[int] = field(default_factory=list)  # what events placed, in order
    objects: list[ObjectState] = field(default_factory=list)  # open-vocabulary things
    edits: int = 0  # tokens rewritten since creation: with the chunk count, the canvas version
    # what lies over the tokens (spec.COVERS), by chunk; a chunk not here has none
    cover: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)  # (8, 8) uint8
    # the tick each chunk's dynamics has reached; a chunk no one was near lags, and catches up
    clocks: dict[tuple[int, int], int] = field(default_factory=dict)
    pending: PendingTick | None = None
    kept_at: float = 0.0  # wall-clock seconds when it was kept between Live sessions (0: not)
    # what the engine derives from the canvas (see `memo`); not part of the state
    _memo: dict = field(default_factory=dict, repr=False, compare=False)
    _memo_version: tuple = field(default=(), repr=False, compare=False)

    @property
    def biome(self) -> int:
        return int(np.argmax(self.biome_probs))

    @property
    def time(self) -> int:
        """The named moment (index into TIMES) the minute of the day falls in."""
        return spec.time_label(self.minute)

    def token_at(self, tx: int, ty: int) -> int:
        chunk = self.chunks.get((tx // spec.CHUNK, ty // spec.CHUNK))
        if chunk is None:
            return spec.UNKNOWN_TOKEN
        return int(chunk[ty % spec.CHUNK, tx % spec.CHUNK])

    def set_token(self, tx: int, ty: int, token: int) -> None:
        chunk = self.chunks.get((tx // spec.CHUNK, ty // spec.CHUNK))
        if chunk is not None:
            chunk[ty % spec.CHUNK, tx % spec.CHUNK] = token
            self.edits += 1

    def cover_at(self, tx: int, ty: int) -> int:
        cover = self.cover.get((tx // spec.CHUNK, ty // spec.CHUNK))
        return 0 if cover is None else int(cover[ty % spec.CHUNK, tx % spec.CHUNK])

    def set_cover(self, tx: int, ty: int, value: int) -> None:
        """A tile's cover (only where the canvas exists); an edit, like a token's."""
        key = (tx // spec.CHUNK, ty // spec.CHUNK)
        if key not in self.chunks:
            return
        cover = self.cover.get(key)
        if cover is None:
            if not value:
                return
            cover = self.cover[key] = np.zeros((spec.CHUNK, spec.CHUNK), np.uint8)
        cover[ty % spec.CHUNK, tx % spec.CHUNK] = value
        self.edits += 1

    def cover_region(self, tx0: int, ty0: int, w: int, h: int) -> np.ndarray:
        """Dense (h, w) uint8 covers of tiles [tx0, tx0 + w) x [ty0, ty0 + h) (0: none)."""
        out = np.zeros((h, w), dtype=np.uint8)
        if not self.cover:
            return out
        for cy, src_y, dst_y in _spans(ty0, h):
            for cx, src_x, dst_x in _spans(tx0, w):
                cover = self.cover.get((cx, cy))
                if cover is not None:
                    out[dst_y, dst_x] = cover[src_y, src_x]
        return out

    def memo(self) -> dict:
        """A cache for values derived from the canvas (camera windows, solid tiles, spans of
        chunks that all exist), emptied whenever the canvas changes. Chunks are only ever added
        and tokens change only by `set_token`, so (chunk count, edits) is its version; it is
        read before anything is derived, so a chunk the terrain thread adds meanwhile is never
        cached as missing."""
        version = (len(self.chunks), self.edits)
        if version != self._memo_version or len(self._memo) > MEMO_SIZE:
            self._memo, self._memo_version = {}, version
        return self._memo

    def view(self, tx0: int, ty0: int) -> np.ndarray:
        """The (WINDOW, WINDOW) render tokens (`spec.render_tokens`) a camera decodes from tile
        (tx0, ty0), read-only and cached: a walking camera stays on the same tiles for four
        frames, a standing one for good."""
        memo = self.memo()
        tokens = memo.get(("view", tx0, ty0))
        if tokens is None:
            tokens = self.region(tx0, ty0, spec.WINDOW, spec.WINDOW)
            if self.cover:  # a covered tile is drawn as its cover
                cover = self.cover_region(tx0, ty0, spec.WINDOW, spec.WINDOW)
                tokens = spec.render_tokens(tokens, cover)
            tokens.flags.writeable = False
            memo[("view", tx0, ty0)] = tokens
        return tokens

    def has_chunks(self, x: int, y: int, reach: int) -> bool:
        """Whether every chunk within ``reach`` pixels (per axis) of pixel (x, y) exists. Asked
        for every player at every step (the terrain thread) and every moving frame (the held
        check), and mostly yes: a yes is memoised by the span of chunks (it stays true, chunks
        are never removed), which changes once every 64 pixels walked."""
        px = spec.CHUNK * spec.TILE
        xs = range((x - reach) // px, (x + reach) // px + 1)
        ys = range((y - reach) // px, (y + reach) // px + 1)
        memo, key = self.memo(), ("chunks", xs, ys)
        if key in memo:
            return True
        if all((cx, cy) in self.chunks for cy in ys for cx in xs):
            memo[key] = True
            return True
        return False

    def region(self, tx0: int, ty0: int, w: int, h: int) -> np.ndarray:
        """Dense (h, w) int64 tokens for tiles [tx0, tx0 + w) x [ty0, ty0 + h); UNKNOWN where
        the canvas has not been generated."""
        out = np.full((h, w), spec.UNKNOWN_TOKEN, dtype=np.int64)
        rows, cols = _spans(ty0, h), _spans(tx0, w)
        for cy, src_y, dst_y in rows:
            for cx, src_x, dst_x in cols:
                chunk = self.chunks.get((cx, cy))
                if chunk is not None:
                    out[dst_y, dst_x] = chunk[src_y, src_x]
        return out


def _spans(t0: int, n: int) -> list[tuple[int, slice, slice]]:
    """The chunks tiles [t0, t0 + n) fall in along one axis: (chunk, slice in it, slice out)."""
    c, out = spec.CHUNK, []
    for k in range(t0 // c, (t0 + n - 1) // c + 1):
        lo, hi = max(k * c, t0), min(k * c + c, t0 + n)
        out.append((k, slice(lo - k * c, hi - k * c), slice(lo - t0, hi - t0)))
    return out


def snapshot_bytes(state: WorldState) -> bytes:
    keys = sorted(state.chunks)
    covered = sorted(k for k, c in state.cover.items() if c.any())
    header = {
        "world_id": state.world_id,
        "seed": state.seed,
        "prompt": state.prompt,
        "weather": state.weather,
        "minute": state.minute,
        "t": state.t,
        "things": list(state.things),
        "spawned": state.spawned,
        "next_slot": state.next_slot,
        "players": [[p.player_id, p.slot, p.x, p.y] for p in state.players],
        "creatures": [[c.kind, c.x, c.y, c.ident, c.heading] for c in state.creatures],
        "objects": [[o.concept, o.motion, int(o.light), o.x, o.y, o.ident] for o in state.objects],
        "chunks": [list(k) for k in keys],
        "covered": [list(k) for k in covered],
        "clocks": [[*k, state.clocks[k]] for k in sorted(state.clocks)],
        "pending": None
        if state.pending is None
        else [
            state.pending.tick,
            state.pending.tiles.tolist(),
            sorted(state.pending.headings.items()),
        ],
        "kept_at": state.kept_at,
        "num_tokens": spec.NUM_TOKENS,
        "biomes": len(spec.BIOMES),
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    tokens = b"".join(
        np.ascontiguousarray(layer[k], dtype=np.uint8).tobytes()
        for layer, ks in ((state.chunks, keys), (state.cover, covered))
        for k in ks
    )
    probs = np.asarray(state.biome_probs, dtype="<f4").tobytes()
    emb = np.asarray(state.text_emb, dtype="<f4").tobytes()
    body = struct.pack(">I", len(head)) + head + probs + emb + tokens
    return _HEAD.pack(MAGIC, VERSION, zlib.crc32(body), len(body)) + body


def state_from_bytes(data: bytes) -> WorldState:
    if not isinstance(data, bytes | bytearray | memoryview) or len(data) < _HEAD.size + 4:
        raise SnapshotError("snapshot is empty or truncated")
    magic, version, crc, length = _HEAD.unpack_from(data)
    body = bytes(data[_HEAD.size :])
    if magic != MAGIC:
        raise SnapshotError("not a Parallax world snapshot")
    if version != VERSION and version not in OLDER_VERSIONS:
        raise SnapshotError(
            f"snapshot version {version} was made by other world model weights"
            f" (this model reads {VERSION} and {', '.join(map(str, OLDER_VERSIONS))})"
        )
    if length != len(body) or zlib.crc32(body) != crc:
        raise SnapshotError("snapshot is corrupt (length or checksum mismatch)")
    try:
        (n,) = struct.unpack_from(">I", body)
        h = json.loads(body[4 : 4 + n])
        if h["num_tokens"] != spec.NUM_TOKENS or h["biomes"] != len(spec.BIOMES):
            raise SnapshotError("snapshot was made by an incompatible model vocabulary")
        off = 4 + n
        probs = np.frombuffer(body, dtype="<f4", count=len(spec.BIOMES), offset=off).astype(
            np.float32
        )
        off += probs.nbytes
        emb = np.frombuffer(body, dtype="<f4", count=TEXT_DIM, offset=off).astype(np.float32)
        off += emb.nbytes
        keys = [tuple(int(v) for v in k) for k in h["chunks"]]
        covered = [tuple(int(v) for v in k) for k in h.get("covered", ())]  # v3 had none
        size = spec.CHUNK * spec.CHUNK
        if len(body) != off + size * (len(keys) + len(covered)) or not set(covered) <= set(keys):
            raise SnapshotError("snapshot canvas has the wrong size")
        chunks, cover = {}, {}
        for i, k in enumerate(keys + covered):
            arr = np.frombuffer(body, dtype=np.uint8, count=size, offset=off + i * size)
            limit = spec.NUM_TOKENS if i < len(keys) else len(spec.COVERS)
            if arr.max(initial=0) >= limit:
                raise SnapshotError("snapshot canvas holds unknown tokens")
            (chunks if i < len(keys) else cover)[k] = arr.reshape(spec.CHUNK, spec.CHUNK).copy()
        return WorldState(
            world_id=str(h["world_id"]),
            seed=int(h["seed"]),
            prompt=str(h["prompt"]),
            biome_probs=probs,
            weather=_index(h["weather"], spec.WEATHERS),
            minute=int(h["minute"]) % spec.DAY_MINUTES,
            text_emb=emb,
            t=int(h["t"]),
            things=[_index(k, spec.THINGS) for k in h["things"]],
            chunks=chunks,
            players=[PlayerState(str(p), int(s), int(x), int(y)) for p, s, x, y in h["players"]],
            creatures=[
                CreatureState(
                    _index(k, spec.CREATURES),
                    int(x),
                    int(y),
                    int(i),
                    _index(rest[0], spec.DIRECTIONS) if rest else 0,  # v3 had no headings
                )
                for k, x, y, i, *rest in h["creatures"]
            ],
            cover=cover,
            clocks={(int(x), int(y)): int(n) for x, y, n in h.get("clocks", ())},
            pending=_pending(h.get("pending")),
            kept_at=float(h.get("kept_at", 0.0)),
            objects=[
                ObjectState(str(n), _index(m, BEHAVIOURS), bool(li), int(x), int(y), int(i))
                for n, m, li, x, y, i in h.get("objects", ())  # v2 had none
            ],
            spawned=int(h["spawned"]),
            next_slot=int(h["next_slot"]),
        )
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, struct.error, UnicodeDecodeError) as exc:
        raise SnapshotError(f"snapshot is malformed: {exc}") from exc


def _pending(value) -> PendingTick | None:
    if value is None:
        return None
    tick, tiles, headings = value
    arr = np.asarray(tiles, dtype=np.int64).reshape(-1, 4)
    if arr.size and (
        arr[:, 2].min() < 0
        or arr[:, 2].max() >= spec.NUM_TOKENS
        or arr[:, 3].min() < 0
        or arr[:, 3].max() >= len(spec.COVERS)
    ):
        raise SnapshotError("snapshot's pending tick holds unknown tokens")
    return PendingTick(int(tick), arr, {int(i): _index(d, spec.DIRECTIONS) for i, d in headings})


def _index(value, options) -> int:
    value = int(value)
    if not 0 <= value < len(options):
        raise SnapshotError(f"snapshot value {value} out of range")
    return value
