"""Fit the semantic layer's classifier and write worlds/moderation/screening/data/classifier.npz."""

from django.core.management.base import BaseCommand

from worlds.moderation.screening import semantic, training


class Command(BaseCommand):
    help = "Train the screening classifier on the example sets and the tuning split."

    def add_arguments(self, parser):
        parser.add_argument("--hold-fp", type=float, default=0.02)
        parser.add_argument("--block-fp", type=float, default=0.005)
        parser.add_argument("--out", default=str(semantic.CLASSIFIER_PATH))

    def handle(self, *args, hold_fp: float, block_fp: float, out: str, **options):
        self.stdout.write("embedding the training phrases and cross-validating …")
        model, n = training.train(hold_fp=hold_fp, block_fp=block_fp)
        model.save(out)
        self.stdout.write(
            f"trained on {n} phrases; thresholds hold={model.hold:.3f} block={model.block:.3f}"
            f" -> {out}"
        )
