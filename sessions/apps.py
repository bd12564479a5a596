from django.apps import AppConfig


class PlayConfig(AppConfig):
    # The label "sessions" belongs to django.contrib.sessions.
    name = "sessions"
    label = "play"
    verbose_name = "Play sessions"
