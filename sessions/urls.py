from django.urls import path

from sessions import api, pages, views

urlpatterns = [
    path("api/sessions/", api.session_create, name="api-session-create"),
    path("api/sessions/<uuid:session_id>/", api.session_detail, name="api-session-detail"),
    path("api/sessions/<uuid:session_id>/join/", api.session_join, name="api-session-join"),
    path(
        "api/sessions/<uuid:session_id>/players/<int:slot>/remove/",
        api.session_remove_player,
        name="api-session-remove-player",
    ),
    path(
        "api/sessions/<uuid:session_id>/thumbnail.jpg",
        api.session_thumbnail,
        name="api-session-thumbnail",
    ),
    path("api/live/", api.live_list, name="api-live"),
    path("play/<slug:slug>/", views.play, name="play-world"),
    path("watch/<uuid:session_id>/", views.watch, name="play-watch"),
    path("join/<uuid:session_id>/", pages.join, name="play-join"),
]
