"""Render what the world model makes of worlds (`cover_render.world_render_cover`: the reading of
the prompt and a cover) where it has not yet (the embedded default has no Celery worker) and
again where other weights made it (`make run` after new weights ship), or, with --regenerate,
again for every world. Uploaded covers are kept."""

from django.core.management.base import BaseCommand

from worlds.cover_render import weights_digest, world_render_cover
from worlds.models import World


class Command(BaseCommand):
    help = "Render the world model's cover and reading for worlds that lack them or are stale."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--limit", type=int, default=100)
        parser.add_argument(
            "--regenerate",
            action="store_true",
            help="render again what these weights made too (other weights' is rendered anyway)",
        )

    def handle(self, *args, limit: int, regenerate: bool, **options) -> None:
        worlds = World.objects.all()
        if not regenerate:
            worlds = worlds.filter(cover="") | worlds.exclude(model_weights=weights_digest())
        ids = list(worlds.order_by("id").values_list("id", flat=True)[:limit])
        done = sum(world_render_cover(world_id=world_id) for world_id in ids)
        self.stdout.write(f"Rendered {done} world{'' if done == 1 else 's'}.")
