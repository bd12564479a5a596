from django.urls import path

from sessions import api, pages, recordings_api, views

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
    path(
        "api/sessions/<uuid:session_id>/recording/",
        recordings_api.session_recording,
        name="api-session-recording",
    ),
    path(
        "api/recordings/<uuid:recording_id>/",
        recordings_api.recording_detail,
        name="api-recording-detail",
    ),
    path(
        "api/recordings/<uuid:recording_id>/export/",
        recordings_api.recording_export,
        name="api-recording-export",
    ),
    path(
        "api/recordings/<uuid:recording_id>/fork/",
        recordings_api.recording_fork,
        name="api-recording-fork",
    ),
    path(
        "api/recordings/<uuid:recording_id>/cover/",
        recordings_api.recording_cover,
        name="api-recording-cover",
    ),
    path("r/<uuid:recording_id>/", views.replay, name="recording-page"),
    path("play/<slug:slug>/", views.play, name="play-world"),
    path("watch/<uuid:session_id>/", views.watch, name="play-watch"),
    path("join/<uuid:session_id>/", pages.join, name="play-join"),
]
