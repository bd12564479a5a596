"""Print precision and recall per category of the screening service on a labelled split, and
what screening made of each label (the confusion table)."""

from django.core.management.base import BaseCommand

from worlds.moderation.screening import evaluation, semantic


class Command(BaseCommand):
    help = "Measure text screening on a labelled split of screening/data/ (recall, precision, FP)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--split", default="eval", choices=evaluation.splits())
        parser.add_argument(
            "--sweep", action="store_true", help="Search thresholds on this split (use tune)."
        )
        parser.add_argument("--max-fp", type=float, default=0.05)

    def handle(self, *args, split: str, sweep: bool, max_fp: float, **options) -> None:
        scored = evaluation.score(evaluation.load_rows(split))
        model = semantic.classifier()
        thresholds = {"hold": round(model.hold, 3), "block": round(model.block, 3)}
        if sweep:
            thresholds = evaluation.sweep(scored, max_fp=max_fp)
            self.stdout.write(f"best thresholds on {split}: {thresholds}")
        rows = evaluation.measure(scored, **thresholds)
        self.stdout.write(f"split={split} thresholds={thresholds}")
        self.stdout.write(evaluation.table(rows))
        self.stdout.write("\nwhat screening made of each label (allow, or the category flagged):")
        self.stdout.write(evaluation.confusion_table(evaluation.confusion(scored, **thresholds)))
