from django.apps import AppConfig


class GalleryConfig(AppConfig):
    name = "gallery"
    verbose_name = "Parallax gallery"
