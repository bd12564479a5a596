"""Render model covers for worlds that have none (the embedded default has no Celery worker)
and again for those other weights rendered (`make run` after new weights ship), or, with
--regenerate, again for every model-rendered cover. Uploaded covers are kept."""

from django.core.management.base import BaseCommand

from worlds import services
from worlds.cover_render import weights_digest
from worlds.models import World


class Command(BaseCommand):
    help = "Render a cover with the world model for every world without an uploaded cover."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--limit", type=int, default=100)
        parser.add_argument(
            "--regenerate",
            action="store_true",
            help="also re-render covers these weights made (older weights' are re-rendered anyway)",
        )

    def handle(self, *args, limit: int, regenerate: bool, **options) -> None:
        rendered = World.objects.filter(cover_generated=True)
        if not regenerate:
            rendered = rendered.exclude(cover_weights=weights_digest())
        worlds = World.objects.filter(cover="") | rendered
        ids = list(worlds.order_by("id").values_list("id", flat=True)[:limit])
        done = sum(services.world_render_cover(world_id=world_id) for world_id in ids)
        self.stdout.write(f"Rendered {done} cover{'' if done == 1 else 's'}.")
