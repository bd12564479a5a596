from django.urls import path

from sessions import api, views

urlpatterns = [
    path("api/sessions/", api.session_create, name="api-session-create"),
    path("api/sessions/<uuid:session_id>/", api.session_detail, name="api-session-detail"),
    path("play/<slug:slug>/", views.play, name="play-world"),
    path("watch/<uuid:session_id>/", views.watch, name="play-watch"),
]
