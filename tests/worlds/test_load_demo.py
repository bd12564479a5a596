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
