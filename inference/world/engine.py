"""WorldEngine: many worlds (each with one or more players) in memory, stepped in batches.

Every frame comes from the network: the terrain generator grows each world's latent canvas
as players explore, and one renderer forward decodes every frame of every player in a step
call. Kinematics (keys -> avatar motion, blocked where the collision head says a tile is
solid) and creature wandering are integer rules shared with the simulator via `spec`.

One caller at a time (the worker's engine thread). With ``start_terrain()`` the terrain ahead
of every player grows on a thread of its own and a step never generates any: a player whose
view would reach a chunk not made yet is held at its edge for that frame (``held_frames``).
Without it (tests, evaluation) a step makes the chunks it needs itself, deterministically.
"""

from __future__ import annotations

import logging
import threading
import uuid
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from inference.world import journal as jn
from inference.world import spec
from inference.world import text as text_encoder
from inference.world.allocator import keep_freed_memory
from inference.world.concepts import BEHAVIOURS, Concept
from inference.world.decoder import FrameDecoder, out_side
from inference.world.dynamics import ASH, FIRE, Dynamics
from inference.world.evolution import Evolution, covers_near_players
from inference.world.model import ModelConfig, WorldModel
from inference.world.objects import (
    MAX_OBJECTS,
    SPRITE_SIDE,
    SWIM_SEARCH,
    blocked_tiles,
    is_water_token,
    move_objects,
    water_near,
)
from inference.world.prompts import (
    SUGGESTIONS,
    PromptError,
    PromptReading,
    UnsupportedEvent,
    check_text,
    nearest_events,
    read_event,
    read_prompt,
    shown_biomes,
)
from inference.world.reading import Reader
from inference.world.scenes import render, scene
from inference.world.state import (
    CreatureState,
    ObjectState,
    PlayerState,
    SnapshotError,
    WorldState,
    snapshot_bytes,
    state_from_bytes,
)
from inference.world.terrain import AHEAD_FRAMES, TerrainGrowth

log = logging.getLogger(__name__)

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "world_model.safetensors"
INITIAL_CREATURES = 2

# re-exported: callers reach the text errors, the check and these settings through the engine
__all__ = [
    "AHEAD_FRAMES",
    "PromptError",
    "SnapshotError",
    "UnsupportedEvent",
    "WorldEngine",
    "check_text",
    "is_water_token",
]


