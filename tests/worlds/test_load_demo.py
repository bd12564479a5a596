from django.core.management import call_command

from worlds.models import Category, World, WorldStatus


def test_it_loads_a_demo_catalog_across_all_categories_once(db):
    call_command("load_demo")
    worlds = list(World.objects.all())
    assert len(worlds) >= 12
    assert {w.category for w in worlds} == set(Category.values)
    assert len({w.prompt for w in worlds}) == len(worlds)
    assert all(w.status == WorldStatus.PUBLISHED and w.current_version for w in worlds)
    assert World.objects.filter(featured=True).exists()
    call_command("load_demo")
    assert World.objects.count() == len(worlds)


def test_every_demo_character_shows_a_sample_exchange_in_its_own_name(db, client):
    # The creator's lines are the small chat model's examples of a voice: without them the
    # demo ferryman called himself a marine biologist within three turns.
    call_command("load_demo")
    characters = World.objects.filter(category=Category.CHARACTERS)
    assert characters.exists()
    for world in characters:
        lines = world.current_version.example_lines()
        assert len(lines) >= 2, world.title
        page = client.get(f"/w/{world.slug}/").content.decode()
        assert "A sample exchange" in page
        assert f"<b>{world.character_name}:</b> {lines[0]}" in page.replace("&#x27;", "'")
