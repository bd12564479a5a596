"""Render model covers for worlds that have none (the embedded default has no Celery worker),
or, with --regenerate, again for every model-rendered cover (uploaded covers are kept)."""

from django.core.management.base import BaseCommand

from worlds import services
from worlds.models import World


class Command(BaseCommand):
    help = "Render a cover with the world model for every world without an uploaded cover."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--limit", type=int, default=100)
        parser.add_argument(
            "--regenerate",
            action="store_true",
            help="also re-render covers the model rendered before (after new weights ship)",
        )

    def handle(self, *args, limit: int, regenerate: bool, **options) -> None:
        worlds = World.objects.filter(cover="")
        if regenerate:
            worlds = World.objects.filter(cover="") | World.objects.filter(cover_generated=True)
        ids = list(worlds.order_by("id").values_list("id", flat=True)[:limit])
        done = sum(services.world_render_cover(world_id=world_id) for world_id in ids)
        self.stdout.write(f"Rendered {done} covers.")
