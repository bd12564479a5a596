import json
import re

import numpy as np

from inference.training import simulator as sim
from inference.training.simulator import phrasing
from inference.world import spec
from inference.world.reading import OWN_NAMES, own_names


def test_the_same_seed_renders_the_same_world():
    a, b = sim.SimWorld(seed=9, biome=2), sim.SimWorld(seed=9, biome=2)
    a.add_player(), b.add_player()
    for _ in range(10):
        a.step([{"d"}]), b.step([{"d"}])
    np.testing.assert_array_equal(a.render(), b.render())


def test_frames_are_served_at_128_and_crops_are_the_same_pixels():
    world = sim.SimWorld(seed=4, biome=spec.BIOMES.index("ruins"))
    world.add_player()
    full = world.render()
    assert full.shape == (spec.FRAME, spec.FRAME, 3)
    # the 64-pixel training crop around the same camera is the middle of the served frame
    tx0, ty0, ox, oy = sim.window_origin(0, 0, 64)
    ty, tx = np.mgrid[ty0 : ty0 + 64 // spec.TILE + 3, tx0 : tx0 + 64 // spec.TILE + 3]
    crop = sim.Scene(
        tokens=world.tokens(tx, ty)[None],
        offset=np.array([[ox, oy]]),
        weather=np.array([0]),  # clear: no particles, which are laid out per frame
        minute=np.array([world.minute]),
        phase=np.zeros((1, 2), int),
        sprites=np.full((1, spec.MAX_SPRITES, 3), -1),
    )
    without_avatar = sim.render(sim.Scene(**{**world.scene(0).__dict__, "sprites": crop.sprites}))
    np.testing.assert_array_equal(sim.render(crop)[0], without_avatar[0, 32:96, 32:96])


def test_random_scenes_render_at_any_frame_size():
    rng = np.random.default_rng(0)
    for frame in (64, spec.FRAME):
        scene, biome = sim.random_scenes(rng, 3, frame=frame)
        assert scene.tokens.shape == (3, frame // spec.TILE + 3, frame // spec.TILE + 3)
        assert sim.render(scene).shape == (3, frame, frame, 3)
        assert biome.shape == (3,)


def test_the_spawn_zone_is_always_walkable():
    lo, hi = spec.SPAWN_ZONE
    ty, tx = np.mgrid[lo : hi + 1, lo : hi + 1]
    for biome in range(len(spec.BIOMES)):
        tokens = sim.terrain_tokens(123, biome, tx, ty)
        assert not sim.SOLID[tokens].any()


def test_a_mixed_world_holds_both_biomes_in_proportion_to_the_mix():
    ty, tx = np.mgrid[-60:60, -60:60]
    forest, desert = spec.BIOMES.index("forest"), spec.BIOMES.index("desert")
    shares = []
    for mix in (0.35, 0.65):
        biomes = sim.terrain_tokens(7, forest, tx, ty, desert, mix) // len(spec.TILE_KINDS)
        assert set(np.unique(biomes)) == {forest, desert}
        shares.append(np.mean(biomes == desert))
    assert 0.1 < shares[0] < shares[1] < 0.9
    alone = sim.terrain_tokens(7, forest, tx, ty) // len(spec.TILE_KINDS)
    assert set(np.unique(alone)) == {forest}


def test_place_puts_the_things_tokens_beside_the_player_and_draws_them():
    world = sim.SimWorld(seed=3, biome=0)
    world.add_player()
    before = world.render()
    house = spec.THINGS.index("house")
    world.place(house)
    cells = spec.place_cells(house, 0, 0)
    assert len(cells) == 9
    for tx, ty, token in cells:
        assert token == spec.thing_token(house)
        assert int(world.tokens(np.array(tx), np.array(ty))) == token
        assert world.is_solid(tx, ty)  # a house blocks; a path would not
    changed = np.abs(world.render().astype(int) - before).sum(2) > 0
    cx, cy = spec.thing_center(0, 0)  # screen pixels of the placed tiles
    x0, y0 = (cx - 1) * spec.TILE + spec.FRAME // 2, (cy - 1) * spec.TILE + spec.FRAME // 2
    assert changed[y0 : y0 + 3 * spec.TILE, x0 : x0 + 3 * spec.TILE].all()
    assert changed.sum() == 9 * spec.TILE * spec.TILE


def test_a_bridge_carries_the_avatar_over_water():
    def walk(bridge: bool) -> int:
        world = sim.SimWorld(seed=3, biome=0)
        world.add_player()
        world.players[0][1] = spec.TILE // 2  # mid-row: the box overlaps tile row 0 only
        for tx in range(1, 10):
            for ty in (-1, 0, 1):
                world.overrides[(tx, ty)] = spec.token_of(0, 3)  # water
        if bridge:
            world.place(spec.THINGS.index("bridge"))
        for _ in range(30):
            world.step([{"d"}])
        return world.players[0][0]

    assert walk(bridge=False) < spec.TILE
    assert walk(bridge=True) == 60


def test_light_changes_continuously_with_the_minute():
    light = sim.light_affine(np.arange(spec.DAY_MINUTES + 1))
    steps = np.abs(np.diff(light, axis=0)).max()
    assert steps < 0.01  # no jumps from one minute to the next
    day, night = light[spec.TIME_MINUTES[1]], light[spec.TIME_MINUTES[3]]
    assert (day[0] > night[0] + 0.3).all()  # but night is much darker than day
    np.testing.assert_allclose(light[0], light[-1])  # and the day wraps round


def test_the_clock_advances_the_minute_and_its_name():
    world = sim.SimWorld(seed=1, biome=0, minute=spec.TIME_MINUTES[2])
    world.add_player()
    assert spec.TIMES[world.time] == "dusk"
    lit = world.render().astype(int).sum()
    for _ in range(spec.FRAMES_PER_MINUTE * 120):  # two hours later
        world.step([set()])
    assert world.minute == spec.TIME_MINUTES[2] + 120
    assert spec.TIMES[world.time] == "night"
    assert world.render().astype(int).sum() < lit


def test_every_atmosphere_looks_different():
    world = sim.SimWorld(seed=2, biome=spec.BIOMES.index("meadow"))
    world.add_player()
    frames = []
    for weather in range(len(spec.WEATHERS)):
        world.weather = weather
        frames.append(world.render().astype(int))
    for i in range(len(frames)):
        for j in range(i):
            assert np.abs(frames[i] - frames[j]).mean() > 1, (spec.WEATHERS[i], spec.WEATHERS[j])


def test_solid_tiles_block_the_avatar():
    world = sim.SimWorld(seed=1, biome=0)
    world.add_player()
    for ty in (-1, 0, 1):  # a wall right of the spawn (one rock alone is slid round)
        world.overrides[(1, ty)] = spec.token_of(0, 2)
    for _ in range(10):
        world.step([{"d"}])
    assert world.players[0][0] + spec.BOX_HALF <= spec.TILE


def test_world_prompts_are_labelled_and_can_mix_two_biomes():
    rng = np.random.default_rng(0)
    drawn = [sim.world_prompt(rng, "eval") for _ in range(400)]
    assert len({text for text, _ in drawn}) > 350
    labels = [lab for _, lab in drawn]
    assert {lab["biome"] for lab in labels} == set(range(len(spec.BIOMES)))
    assert {lab["weather"] for lab in labels} == set(range(len(spec.WEATHERS)))
    mixed = [lab for lab in labels if lab["biome2"] >= 0]
    assert 0.15 < len(mixed) / len(labels) < 0.45
    assert all(lab["biome2"] != lab["biome"] for lab in mixed)


def test_only_the_eval_split_draws_held_out_phrasings():
    name = "thunderstorm"
    held = phrasing.held_out(phrasing.WEATHER_EVENTS[name])[0]
    value = spec.WEATHERS.index(name)
    rng = np.random.default_rng(0)
    train = {sim.event_for(rng, "weather", value, split="train") for _ in range(200)}
    evals = {sim.event_for(rng, "weather", value, split="eval") for _ in range(200)}
    assert held not in train
    assert held in evals


def _own(kind: str, name: str) -> list[str]:
    return dict(json.loads(OWN_NAMES.read_text()))[kind][name]


def test_the_own_names_hold_every_training_phrasing_of_a_concept_and_no_held_out_one():
    assert "day breaks" in _own("time", "dawn")  # an event phrasing names the concept too
    assert "at sunrise" in _own("time", "dawn")
    texts = {name for _, name in own_names()}
    for bank in (phrasing.TIME_EVENTS, phrasing.WEATHER_EVENTS, phrasing.WEATHER_WORLD):
        for options in bank.values():
            assert set(phrasing.train_part(options)) <= texts
            assert not texts & set(phrasing.held_out(options))


def words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text.lower())


def test_the_players_words_name_known_concepts_and_never_a_held_out_phrasing():
    assert "owl" in _own("creature", "bird")
    assert "cabin" in _own("thing", "house")
    data = json.loads(OWN_NAMES.read_text())
    for kind, spec_names in (("biome", spec.BIOMES), ("creature", spec.CREATURES)):
        assert list(data[kind]) == list(spec_names)
    # no name beyond the banks is a held-out phrasing or a run of its words, so the
    # evaluation's held-out phrasings stay wording the model never saw ("tabby" of "tabby cat")
    banks = [
        options
        for bank in vars(phrasing).values()
        for options in (bank.values() if isinstance(bank, dict) else [bank])
        if isinstance(options, list) and options and all(isinstance(o, str) for o in options)
    ]
    held = [" " + " ".join(words(e)) + " " for options in banks for e in phrasing.held_out(options)]
    assert len(held) > 100
    trained = {e for options in banks for e in phrasing.train_part(options)}
    for _, name in own_names():
        if name not in trained:
            assert not any(f" {' '.join(words(name))} " in entry for entry in held), name


def test_the_generator_labels_the_words_that_name_each_part():
    rng = np.random.default_rng(3)
    for _ in range(200):
        text, labels, said = phrasing.labelled_world_prompt(rng, "train")
        got = {x for x in phrasing.word_labels(text, said) if x is not None}
        want = {("biome", labels["biome"])} | {
            (k, labels[k]) for k in ("biome2", "creature") if labels[k] >= 0
        }
        assert {(k.rstrip("2"), v) for k, v in want} <= got
    for _ in range(200):
        text, labels, said = phrasing.labelled_event_text(rng, "train")
        got = {x for x in phrasing.word_labels(text, said) if x is not None}
        assert got == {(k, v) for k, v in labels.items() if v >= 0}


def test_events_of_every_kind_have_many_phrasings_with_labels():
    rng = np.random.default_rng(0)
    drawn = [sim.event_text(rng) for _ in range(400)]
    assert len({text for text, _ in drawn}) > 200
    for kind in ("weather", "time", "creature", "thing"):
        assert any(labels[kind] >= 0 for _, labels in drawn), kind
    for kind, names in (("creature", spec.CREATURES), ("thing", spec.THINGS)):
        for value in range(len(names)):
            assert sim.event_for(rng, kind, value)


def test_the_fit_split_never_draws_a_tuning_entry_and_the_tune_split_does():
    tuning = phrasing.tuning_entries()
    assert "rolling green hills" in tuning  # the meadow's second-to-last noun
    fit, tune = set(), set()
    for seed in range(300):
        fit.add(phrasing.world_prompt(np.random.default_rng(seed), "fit")[0])
        tune.add(phrasing.world_prompt(np.random.default_rng(seed), "tune")[0])
    nouns = [n for options in phrasing.BIOME_NOUNS.values() for n in phrasing.tuning_part(options)]
    assert not any(f" {n}" in text for text in fit for n in nouns)
    assert sum(any(f" {n}" in text for n in nouns) for text in tune) > 30
    # and the tune split holds no eval entry back for itself: it never draws a held-out one
    held = [n for options in phrasing.BIOME_NOUNS.values() for n in phrasing.held_out(options)]
    assert not any(f" {n}" in text for text in tune for n in held)
