"""A GIN index on the weighted search document, so search stays fast as the catalog grows.

PostgreSQL only (the embedded SQLite default searches by substring). The expression must stay
identical to `worlds.selectors.search_vector()`; a test checks that the planner uses it.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import migrations

INDEX = "world_search_gin"


def _index() -> GinIndex:
    vector = (
        SearchVector("title", weight="A", config="english")
        + SearchVector("character_name", weight="A", config="english")
        + SearchVector("description", weight="B", config="english")
        + SearchVector("prompt", weight="C", config="english")
        + SearchVector("story_opening", "character_persona", weight="D", config="english")
    )
    return GinIndex(vector, name=INDEX)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("worlds", "World"), _index())


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("worlds", "World"), _index())


class Migration(migrations.Migration):
    dependencies = [("worlds", "0002_cover_generated")]
    operations = [migrations.RunPython(create, drop)]
