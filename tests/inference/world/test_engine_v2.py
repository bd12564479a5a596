"""What the v2 model adds: 128x128 frames, things events place, continuous time of day, mixed
biomes, hard-edged sprites, and terrain grown on a thread of its own (a late chunk holds the
player at its edge instead of being made in the step)."""

import time

import numpy as np
import pytest
import torch

from inference.training.evaluation.prompts import (
    WRITTEN_EVENTS_C,
    kind_counts,
    kind_mix_distance,
    simulator_kind_mix,
    written_events,
    written_prompts,
)
from inference.world import spec
from inference.world.decoder import out_side, paste_layer, scaled
from inference.world.engine import UnsupportedEvent
from inference.world.model import ModelConfig, Renderer


def _frame(engine, pid, keys=frozenset(), n=1):
    return engine.step({pid: keys}, {pid: n})[pid][-1]


def test_the_served_frames_are_the_frames_the_renderer_was_trained_to_draw(engine):
    # Frames are served by gathers from the renderer's tables (``_forward_gather``) and trained
    # through one-hot selection matmuls (``_forward_select``): one function, two ways.
    prompts = ("a jungle at dusk with fireflies", "city streets in the rain", "a snowy night")
    wids = [engine.create_world(prompt=p, seed=70 + i) for i, p in enumerate(prompts)]
    pids = [engine.add_player(w) for w in wids]
    engine.add_player(wids[0])  # a second avatar in view
    engine.step({p: frozenset("ds") for p in pids}, {p: 3 for p in pids})
    scenes = [engine._scene(engine.worlds[w], engine.worlds[w].players[0]) for w in wids]
    scenes += [engine._scene(engine.worlds[wids[0]], engine.worlds[wids[0]].players[1])]
    tokens, offset, weather, minute, phase, sprites = (
        torch.from_numpy(np.stack([np.asarray(s[i]) for s in scenes])).long() for i in range(6)
    )
    assert (sprites[:, :, 0] >= 0).sum() >= len(scenes) + 1  # avatars (and creatures) drawn
    renderer = engine.model.renderer
    with torch.no_grad():
        served = renderer.frames(tokens, offset, weather, minute, phase, sprites).int()
        trained = renderer._forward_select(tokens, offset, weather, minute, phase, sprites)
    trained = (trained * 255 + 0.5).clamp(0, 255).to(torch.uint8).int()
    assert served.shape == (len(scenes), spec.FRAME, spec.FRAME, 3)
    assert (served - trained).abs().max() <= 1  # float rounding, nothing more
    assert (served != trained).float().mean() < 0.01
    for wid in wids:
        engine.drop_world(wid)


def test_served_frames_match_the_trained_renderer_at_every_offset_and_frame_edge(engine):
    # Random scenes the engine rarely makes: every sub-tile offset, every overlay phase, and
    # sprites overlapping each other and cut by each edge of the frame.
    g = torch.Generator().manual_seed(5)
    b, w = 24, spec.WINDOW
    tokens = torch.randint(0, spec.NUM_TOKENS, (b, w, w), generator=g)
    offset = torch.stack([torch.arange(b) % spec.TILE, (torch.arange(b) * 3) % spec.TILE], 1)
    weather = torch.arange(b) % len(spec.WEATHERS)
    minute = torch.randint(0, spec.DAY_MINUTES, (b,), generator=g)
    phase = torch.randint(0, spec.OVERLAY, (b, 2), generator=g)
    sprites = torch.full((b, spec.MAX_SPRITES, 3), -1, dtype=torch.long)
    edges = torch.tensor([-spec.SPRITE + 1, -3, 0, 60, 62, spec.FRAME - 5, spec.FRAME - 1])
    for i in range(b):
        for e in range(1 + i % spec.MAX_SPRITES):
            sprites[i, e, 0] = (i + e) % spec.SPRITE_KINDS
            sprites[i, e, 1] = edges[(i + e) % len(edges)]
            sprites[i, e, 2] = edges[(2 * i + e) % len(edges)]
    renderer = engine.model.renderer
    with torch.no_grad():
        served = renderer.frames(tokens, offset, weather, minute, phase, sprites).int()
        into = torch.empty(b, spec.FRAME, spec.FRAME, 3, dtype=torch.uint8)
        renderer.frames(tokens, offset, weather, minute, phase, sprites, out=into)
        trained = renderer._forward_select(tokens, offset, weather, minute, phase, sprites)
    trained = (trained * 255 + 0.5).clamp(0, 255).to(torch.uint8).int()
    assert torch.equal(into.int(), served)
    assert (served - trained).abs().max() <= 1
    assert (served != trained).float().mean() < 0.01


