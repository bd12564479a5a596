from django.urls import path
from rest_framework.routers import SimpleRouter

from worlds import api, views

router = SimpleRouter()
router.register("api/worlds", api.WorldViewSet, basename="api-world")

urlpatterns = [
    path("publish/", views.world_create, name="world-create"),
    path("w/<slug:slug>/", views.world_detail, name="world-detail"),
    path("w/<slug:slug>/edit/", views.world_edit, name="world-edit"),
    path("w/<slug:slug>/remix/", views.world_remix, name="world-remix"),
    path("w/<slug:slug>/like/", views.world_like, name="world-like"),
    path("w/<slug:slug>/publish/", views.world_publish, name="world-publish"),
    path("w/<slug:slug>/unpublish/", views.world_unpublish, name="world-unpublish"),
    path("w/<slug:slug>/delete/", views.world_delete, name="world-delete"),
    path(
        "covers/placeholder/<slug:category>/<slug:slug>.svg",
        views.world_placeholder,
        name="world-placeholder",
    ),
    path("api/categories/", api.CategoryListApi.as_view(), name="api-categories"),
    *router.urls,
]
