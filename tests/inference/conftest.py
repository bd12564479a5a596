import pytest

from inference.world.engine import WorldEngine


@pytest.fixture(scope="session")
def engine() -> WorldEngine:
    """The real engine on the shipped weights (loading MiniLM costs seconds: once per run)."""
    return WorldEngine.load()


@pytest.fixture
def clear_world(engine):
    """A world with one player, clear weather and no creatures, so frames depend on place only."""
    wid = engine.create_world(prompt="a quiet meadow on a sunny day", seed=1234)
    world = engine.worlds[wid]
    world.weather, world.time, world.creatures = 0, 0, []
    pid = engine.add_player(wid)
    yield wid, pid
    engine.drop_world(wid)
