"""Fit the semantic layer's classifier and write worlds/moderation/screening/data/classifier.npz."""

import dataclasses

from django.core.management.base import BaseCommand

from worlds.moderation.screening import semantic, training


class Command(BaseCommand):
    help = "Train the screening classifier on the example sets and the tuning split."

    def add_arguments(self, parser) -> None:
        # One flag per TrainingConfig field (--hold-fp, --balance-power, ...), its default included.
        for field in dataclasses.fields(training.TrainingConfig):
            flag = "--" + field.name.replace("_", "-")
            parser.add_argument(flag, type=float, default=field.default)
        parser.add_argument("--out", default=str(semantic.CLASSIFIER_PATH))

    def handle(self, *args, out: str, **options) -> None:
        names = [field.name for field in dataclasses.fields(training.TrainingConfig)]
        config = training.TrainingConfig(**{name: options[name] for name in names})
        self.stdout.write(f"embedding the training phrases and cross-validating ({config}) …")
        model, n = training.train(config)
        model.save(out)
        self.stdout.write(
            f"trained on {n} phrases; thresholds hold={model.hold:.3f} block={model.block:.3f}"
            f" -> {out}"
        )
