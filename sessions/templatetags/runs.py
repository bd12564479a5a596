"""Runs on catalog pages: a world's public runs, a player's runs. The catalog never imports
play (an import contract); its templates load these tags instead."""

from django import template

from sessions import recordings

register = template.Library()


@register.inclusion_tag("play/_runs.html")
def world_runs(world) -> dict:
    return {"runs": recordings.public_runs(world), "title": "Public runs", "show_world": False}


@register.inclusion_tag("play/_runs.html")
def player_runs(user, is_self=False) -> dict:
    """Their public runs; their private ones too on their own profile."""
    return {"runs": recordings.runs_of(user, private=bool(is_self)), "title": "Runs",
            "show_world": True}  # fmt: skip
