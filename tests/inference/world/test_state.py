import numpy as np
import pytest

from inference.world import spec
from inference.world.state import (
    CreatureState,
    PlayerState,
    SnapshotError,
    WorldState,
    snapshot_bytes,
    state_from_bytes,
)


def make_state() -> WorldState:
    rng = np.random.default_rng(0)
    return WorldState(
        world_id="w1",
        seed=42,
        prompt="a foggy beach",
        weather=3,
        minute=1111,
        text_emb=rng.random(384).astype(np.float32),
        t=77,
        biome_probs=rng.random(len(spec.BIOMES)).astype(np.float32),
        chunks={
            (0, 0): rng.integers(0, spec.NUM_TOKENS, (8, 8), dtype=np.uint8),
            (-1, 2): rng.integers(0, spec.NUM_TOKENS, (8, 8), dtype=np.uint8),
        },
        things=[0, 13],
        players=[PlayerState("p1", 0, 10, -4), PlayerState("p2", 1, -30, 8)],
        creatures=[CreatureState(2, 5, 6, 0)],
        spawned=1,
        next_slot=2,
    )


def test_a_snapshot_round_trips_exactly():
    state = make_state()
    back = state_from_bytes(snapshot_bytes(state))
    assert snapshot_bytes(back) == snapshot_bytes(state)
    np.testing.assert_array_equal(back.chunks[(-1, 2)], state.chunks[(-1, 2)])
    assert back.players == state.players and back.creatures == state.creatures
    assert (back.minute, back.things, back.time) == (1111, [0, 13], spec.TIMES.index("dusk"))
    np.testing.assert_array_equal(back.text_emb, state.text_emb)


def test_a_snapshot_holding_a_token_outside_the_vocabulary_is_refused():
    state = make_state()
    state.chunks[(0, 0)][0, 0] = spec.NUM_TOKENS
    with pytest.raises(SnapshotError, match="unknown tokens"):
        state_from_bytes(snapshot_bytes(state))


def test_a_snapshot_from_another_format_version_is_refused():
    data = bytearray(snapshot_bytes(make_state()))
    data[5] = 99
    with pytest.raises(SnapshotError, match="version"):
        state_from_bytes(bytes(data))


def test_a_snapshot_with_a_flipped_bit_is_refused():
    data = bytearray(snapshot_bytes(make_state()))
    data[-1] ^= 1
    with pytest.raises(SnapshotError, match="corrupt"):
        state_from_bytes(bytes(data))
