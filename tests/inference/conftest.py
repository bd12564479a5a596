import pytest

from inference.world import spec
from inference.world.engine import WorldEngine


@pytest.fixture(scope="session")
def engine() -> WorldEngine:
    """The real engine on the shipped weights (loading MiniLM costs seconds: once per run)."""
    return WorldEngine.load()


@pytest.fixture
def clear_world(engine):
    """A world with one player, clear weather at noon and no creatures or things, so frames
    depend on place only (the light is the same all day from 8:00 to 17:00)."""
    wid = engine.create_world(prompt="a quiet meadow on a sunny day", seed=1234)
    world = engine.worlds[wid]
    world.weather, world.minute, world.creatures, world.objects = 0, spec.TIME_MINUTES[1], [], []
    pid = engine.add_player(wid)
    yield wid, pid
    engine.drop_world(wid)