def test_a_renderer_still_training_draws_uint8_frames_too():
    renderer = Renderer(ModelConfig())  # not frozen: its tables carry gradients
    b, w = 2, spec.WINDOW
    zeros = torch.zeros(b, dtype=torch.long)
    frames = renderer.frames(
        torch.zeros(b, w, w, dtype=torch.long), torch.zeros(b, 2, dtype=torch.long), zeros,
        torch.full((b,), 720), torch.zeros(b, 2, dtype=torch.long),
        torch.full((b, spec.MAX_SPRITES, 3), -1, dtype=torch.long),
    )  # fmt: skip
    assert frames.dtype == torch.uint8 and frames.shape == (b, spec.FRAME, spec.FRAME, 3)


def test_frames_are_128_pixels_square(engine, clear_world):
    _, pid = clear_world
    assert _frame(engine, pid).shape == (192, 192, 3)


@pytest.mark.parametrize("thing", ["campfire", "house", "bridge", "statue", "tent", "fence"])
def test_a_thing_event_places_its_tiles_beside_the_player_and_the_frame_shows_them(
    engine, clear_world, thing
):
    wid, pid = clear_world
    world = engine.worlds[wid]
    before = _frame(engine, pid)
    engine.apply_event(wid, spec.EVENT_PHRASES["thing"][thing], near=pid)
    player = world.players[0]
    token = spec.thing_token(spec.THINGS.index(thing))
    cells = spec.place_cells(spec.THINGS.index(thing), player.x, player.y)
    assert all(world.token_at(tx, ty) == token for tx, ty, _ in cells)
    assert engine.describe(wid)["things"] == [thing]
    after = _frame(engine, pid)
    # the thing's tiles are three tiles right of the avatar: the frame (at 1.5x) changes there
    cx, cy = (int(scaled(v)) for v in (spec.FRAME // 2 + 3 * spec.TILE, spec.FRAME // 2))
    t = int(scaled(spec.TILE))
    patch = (slice(cy - t, cy + t), slice(cx - t, cx + t))
    assert np.abs(after[patch].astype(int) - before[patch].astype(int)).sum() > 0


def test_a_solid_thing_blocks_the_way(engine, clear_world):
    wid, pid = clear_world
    engine.apply_event(wid, spec.EVENT_PHRASES["thing"]["house"], near=pid)
    player = engine.worlds[wid].players[0]
    x0 = player.x
    engine.step({pid: frozenset("d")}, {pid: 16})
    house_left = (spec.thing_center(x0, player.y)[0] - 1) * spec.TILE
    assert player.x + spec.BOX_HALF <= house_left  # stopped at the house's wall


def test_time_of_day_is_continuous_and_the_light_follows_it(engine, clear_world):
    wid, pid = clear_world
    world = engine.worlds[wid]
    world.minute = 17 * 60  # late afternoon, toward dusk and night
    brightness, minutes = [], []
    for _ in range(12):
        brightness.append(_frame(engine, pid, n=16).mean())
        minutes.append(world.minute)
    world.minute = 17 * 60 + 50
    start = world.minute
    for _ in range(2):
        engine.step({pid: frozenset()}, {pid: spec.FRAMES_PER_MINUTE})
    assert world.minute == start + 2  # a minute every FRAMES_PER_MINUTE world frames
    # 17:00 -> about 17:19 (12 x 16 frames): the evening light comes on gradually
    assert minutes[-1] > minutes[0]
    assert brightness[-1] < brightness[0]
    steps = np.abs(np.diff(brightness))
    assert steps.max() < 0.5 * (brightness[0] - brightness[-1]) + 1e-6  # no jump


def test_night_falls_sets_the_night_and_the_frame_darkens(engine, clear_world):
    wid, pid = clear_world
    day = _frame(engine, pid)
    engine.apply_event(wid, "night falls")
    assert engine.describe(wid)["time"] == "night"
    assert _frame(engine, pid).mean() < 0.7 * day.mean()


def test_a_prompt_mixing_two_biomes_conditions_the_terrain_on_both(engine):
    wid = engine.create_world(prompt="a steamy jungle running down to a sandy beach", seed=21)
    world = engine.worlds[wid]
    assert set(engine.describe(wid)["biomes"]) == {"jungle", "beach"}
    mix = world.biome_probs[[spec.BIOMES.index("jungle"), spec.BIOMES.index("beach")]]
    assert mix.min() >= 0.35 and abs(mix.sum() - 1) < 1e-6  # as the generator was trained
    assert engine.describe(engine.create_world(prompt="a quiet desert", seed=2))["biomes"] == [
        "desert"
    ]
    engine.drop_world(wid)


def _canvas_biomes(world) -> np.ndarray:
    tokens = np.concatenate([c.ravel() for c in world.chunks.values()]).astype(int)
    return np.bincount(tokens[tokens < spec.BIOME_TOKENS] // 4, minlength=len(spec.BIOMES))


def test_a_mixed_world_grows_both_biomes_in_patches_and_a_single_one_only_its_own(engine):
    wid = engine.create_world(prompt="a steamy jungle running down to a sandy beach", seed=21)
    pid = engine.add_player(wid)
    for _ in range(12):  # walk a few chunks into new land
        engine.step({pid: frozenset("d")}, {pid: 16})
    world = engine.worlds[wid]
    counts = _canvas_biomes(world)
    jungle, beach = counts[spec.BIOMES.index("jungle")], counts[spec.BIOMES.index("beach")]
    assert jungle + beach == counts.sum()  # nothing of a third biome
    assert min(jungle, beach) >= 0.15 * counts.sum()  # both, not a sprinkle of one
    engine.drop_world(wid)
    wid = engine.create_world(prompt="a quiet desert", seed=2)
    counts = _canvas_biomes(engine.worlds[wid])
    assert counts[spec.BIOMES.index("desert")] == counts.sum()
    engine.drop_world(wid)


KIND_MIX_PROMPTS = {
    "beach": "a sandy beach",
    "meadow": "a grassy meadow",
    "cave": "a dark cave",
    "volcanic": "a volcanic wasteland",
    "reef": "a coral reef",
    "city": "city streets",
}


def test_worlds_grow_their_biome_tiles_in_about_the_simulator_mix(engine):
    # Keeping MaskGIT's most confident draws first grew chunks of a biome's commonest tile
    # alone: a beach of sand with 1% water (the simulator's: 21%), a meadow 88% plain grass
    # and no pond (42%, 13%). Total variation from the simulator's mix was 0.40 on average
    # over these six; with the draws kept in a noisier order (`gen_choice_temp`), 0.23; with
    # the sampling bias fitted to the simulator's mix (`kind_bias`), 0.08 (the beach's water
    # 7% -> 19%).
    counts = {}
    for name, prompt in KIND_MIX_PROMPTS.items():
        b = spec.BIOMES.index(name)
        for seed in (900, 901):
            wid = engine.create_world(prompt=prompt, seed=seed)
            engine.add_player(wid)
            while engine.grow_ahead(max_rounds=64):
                pass
            counts[name] = counts.get(name, 0) + kind_counts(engine.worlds[wid], b)
            engine.drop_world(wid)
        mix, simulator = counts[name] / counts[name].sum(), simulator_kind_mix(b)
        # every kind the simulator's worlds show plainly shows (the beach's water, the pond)
        assert (mix[simulator >= 0.07] >= 0.02).all(), (name, mix.round(3), simulator.round(3))
    beach = counts["beach"] / counts["beach"].sum()
    assert beach[spec.TILE_KINDS.index("water")] >= 0.12, beach.round(3)
    distances = kind_mix_distance(counts)
    assert np.mean(list(distances.values())) < 0.12, distances


def test_text_naming_nothing_the_model_can_do_is_unsupported(engine, clear_world):
    wid, _ = clear_world
    before = engine.snapshot(wid)
    with pytest.raises(UnsupportedEvent):
        engine.apply_event(wid, "the crowd goes wild")
    assert engine.snapshot(wid) == before


def test_text_naming_nothing_it_can_draw_is_unsupported_with_the_nearest_events_offered(
    engine, clear_world
):
    wid, _ = clear_world
    before = engine.snapshot(wid)
    for text in ("the crowd goes wild", "everyone feels hopeful"):
        with pytest.raises(UnsupportedEvent) as raised:
            engine.apply_event(wid, text)
        assert str(raised.value) == "no world event recognised in the text"
        assert len(raised.value.suggest) == 4, text
    assert engine.snapshot(wid) == before


def test_sprites_have_hard_edges(engine, clear_world):
    wid, pid = clear_world
    alone = _frame(engine, pid)
    other = engine.add_player(wid)
    a, b = engine.worlds[wid].players
    together = engine.step({pid: frozenset(), other: frozenset()}, {pid: 1, other: 1})[pid][-1]
    sx = int(scaled(b.x - a.x + spec.FRAME // 2 - spec.SPRITE // 2))  # drawn at 1.5x
    sy = int(scaled(b.y - a.y + spec.FRAME // 2 - spec.SPRITE // 2))
    s = int(scaled(spec.SPRITE))
    box = (slice(sy, sy + s), slice(sx, sx + s))
    changed = np.abs(together[box].astype(int) - alone[box].astype(int)).sum(-1) > 8
    assert changed.mean() > 0.3  # the avatar stands in its box
    # what the decoder pastes is there or not pixel by pixel: no faint fringe round a sprite
    origin = np.array([[12, 12]])
    sprites = torch.full((1, spec.MAX_SPRITES, 3), -1)
    sprites[0, 0] = torch.tensor([0, 40, 40])
    (_, vals), _ = paste_layer(
        sprites, engine.decoder.tables()[0], None, origin, spec.WINDOW, out_side() // 4 + 1
    )
    alpha = vals[:, 3].detach().numpy()
    assert alpha.max() > 0.5 and not ((alpha > 0) & (alpha <= 0.5)).any()


def test_every_avatar_and_creature_draws_its_own_shape_and_colour(engine):
    # The decoder pastes its own sprite table: each kind's silhouette and colour as the
    # simulator's (a sprite whose alpha fell below one half in training draws nothing there)
    from inference.training import simulator as sim

    table = engine.decoder.sprites.detach()
    alpha = torch.sigmoid(table[..., 3]).numpy()
    shapes = sim.SPRITES[..., 3] > 0
    assert alpha.shape == shapes.shape
    assert ((alpha > 0.5) != shapes).sum((1, 2)).max() <= 2  # each kind's silhouette
    # and drawn in their colours: where the teacher draws a sprite, the decoder's frame is
    # within a few grey levels of it (the frames of every kind, at noon in clear weather)
    scene, _ = sim.random_scenes(
        np.random.default_rng(5), 24, sprite_prob=1.0, seeds=(2**30, 2**31)
    )
    scene.weather[:] = spec.WEATHERS.index("clear")
    scene.minute[:] = 12 * 60
    scene.sprites[:, :, 0] = np.where(
        scene.sprites[:, :, 0] >= 0, np.arange(24)[:, None] % spec.SPRITE_KINDS, -1
    )
    with_sprites = sim.render_rich(scene).astype(int)
    drawn = (
        engine.decoder.frames(
            *(
                torch.from_numpy(np.asarray(a))
                for a in (
                    scene.tokens,
                    scene.offset,
                    scene.weather,
                    scene.minute,
                    scene.phase,
                    scene.sprites,
                )
            )
        )
        .numpy()
        .astype(int)
    )
    scene.sprites[:] = -1
    on_sprite = np.abs(with_sprites - sim.render_rich(scene)).sum(-1) > 30
    error = np.abs(drawn - with_sprites)[on_sprite].mean()
    assert error < 20, error


def test_eight_players_wear_eight_different_colours():
    assert len(set(spec.AVATAR_RGB)) == 8
    assert len({spec.avatar_hex(slot) for slot in range(8)}) == 8


def test_with_the_terrain_thread_a_walking_step_makes_no_terrain(engine):
    wid = engine.create_world(prompt="a wide open meadow", seed=77)
    pid = engine.add_player(wid)
    player = engine.worlds[wid].players[0]
    late, held, moved, x0 = engine.late_chunks, engine.held_frames, engine.moved_frames, player.x
    engine.start_terrain()
    try:
        for _ in range(96):  # four seconds of walking at 24 steps a second
            engine.step({pid: frozenset("d")}, {pid: 1})
            time.sleep(1 / 24)
        assert engine.grow_in_step is False
    finally:
        engine.stop_terrain()
        engine.drop_world(wid)
    assert engine.grow_in_step is True  # stopped: steps make their terrain again
    assert engine.late_chunks == late  # not one chunk made on the frame path
    moved, held = engine.moved_frames - moved, engine.held_frames - held
    assert moved > 0 and player.x > x0
    assert held <= 0.1 * moved  # the thread keeps ahead of a walking player


def test_a_player_is_held_at_the_edge_of_a_chunk_not_made_yet(engine):
    # a seed whose way east is clear up to the chunk edge (meadows have rocks and ponds)
    wid = engine.create_world(prompt="a wide open meadow", seed=62)
    pid = engine.add_player(wid)
    world, player = engine.worlds[wid], engine.worlds[wid].players[0]
    engine.grow_in_step = False  # as with the terrain thread, but no thread: nothing grows
    held, late = engine.held_frames, engine.late_chunks
    try:
        for _ in range(20):
            frame = engine.step({pid: frozenset("d")}, {pid: 16})[pid][-1]
        assert engine.held_frames > held and engine.late_chunks == late
        assert engine._view_ready(world, player.x, player.y)
        x_held = player.x
        region = world.region(
            (player.x - spec.FRAME // 2) // spec.TILE - 1,
            (player.y - spec.FRAME // 2) // spec.TILE - 1,
            spec.WINDOW,
            spec.WINDOW,
        )
        assert (region != spec.UNKNOWN_TOKEN).all() and frame.std() > 0  # never shows a hole
        assert engine._edge_missing()  # what has the terrain thread skip most of its rest
        while engine.grow_ahead(max_rounds=4):  # the late chunks arrive: no more holding
            pass
        assert not engine._edge_missing()
        held = engine.held_frames
        engine.step({pid: frozenset("d")}, {pid: 4})
        assert engine.held_frames == held and engine.late_chunks == late
        assert player.x >= x_held
    finally:
        engine.grow_in_step = True
        engine.drop_world(wid)


def test_every_world_spawns_its_players_on_walkable_ground(engine):
    lo, hi = spec.SPAWN_ZONE
    worlds = [("a wide open meadow", 89)]  # a rock walled its player in before the rule
    worlds += [(prompt, seed) for seed, prompt in enumerate(KIND_MIX_PROMPTS.values())]
    for prompt, seed in worlds:
        wid = engine.create_world(prompt=prompt, seed=seed)
        zone = engine.worlds[wid].region(lo, lo, hi - lo + 1, hi - lo + 1).ravel()
        assert not any(spec.is_solid_token(int(t)) for t in zone), (prompt, seed, zone)
        engine.drop_world(wid)


def test_prompts_written_as_players_write_them_are_read(engine):
    # written before the atmosphere floor and kept out of its choice (December 3: biomes 84%,
    # atmosphere 94%, time 100%; before the floor: 69% and 97%; with the biome claim: biomes 91%)
    read = written_prompts(engine)
    assert read["n"] == 32
    assert read["biomes"] >= 87 and read["weather"] >= 85 and read["time"] >= 90, read["misses"]


def test_event_texts_written_as_players_write_them_are_read(engine):
    # written by a helper who never read the code, after vocabulary.py; on first reading 89%
    # before it (creatures 87%, what the model lacks 68%) and 94% with it (93%, 82%)
    read = written_events(engine)
    assert read["n"] == 120
    assert read["all"] >= 92 and read["creature"] >= 90, read["misses"]
    # 86% before the setting rule, 95% with it; the trained reader without rules: 86%
    assert read["unsupported"] >= 85, read["misses"]


def test_what_the_model_lacks_among_things_it_has_is_unsupported_in_written_events(engine):
    # set C: on first reading 60% of what the model lacks was unsupported (a snake "through the
    # grass" placed a path); it helped choose the setting rule, so this guards it, no more
    read = written_events(engine, WRITTEN_EVENTS_C)
    assert read["n"] == 150
    # the setting rule chosen on this set gave 97.5% and 99%; the trained reader 72.5% and 91%
    assert read["unsupported"] >= 70 and read["all"] >= 88, read["misses"]


def test_a_prompt_reading_says_what_the_model_makes_of_it_in_peoples_words(engine):
    names = engine.read_prompt("a frozen cavern of blue ice at night with foxes").names()
    assert "fox" not in names.pop("things")  # the fox it has, not a second one
    assert names == {
        "places": ["ice cave"],  # not the identifier "ice_cave"
        "sky": "clear",
        "time": "night",
        "creature": "fox",
        "lacks": None,
    }
    mixed = engine.read_prompt("a jungle running down to a beach in a thunderstorm").names()
    assert (sorted(mixed["places"]), mixed["sky"]) == (["beach", "jungle"], "thunderstorm")
    # what the old model lacked comes from the open vocabulary
    landed = engine.read_prompt("a spaceship lands in a grassy meadow").names()
    assert (landed["places"], landed["lacks"]) == (["meadow"], None)
    assert len(landed["things"]) == 1
    space = engine.read_prompt("outer space").names()  # a place it lacks, or things of it
    assert space["lacks"] is None
