# Load the Celery app with Django so shared_task binds to it (Celery's Django recipe).
from gallery.celery import app as celery_app

__all__ = ("celery_app",)
