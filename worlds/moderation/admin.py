"""Admin views for staff. The audit log is read-only here too: the app never changes an entry."""

from django.contrib import admin

from worlds.moderation.models import Appeal, AuditEntry, ModerationAction, Report, Suspension


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ["target_type", "target_id", "reason", "reporter", "status", "created_at"]
    list_filter = ["status", "reason", "target_type"]
    raw_id_fields = ["reporter", "world", "target_user", "closed_by_action"]


@admin.register(ModerationAction)
class ModerationActionAdmin(admin.ModelAdmin):
    list_display = ["kind", "target_type", "target_id", "moderator", "created_at"]
    list_filter = ["kind", "target_type"]
    raw_id_fields = ["moderator", "world", "target_user"]


@admin.register(Suspension)
class SuspensionAdmin(admin.ModelAdmin):
    list_display = ["user", "starts_at", "ends_at", "lifted_at"]
    raw_id_fields = ["user", "created_by"]


@admin.register(Appeal)
class AppealAdmin(admin.ModelAdmin):
    list_display = ["world", "appellant", "status", "created_at"]
    raw_id_fields = ["world", "action", "appellant"]


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "actor_name", "action", "target_type", "target_id", "reason"]
    list_filter = ["action", "target_type"]
    search_fields = ["actor_name", "target_id", "target_label", "reason"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
