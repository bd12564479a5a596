from django.contrib import admin

from sessions.models import PlaySession


@admin.register(PlaySession)
class PlaySessionAdmin(admin.ModelAdmin):
    list_display = ["id", "world", "player", "status", "worker_name", "created_at", "ended_at"]
    list_filter = ["status", "is_public"]
    search_fields = ["id", "world__slug", "player__username", "worker_name"]
    raw_id_fields = ["world", "world_version", "player"]
    # Sessions change through the services (placement, workers), never by hand.
    readonly_fields = [f.name for f in PlaySession._meta.fields]
