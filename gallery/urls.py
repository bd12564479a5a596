from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from gallery.media import serve_media
from gallery.views import favicon

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for it on every page whatever the pages link to (it was a 404 each time).
    path("favicon.ico", favicon),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # Each app owns its URLconf (pages and /api/ routes both).
    path("", include("gallery.pages_urls")),
    path("", include("worlds.urls")),
    path("", include("sessions.urls")),
    path("", include("worlds.moderation.urls")),
]

if not settings.S3_BUCKET:
    # Embedded default: media files are local and served by the app itself.
    urlpatterns += [
        re_path(r"^media/(?P<path>.*)$", serve_media, {"document_root": settings.MEDIA_ROOT}),
    ]

# Error pages: JSON under /api/, styled pages elsewhere.
handler403 = "gallery.views.forbidden"
handler404 = "gallery.views.not_found"
handler500 = "gallery.views.server_error"