class WorldEngine(TerrainGrowth, Evolution):
    """Holds many worlds (each with one or more players) in memory and steps them in batches."""

    def __init__(
        self,
        model: WorldModel,
        device: str = "cpu",
        reader: Reader | None = None,
        dynamics: Dynamics | None = None,
        decoder: FrameDecoder | None = None,
    ):
        self.device = torch.device(device)
        # the learned dynamics: the world evolves by itself, tick by tick (`evolution`)
        self._init_evolution(dynamics or Dynamics.load(device=device))
        # the open vocabulary: what text names beyond the model's own creatures and things,
        # drawn by the sprite generator once per concept (rows of the sprite table)
        self.reader = reader or Reader.shared()
        self._sprite_rows: dict[str, int] = {}
        self._sprite_table = torch.zeros(0, SPRITE_SIDE, SPRITE_SIDE, 4)
        self.model = model.to(self.device).eval()
        # the frame decoder draws every served frame (the shipped weights, or fresh ones)
        self.decoder = decoder or FrameDecoder.load_or_fresh(WEIGHTS_DIR, self.device)
        self.solid = self.model.solid_table().cpu().numpy()  # (NUM_TOKENS + 2,) bool
        self.frame_size = out_side()
        self.max_chunk = model.cfg.max_chunk
        self.worlds: dict[str, WorldState] = {}
        self._player_world: dict[str, str] = {}
        self._frames: dict[str, int] = {}  # player id -> world frames its camera has made
        self.late_chunks = 0  # chunks a step had to generate itself (grow_ahead was too late)
        self.ahead_chunks = 0  # chunks generated ahead, before anyone needed them
        self.held_frames = 0  # player frames held at the edge of a chunk not made yet
        self.moved_frames = 0  # player frames that took a step (the denominator of held)
        # The canvas lock: the terrain thread inserts chunks while the engine thread steps.
        # Reads of a single chunk need no lock (a dict lookup); whole-canvas walks and writes do.
        self._canvas = threading.RLock()
        self._terrain: threading.Thread | None = None
        # Whether a step makes the chunks it needs itself; off while the terrain thread runs
        # (then a player is held at the edge of a late chunk instead).
        self.grow_in_step = True
        self._terrain_stop = threading.Event()
        self._terrain_wake = threading.Event()
        # world id -> its journal since the recorder last took it (only worlds being recorded)
        self.journals: dict[str, list[jn.Entry]] = {}
        # Off in a replaying engine: terrain comes from the journal, never from the generator.
        self.generate = True
        self._concepts: dict | None = None  # name -> concept of the reader's vocabulary

    @classmethod
    def load(cls, device: str = "cpu", weights: str | None = None) -> WorldEngine:
        """Load the shipped weights (inference/weights/) onto device; the text encoder too."""
        keep_freed_memory()  # the frame loop reuses its pages (allocator.py)
        path = Path(weights) if weights else DEFAULT_WEIGHTS
        if path.exists():
            model = WorldModel.from_file(path)
        else:
            log.warning("no world model weights at %s: using fresh random weights", path)
            torch.manual_seed(0)
            model = WorldModel(ModelConfig())
        text_encoder.load_encoder("cpu")
        reader = Reader.shared()
        _ = reader.keys, reader.own_keys  # the names embedded now, not in the first event
        dynamics = Dynamics.load(device=device)
        # numpy's BLAS (OpenBLAS) keeps threads of its own beside torch's, which spin after
        # each matmul while torch waits for the cores; the engine's numpy matmuls are small
        # (docs/decisions.md). torch's OpenMP is untouched.
        threadpool_limits(limits=1, user_api="blas")
        return cls(model, device, reader, dynamics)

    # ------------------------------------------------------------ worlds and players

    def create_world(self, *, prompt: str, seed: int) -> str:
        reading = self.read_prompt(prompt)
        world = WorldState(
            world_id=uuid.uuid4().hex,
            seed=int(seed) & 0x7FFFFFFF,
            prompt=reading.text,
            biome_probs=reading.biome_probs,
            weather=reading.weather,
            minute=spec.TIME_MINUTES[reading.time],
            text_emb=reading.text_emb,
        )
        with self._canvas:
            self.worlds[world.world_id] = world
        if reading.creature >= 0:
            for _ in range(INITIAL_CREATURES):
                self._spawn_creature(world, reading.creature, 0, 0)
        self._grow({world.world_id: self._needed_chunks(world, [(0, 0)])})
        for n, match in enumerate(reading.objects):
            # where the first player meets it: a few tiles off the spawn point, seeded
            h = spec.mix_hash(world.seed, 131, n)
            x, y = ((h % 7) - 3) * 2 * spec.TILE, (3 + (h >> 8) % 3) * spec.TILE * (-1) ** n
            self._add_object(world, match.concept, x, y)
        return world.world_id

    def read_prompt(self, prompt: str) -> PromptReading:
        """What a world's description asks for (no world is made); PromptError on bad text."""
        return read_prompt(prompt, model=self.model, reader=self.reader, device=self.device)

    def add_player(self, world_id: str, slot: int | None = None) -> str:
        """A new avatar at its slot's spawn point; ``slot`` (its colour) defaults to the next."""
        world = self._world(world_id)
        slot = world.next_slot if slot is None else int(slot)
        player_id = uuid.uuid4().hex
        with self._canvas:  # journaled in the order it happened, terrain thread or not
            self._join(world, player_id, slot)
            self._grow({world_id: self._needed_chunks(world, [spec.player_spawn(slot)])})
            self._log(world, jn.Join(player_id, slot))
        return player_id

    def _join(self, world: WorldState, player_id: str, slot: int) -> None:
        world.players.append(PlayerState(player_id, slot, *spec.player_spawn(slot)))
        world.next_slot = max(world.next_slot, slot) + 1
        self._player_world[player_id] = world.world_id
        self._frames[player_id] = world.t  # a newcomer's camera starts at the present

    def remove_player(self, player_id: str) -> None:
        self._frames.pop(player_id, None)
        world_id = self._player_world.pop(player_id, None)
        if world_id in self.worlds:
            world = self.worlds[world_id]
            with self._canvas:
                world.players = [p for p in world.players if p.player_id != player_id]
                self._log(world, jn.Leave(player_id))

    def drop_world(self, world_id: str) -> None:
        with self._canvas:
            world = self.worlds.pop(world_id, None)
            self.journals.pop(world_id, None)
            self._forget_ticks(world_id)
        for p in world.players if world else []:
            self._player_world.pop(p.player_id, None)
            self._frames.pop(p.player_id, None)

    def players(self, world_id: str) -> list[str]:
        return [p.player_id for p in self._world(world_id).players]

    def slots(self, world_id: str) -> dict[str, int]:
        """player id -> slot (avatar colour) of each of the world's players."""
        return {p.player_id: p.slot for p in self._world(world_id).players}

    def reseat(self, player_id: str, slot: int) -> None:
        """An avatar takes another slot, where it stands (a fork's player, as slot 0)."""
        world = self._world(self._player_world[player_id])
        with self._canvas:
            for p in world.players:
                if p.player_id == player_id:
                    p.slot = int(slot)  # before a recording's segment starts: not journaled

    def apply_event(self, world_id: str, text: str, near: str | None = None) -> None:
        """Change a running world from text, around player ``near`` (default: the first);
        raises UnsupportedEvent if nothing is recognised."""
        choice = self.read_event(text)
        change = jn.Change(
            *(choice[k] for k in ("weather", "time", "creature", "thing")),
            tuple(m.concept.name for m in choice["objects"]),
            near or "",
            choice.get("process", -1),
        )
        self.apply_change(world_id, change)

    def apply_change(self, world_id: str, change: jn.Change) -> None:
        """Change a running world as an event text was read (journaled)."""
        world = self._world(world_id)
        with self._canvas:
            self._change(world, change)
            self._log(world, change)

    def _change(self, world: WorldState, change: jn.Change) -> None:
        by = [p for p in world.players if p.player_id == change.near]
        anchor = (by or world.players or [PlayerState("", 0, 0, 0)])[0]
        if change.weather >= 0:
            world.weather = change.weather
        if change.time >= 0:
            world.minute = spec.TIME_MINUTES[change.time]
        if change.creature >= 0:
            self._spawn_creature(world, change.creature, anchor.x, anchor.y)
        if change.thing >= 0:
            self._place(world, change.thing, anchor.x, anchor.y)
        for n, name in enumerate(change.objects):
            self._add_object(world, self._concept(name), anchor.x + n * 3 * spec.TILE, anchor.y)
        if change.process == spec.PROCESSES.index("fire"):
            self._start_fire(world, anchor.x, anchor.y)

    def _start_fire(self, world: WorldState, x: int, y: int) -> None:
        """A fire starts where a pond would be placed (three tiles right of the player); the
        dynamics decide what burns and how far it spreads."""
        cells = self._grow_under(world, spec.place_cells(spec.THINGS.index("pond"), x, y))
        with self._canvas:
            self.ignite(world, [(tx, ty) for tx, ty, _ in cells])

    def read_event(self, text: str) -> dict:
        """What an event text asks for (`prompts.read_event`); UnsupportedEvent when it is
        nothing the model can do."""
        return read_event(text, model=self.model, reader=self.reader, device=self.device)

    def nearest_events(self, text: str, n: int = SUGGESTIONS) -> tuple[str, ...]:
        """The plain phrasings of the `n` events nearest in meaning to a text."""
        return nearest_events(text, n)

    def snapshot(self, world_id: str, kept_at: float = 0.0) -> bytes:
        """The world's exact state; ``kept_at`` (wall-clock seconds) marks a Live world kept
        between sessions, which catches up on the time it stood empty when it comes back."""
        with self._canvas:
            world = self._world(world_id)
            self._settle(world)
            world.kept_at = kept_at
            try:
                return snapshot_bytes(world)
            finally:
                world.kept_at = 0.0

    def restore(self, data: bytes, *, new_id: bool = False) -> str:
        """A world back from its snapshot, under its own id (failover) or a new one (a fork
        of a recording, beside the world it came from)."""
        world = state_from_bytes(data)
        for o in world.objects:
            self._sprite_row(self._concept(o.concept))
        if new_id:  # players too: the world it came from may be beside it, its ids in use
            world.world_id = uuid.uuid4().hex
            for p in world.players:
                p.player_id = uuid.uuid4().hex
        self.drop_world(world.world_id)
        with self._canvas:
            self.worlds[world.world_id] = world
        for p in world.players:
            self._player_world[p.player_id] = world.world_id
            self._frames[p.player_id] = world.t
        return world.world_id

    def _concept(self, name: str) -> Concept:
        known = self._concepts
        if known is None:
            known = self._concepts = {c.name: c for c in self.reader.concepts}
        if name not in known:
            raise SnapshotError(
                f"the world holds {name!r}, which this vocabulary lacks: it was made by other"
                " world model weights"
            )
        return known[name]

    # ------------------------------------------------------------ journals and replays

    def checkpoint(self, world_id: str) -> tuple[list[jn.Entry], bytes, dict[str, int]]:
        """Journal a world from now on (if it is not yet) and take, at one instant: its journal
        since the last call, its snapshot, and the frames each of its players' cameras has
        made (a camera behind the world's furthest one does not tick it: a replay starts from
        both). A recording starts, and can be resumed, at any such point."""
        with self._canvas:
            world = self._world(world_id)
            self._settle(world)
            entries = self.journals.get(world_id, [])
            self.journals[world_id] = []
            frames = {p.player_id: self._frames.get(p.player_id, world.t) for p in world.players}
            return entries, snapshot_bytes(world), frames

    def take_journal(self, world_id: str) -> list[jn.Entry]:
        """The world's journal since the last call (and it goes on); [] if not journaled."""
        with self._canvas:
            if world_id not in self.journals:
                return []
            entries, self.journals[world_id] = self.journals[world_id], []
            return entries

    def _log(self, world: WorldState, entry: jn.Entry) -> None:
        journal = self.journals.get(world.world_id)
        if journal is not None:
            journal.append(entry)

    def replayer(self) -> WorldEngine:
        """An engine on the same weights that replays journals: it never generates terrain
        (the journal holds it), so nothing it does depends on what this one is doing."""
        engine = WorldEngine(self.model, str(self.device), self.reader, self.dynamics, self.decoder)
        engine.generate = False
        return engine

    def start_replay(self, snapshot: bytes, frames: dict[str, int]) -> str:
        """A world to replay a journal on, from a snapshot `checkpoint` took with its frames."""
        world_id = self.restore(snapshot)
        self._frames.update({p: int(n) for p, n in frames.items() if p in self._player_world})
        return world_id

    @torch.no_grad()
    def replay_op(
        self, world_id: str, entry: jn.Entry, cameras: frozenset[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Apply one journal entry to a world as the engine first did; an `Advance` returns
        the frames of the given cameras (player ids; None: none, the state only)."""
        world = self._world(world_id)
        if isinstance(entry, jn.Chunk):
            tokens = np.frombuffer(entry.tokens, np.uint8).reshape(spec.CHUNK, spec.CHUNK).copy()
            world.chunks[(entry.cx, entry.cy)] = tokens
        elif isinstance(entry, jn.Join):
            self._join(world, entry.player_id, entry.slot)
        elif isinstance(entry, jn.Leave):
            self.remove_player(entry.player_id)
        elif isinstance(entry, jn.Change):
            self._change(world, entry)
        elif isinstance(entry, jn.Advance):
            players = {p.player_id: p for p in world.players}
            if not entry.moves or any(m[0] not in players for m in entry.moves):
                raise jn.JournalError("a step of players the world does not hold")
            moving = [players[pid] for pid, *_ in entry.moves]
            lengths = {pid: n for pid, _, _, n in entry.moves}
            dirs = {pid: (dx, dy) for pid, dx, dy, _ in entry.moves}
            held: dict[int, set[str]] = {}
            for i, pid in entry.held:
                held.setdefault(i, set()).add(pid)
            scenes, owners = self._advance_world(world, moving, dirs, lengths, held, cameras)
            self._hand_on()
            if not scenes:
                return {}
            order = sorted(range(len(scenes)), key=owners.__getitem__)
            frames = self._render([scenes[i] for i in order])
            out, start = {}, 0
            for pid in sorted(set(owners)):
                n = owners.count(pid)
                out[pid], start = frames[start : start + n], start + n
            return out
        else:
            raise jn.JournalError(f"not a journal entry: {entry!r}")
        return {}

    # ------------------------------------------------------------ stepping

    @torch.no_grad()
    def step(self, keys: dict[str, frozenset[str]], chunk: dict[str, int]) -> dict[str, np.ndarray]:
        """One batched call. keys: player_id -> held keys now; chunk: player_id -> frames
        wanted (1..max_chunk). Returns player_id -> uint8 array (T, H, W, 3), T == chunk[pid].
        Players of the same world step together; every world in the call shares one forward."""
        lengths = self._check_chunks(keys, chunk)
        by_world: dict[str, list[PlayerState]] = {}
        for pid in lengths:
            world = self._world(self._player_world[pid])
            player = next(p for p in world.players if p.player_id == pid)
            by_world.setdefault(world.world_id, []).append(player)
        if self.grow_in_step:
            late = {
                wid: self._needed_chunks(self.worlds[wid], [(p.x, p.y) for p in players])
                for wid, players in by_world.items()
            }
            self.late_chunks += sum(len(v) for v in late.values())
            self._grow(late)
        else:
            self._terrain_wake.set()  # the players move on: the terrain thread looks ahead
        scenes: list[tuple] = []
        owners: list[str] = []
        for wid, players in by_world.items():
            world = self.worlds[wid]
            dirs = {p.player_id: spec.keys_to_dir(keys.get(p.player_id, ())) for p in players}
            made, who = self._advance_world(world, players, dirs, lengths)
            scenes += made
            owners += who
        self._hand_on()  # the ticks cut in this step are made meanwhile
        # rendered owner by owner, so each player's frames are one slice of the batch
        order = sorted(range(len(scenes)), key=owners.__getitem__)
        frames = self._render([scenes[i] for i in order])
        out, start = {}, 0
        for pid in sorted(lengths):
            out[pid] = frames[start : start + lengths[pid]]
            start += lengths[pid]
        return out

    def _advance_world(
        self, world: WorldState, players, dirs, lengths, held=None, cameras=None
    ) -> tuple[list[tuple], list[str]]:
        """One world's frames of a step, journaled: -> (scenes, their owners) of the players
        in ``cameras`` (None: all). ``held`` (a replay): frame -> the players held there.
        Under the canvas lock, so no chunk lands mid-step (the journal's order is the truth)."""
        scenes, owners, was_held = [], [], []
        with self._canvas:
            for i in range(max(lengths[p.player_id] for p in players)):
                moving = [p for p in players if i < lengths[p.player_id]]
                frame_held = None if held is None else held.get(i, set())
                for pid in self._advance(world, moving, dirs, frame_held):
                    was_held.append((i, pid))
                for p in moving:
                    if cameras is None or p.player_id in cameras:
                        scenes.append(self._scene(world, p))
                        owners.append(p.player_id)
            if world.world_id in self.journals:  # only recorded worlds pay for the entry
                moves = tuple(
                    (p.player_id, *dirs[p.player_id], lengths[p.player_id]) for p in players
                )
                self._log(world, jn.Advance(moves, tuple(was_held)))
        return scenes, owners

    def _check_chunks(self, keys, chunk) -> dict[str, int]:
        lengths = {}
        for pid, n in chunk.items():
            if pid not in self._player_world:
                raise KeyError(f"unknown player {pid!r}")
            if not isinstance(n, int) or not 1 <= n <= self.max_chunk:
                raise ValueError(f"chunk for {pid!r} must be 1..{self.max_chunk}, got {n!r}")
            lengths[pid] = n
        for pid in keys:
            if pid not in self._player_world:
                raise KeyError(f"unknown player {pid!r}")
        return lengths

    def _advance(
        self, world: WorldState, moving: list[PlayerState], dirs, held: set | None = None
    ) -> list[str]:
        """One frame of the stepping players: each moves; creatures wander and the clock ticks
        once per frame of the world, not once per camera. In a shared world the cameras step in
        batches of their own, so the world keeps the pace of its furthest camera (``_frames``:
        frames made per player) instead of running as many times faster as it has players.
        -> the players held at the edge of late terrain (``held``: a replay's, as they were)."""

        memo = world.memo()  # the same tiles are probed frame after frame

        blocked = blocked_tiles(world, memo)

        def is_solid(tx: int, ty: int) -> bool:
            solid = memo.get((tx, ty))
            if solid is None:
                cover = world.cover_at(tx, ty)  # fire stops anyone; ash is burnt, walkable
                solid = memo[(tx, ty)] = cover == FIRE or (
                    cover != ASH
                    and ((tx, ty) in blocked or bool(self.solid[world.token_at(tx, ty)]))
                )
            return solid

        ahead, was_held = False, []
        for p in moving:
            dx, dy = dirs[p.player_id]
            x, y = spec.move(p.x, p.y, dx, dy, spec.PLAYER_SPEED, is_solid)
            if (x, y) != (p.x, p.y):
                self.moved_frames += 1
                if held is not None:
                    wait = p.player_id in held
                else:
                    wait = not self.grow_in_step and not self._view_ready(world, x, y)
                if wait:
                    self.held_frames += 1  # the terrain there is late: wait at its edge
                    was_held.append(p.player_id)
                else:
                    p.x, p.y = x, y
            made = self._frames.get(p.player_id, world.t) + 1
            self._frames[p.player_id] = made
            ahead |= made > world.t
        if not ahead:
            return was_held
        for c in world.creatures:  # the way the dynamics chose this tick
            dx, dy = spec.DIRECTIONS[c.heading]
            c.x, c.y = spec.move(c.x, c.y, dx, dy, spec.CREATURE_SPEED, is_solid)
        move_objects(world, is_solid)
        world.t += 1
        if world.t % spec.FRAMES_PER_MINUTE == 0:
            world.minute = (world.minute + 1) % spec.DAY_MINUTES
        if world.t % spec.TICK_FRAMES == 0:
            self._tick(world)
        return was_held

    def _sprite_row(self, concept) -> int:
        """The row of the sprite table a concept is drawn from, drawn on first use."""
        row = self._sprite_rows.get(concept.name)
        if row is None:
            sprite = torch.from_numpy(self.reader.sprite(concept)).float() / 255.0
            self._sprite_table = torch.cat([self._sprite_table, sprite[None]])
            row = self._sprite_rows[concept.name] = len(self._sprite_table) - 1
        return row

    def _add_object(self, world: WorldState, concept, x: int, y: int) -> None:
        """A thing of the open vocabulary beside (x, y), where its behaviour lets it be: a
        swimmer on the nearest water (or on a pond it brings), the rest right of the spot."""
        behaviour = self.reader.behaviour(concept)
        self._sprite_row(concept)
        cx, cy = spec.thing_center(x, y)
        if behaviour.motion == "swims":
            reach = (SWIM_SEARCH + 1) * spec.TILE
            self._grow({world.world_id: self._needed_chunks(world, [(x, y)], reach=reach)})
            cx, cy = self._water_near(world, cx, cy)
        ident = world.spawned
        world.spawned += 1
        with self._canvas:
            world.objects.append(
                ObjectState(
                    concept.name,
                    BEHAVIOURS.index(behaviour.motion),
                    behaviour.light,
                    cx * spec.TILE + spec.TILE // 2,
                    cy * spec.TILE + spec.TILE // 2,
                    ident,
                )
            )
            del world.objects[:-MAX_OBJECTS]
            world.edits += 1  # what blocks changed: the memo starts again

    def _water_near(self, world: WorldState, cx: int, cy: int) -> tuple[int, int]:
        """The nearest water to tile (cx, cy), or a pond brought beside it."""
        spot = water_near(world, cx, cy)
        if spot is not None:
            return spot
        self._place(world, spec.THINGS.index("pond"), (cx - 3) * spec.TILE, cy * spec.TILE)
        return cx, cy

    def _scene(self, world: WorldState, viewer: PlayerState) -> tuple:
        return scene(world, viewer, self._sprite_rows)

    @staticmethod
    def _view_ready(world: WorldState, x: int, y: int) -> bool:
        """Whether every chunk the decode window of a camera at (x, y) reads exists."""
        return world.has_chunks(x, y, spec.FRAME // 2 + 2 * spec.TILE)

    def _render(self, scenes: list[tuple]) -> np.ndarray:
        """-> (len(scenes), F', F', 3) uint8."""
        return render(self.decoder, scenes, self._sprite_table, self.device)

    def _spawn_creature(self, world: WorldState, kind: int, x: int, y: int) -> None:
        dx, dy = spec.spawn_offset(world.seed, world.t, world.spawned)
        world.creatures.append(CreatureState(kind, x + dx, y + dy, world.spawned))
        world.spawned += 1

    def _place(self, world: WorldState, thing: int, x: int, y: int) -> None:
        cells = self._grow_under(world, spec.place_cells(thing, x, y))
        with self._canvas:
            for tx, ty, token in cells:
                world.set_token(tx, ty, token)
            world.things.append(thing)

    def _grow_under(self, world: WorldState, cells: list[tuple[int, int, int]]) -> list:
        """Make the chunks under these cells (tile x, tile y, token) if missing; -> cells."""
        spots = [(tx * spec.TILE, ty * spec.TILE) for tx, ty, _ in cells]
        self._grow({world.world_id: self._needed_chunks(world, spots, reach=spec.TILE)})
        return cells

    # ------------------------------------------------------------ helpers

    def describe(self, world_id: str) -> dict:
        """A world's live conditions by name (read-only), for text about it (`narrative`)."""
        world = self._world(world_id)
        return {
            "biome": spec.BIOMES[world.biome],
            "biomes": shown_biomes(world.biome_probs),
            "weather": spec.WEATHERS[world.weather],
            "time": spec.time_name(world.minute),
            "clock": spec.clock_text(world.minute),
            "creatures": [spec.CREATURES[c.kind] for c in world.creatures],
            "things": [spec.THINGS[k] for k in world.things] + [o.concept for o in world.objects],
            "covers": covers_near_players(world),
        }

    def _world(self, world_id: str) -> WorldState:
        try:
            return self.worlds[world_id]
        except KeyError:
            raise KeyError(f"unknown world {world_id!r}") from None
