"""Anything a player types: things of the open vocabulary come into the world, drawn by the
sprite generator, moving as the behaviour head says, kept exactly by snapshots."""

import json
import struct
import zlib

import numpy as np
import pytest

from inference.world import spec
from inference.world import state as world_state
from inference.world.concepts import BEHAVIOURS
from inference.world.decoder import scaled
from inference.world.engine import UnsupportedEvent
from inference.world.objects import is_water_token
from inference.world.state import SnapshotError


def _frame(engine, pid, keys=frozenset(), n=1):
    return engine.step({pid: keys}, {pid: n})[pid][-1]


def _things(engine, wid):
    return {o.concept: o for o in engine.worlds[wid].objects}


def _thing(engine, wid, word):
    """The thing named by ``word`` or a kind of it ("lighthouse", "tracked robot")."""
    (found,) = [o for o in engine.worlds[wid].objects if word in o.concept.split()][:1]
    return found


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("a dragon flies over the lighthouse", {"dragon", "lighthouse"}),
        ("a windmill appears", {"windmill"}),
        ("a horse gallops by", {"horse"}),
        ("put a snowman here", {"snowman"}),
        ("a robot walks up to me", {"robot"}),
        ("a castle rises from the ground", {"castle"}),
    ],
)
def test_an_event_naming_a_thing_the_old_model_lacked_is_applied(engine, clear_world, text, names):
    wid, pid = clear_world
    before = _frame(engine, pid)
    engine.apply_event(wid, text, near=pid)
    for name in names:  # itself, or a kind of it ("a robot" may come as a tracked robot)
        assert any(name in got.split() for got in _things(engine, wid)), (text, name)
    after = _frame(engine, pid)
    # drawn right of the player, in the frame the player sees
    assert (after.astype(int) - before).any(-1)[:, engine.frame_size // 2 :].sum() > 40, text


def test_text_naming_nothing_drawable_is_still_unsupported_and_changes_nothing(engine, clear_world):
    wid, _ = clear_world
    before = engine.snapshot(wid)
    for text in ("the crowd goes wild", "everyone feels hopeful", "I wonder what happens next"):
        with pytest.raises(UnsupportedEvent):
            engine.apply_event(wid, text)
    assert engine.snapshot(wid) == before


def test_a_thing_the_model_already_has_comes_once_as_its_own(engine, clear_world):
    wid, _ = clear_world
    choice = engine.read_event("a fox appears")
    assert choice["creature"] == spec.CREATURES.index("fox")
    assert choice["objects"] == []


def test_behaviour_follows_meaning(engine):
    reader = engine.reader
    by_name = {c.name: c for c in reader.concepts}
    assert reader.behaviour(by_name["dragon"]).motion == "flies"
    assert reader.behaviour(by_name["sailboat"]).motion == "swims"
    lighthouse = reader.behaviour(by_name["lighthouse"])
    assert (lighthouse.motion, lighthouse.light) == ("blocks", True)
    assert reader.behaviour(by_name["mushroom"]).motion == "walkable"


def test_a_flier_crosses_what_blocks_and_a_blocker_stays(engine):
    wid = engine.create_world(prompt="a dense green forest", seed=11)
    pid = engine.add_player(wid)
    engine.apply_event(wid, "a dragon flies over the lighthouse", near=pid)
    dragon, tower = _thing(engine, wid, "dragon"), _thing(engine, wid, "lighthouse")
    start = [(dragon.x, dragon.y), (tower.x, tower.y)]
    engine.step({pid: frozenset()}, {pid: 8})
    engine.step({pid: frozenset()}, {pid: 8})
    assert (dragon.x, dragon.y) != start[0]
    assert (tower.x, tower.y) == start[1]
    engine.drop_world(wid)


def test_a_boat_goes_on_water(engine):
    wid = engine.create_world(prompt="a sandy beach by the sea", seed=5)
    pid = engine.add_player(wid)
    engine.apply_event(wid, "a boat sails by", near=pid)
    world = engine.worlds[wid]
    (boat,) = [o for o in world.objects if BEHAVIOURS[o.motion] == "swims"]
    for _ in range(6):
        engine.step({pid: frozenset()}, {pid: 8})
        token = world.token_at(boat.x // spec.TILE, boat.y // spec.TILE)
        assert is_water_token(token), token
    engine.drop_world(wid)


def test_a_blocking_thing_stops_the_player(engine, clear_world):
    wid, pid = clear_world
    player = engine.worlds[wid].players[0]
    start = engine.snapshot(wid)

    def walk_right() -> int:
        for _ in range(10):
            engine.step({pid: frozenset("d")}, {pid: 8})
        return player.x

    free = walk_right()
    engine.restore(start)
    player = engine.worlds[wid].players[0]
    engine.apply_event(wid, "a lighthouse stands here", near=pid)
    tower = _thing(engine, wid, "lighthouse")
    held = walk_right()
    assert held < tower.x - spec.TILE < free  # held on its near side, where it walked on before


def test_a_light_giver_lights_the_night_around_it(engine, clear_world):
    wid, pid = clear_world
    world = engine.worlds[wid]
    world.minute = spec.TIME_MINUTES[spec.TIMES.index("night")]
    dark = _frame(engine, pid).astype(int)
    engine.apply_event(wid, "a lantern", near=pid)
    lit = _frame(engine, pid).astype(int)
    lantern = _thing(engine, wid, "lantern")
    x = int(scaled(lantern.x - (world.players[0].x - spec.FRAME // 2)))  # drawn at 1.5x
    y = int(scaled(lantern.y - (world.players[0].y - spec.FRAME // 2)))
    ring = (slice(y - 24, y + 24), slice(x + 15, x + 30))  # beside the sprite, on the ground
    assert lit[ring].mean() > dark[ring].mean() + 10


def test_a_prompt_places_what_it_names_where_the_player_meets_it(engine):
    reading = engine.read_prompt("a lighthouse on a rocky coast")
    assert "lighthouse" in reading.names()["things"]
    assert reading.names()["lacks"] is None
    wid = engine.create_world(prompt="a lighthouse on a rocky coast", seed=3)
    pid = engine.add_player(wid)
    tower = _thing(engine, wid, "lighthouse")
    player = engine.worlds[wid].players[0]
    assert abs(tower.x - player.x) < spec.FRAME // 2 and abs(tower.y - player.y) < spec.FRAME // 2
    assert _frame(engine, pid).shape == (engine.frame_size, engine.frame_size, 3)
    engine.drop_world(wid)


def test_snapshots_keep_the_open_vocabulary_exactly(engine):
    wid = engine.create_world(prompt="a village of windmills by a lake", seed=21)
    pid = engine.add_player(wid)
    engine.apply_event(wid, "a dragon flies over the lighthouse", near=pid)
    engine.step({pid: frozenset("d")}, {pid: 8})
    data = engine.snapshot(wid)
    ahead = engine.step({pid: frozenset("w")}, {pid: 8})[pid]
    engine.restore(data)
    again = engine.step({pid: frozenset("w")}, {pid: 8})[pid]
    assert np.array_equal(ahead, again)
    assert engine.snapshot(wid) == engine.snapshot(engine.restore(engine.snapshot(wid)))
    engine.drop_world(wid)


def _as_version_2(data: bytes) -> bytes:
    """The same world as the previous format wrote it: version 2, no open-vocabulary things."""
    body = data[world_state._HEAD.size :]
    (n,) = struct.unpack_from(">I", body)
    head = json.loads(body[4 : 4 + n])
    assert head.pop("objects") == []
    head = json.dumps(head, separators=(",", ":")).encode()
    body = struct.pack(">I", len(head)) + head + body[4 + n :]
    return world_state._HEAD.pack(world_state.MAGIC, 2, zlib.crc32(body), len(body)) + body


def test_a_world_made_before_the_open_vocabulary_still_loads(engine, clear_world):
    wid, pid = clear_world
    old = _as_version_2(engine.snapshot(wid))
    canvas = {k: v.copy() for k, v in engine.worlds[wid].chunks.items()}
    assert engine.restore(old) == wid
    world = engine.worlds[wid]
    assert world.objects == [] and world.chunks.keys() == canvas.keys()
    assert all(np.array_equal(world.chunks[k], canvas[k]) for k in canvas)
    assert _frame(engine, pid).shape == (engine.frame_size, engine.frame_size, 3)
    assert engine.snapshot(wid)[4:6] == (4).to_bytes(2, "big")  # saved again as version 4


def test_a_snapshot_of_a_thing_this_vocabulary_lacks_says_so(engine, clear_world):
    wid, pid = clear_world
    engine.apply_event(wid, "a windmill appears", near=pid)
    data = engine.snapshot(wid).replace(b'"windmill"', b'"zzqxwind"')
    body = data[world_state._HEAD.size :]
    forged = world_state._HEAD.pack(world_state.MAGIC, 3, zlib.crc32(body), len(body)) + body
    with pytest.raises(SnapshotError, match="other world model weights"):
        engine.restore(forged)
    assert engine.worlds[wid].objects  # the running world is untouched
