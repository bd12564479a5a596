"""Render model covers for worlds that have none (the embedded default has no Celery worker)."""

from django.core.management.base import BaseCommand

from worlds import services
from worlds.models import World


class Command(BaseCommand):
    help = "Render a cover with the world model for every world without an uploaded cover."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--limit", type=int, default=100)

    def handle(self, *args, limit: int, **options) -> None:
        ids = list(World.objects.filter(cover="").values_list("id", flat=True)[:limit])
        done = sum(services.world_render_cover(world_id=world_id) for world_id in ids)
        self.stdout.write(f"Rendered {done} covers.")
