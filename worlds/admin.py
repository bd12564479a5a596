from django.contrib import admin

from worlds.models import World, WorldVersion


class WorldVersionInline(admin.TabularInline):
    model = WorldVersion
    extra = 0
    can_delete = False
    readonly_fields = ["number", "title", "prompt", "seed", "created_at"]
    fields = readonly_fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # versions are made by worlds.services, never by hand


@admin.register(World)
class WorldAdmin(admin.ModelAdmin):
    list_display = ["title", "slug", "category", "status", "creator", "play_count", "like_count"]
    list_filter = ["status", "category", "featured"]
    search_fields = ["title", "slug", "creator__username"]
    readonly_fields = ["current_version", "play_count", "like_count", "trending_score"]
    raw_id_fields = ["creator", "remix_of"]
    inlines = [WorldVersionInline]
