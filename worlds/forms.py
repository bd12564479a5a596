from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from worlds.models import MAX_PLAYERS, Category, World

VISIBILITY_CHOICES = [
    ("draft", "Draft — only you can see it"),
    ("published", "Published — listed in the gallery"),
    ("unlisted", "Unlisted — anyone with the link"),
]


class WorldForm(forms.Form):
    """The publish/edit form. Only shapes input: the rules live in worlds.services."""

    title = forms.CharField(max_length=100)
    category = forms.ChoiceField(choices=Category.choices)
    description = forms.CharField(
        max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    prompt = forms.CharField(
        max_length=500,
        label="World prompt",
        help_text="What the world is: the model generates it from this.",
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    seed = forms.IntegerField(
        min_value=0, max_value=2**31 - 1, required=False, help_text="Blank: a random seed."
    )
    story_opening = forms.CharField(
        max_length=2000,
        required=False,
        help_text="Stories: how the story begins.",
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    character_name = forms.CharField(max_length=60, required=False)
    character_persona = forms.CharField(
        max_length=1000, required=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    character_greeting = forms.CharField(max_length=300, required=False)
    character_examples = forms.CharField(
        max_length=1500,
        required=False,
        label="Example lines",
        help_text="Characters: things they might say, one per line (up to 8). The language "
        "model takes its voice from these.",
        widget=forms.Textarea(attrs={"rows": 4}),
    )
    max_players = forms.IntegerField(
        min_value=1,
        max_value=MAX_PLAYERS,
        initial=8,
        required=False,
        label="Players at most",
        help_text="How many people can play one shared session of this world together.",
    )
    cover = forms.FileField(
        required=False,
        help_text="JPEG, PNG or WebP, at most 5 MB and 4096×4096.",
        widget=forms.ClearableFileInput(attrs={"accept": "image/jpeg,image/png,image/webp"}),
    )
    visibility = forms.ChoiceField(choices=VISIBILITY_CHOICES, initial="published")

    @classmethod
    def initial_from(cls, world: World) -> dict:
        initial = {
            name: getattr(world, name)
            for name in cls.base_fields
            if name not in ("cover", "visibility")
        }
        initial["visibility"] = (
            world.status if world.status in ("draft", "published", "unlisted") else "published"
        )
        return initial

    def spec(self) -> dict:
        return {
            name: value
            for name, value in self.cleaned_data.items()
            if name not in ("cover", "visibility")
        }


def render_form(request: HttpRequest, template: str, context: dict) -> HttpResponse:
    """Render a form page; a submitted form with errors answers 400, not 200."""
    form = context["form"]
    failed = request.method == "POST" and form.is_bound and bool(form.errors)
    return render(request, template, context, status=400 if failed else 200)
