from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from gallery.models import User


@admin.register(User)
class ParallaxUserAdmin(UserAdmin):
    fieldsets = [*UserAdmin.fieldsets, ("Profile", {"fields": ["display_name", "bio"]})]
