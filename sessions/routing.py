from django.urls import path

from sessions import consumers

websocket_urlpatterns = [
    path("ws/play/<uuid:session_id>/", consumers.PlayConsumer.as_asgi()),
    path("ws/watch/<uuid:session_id>/", consumers.WatchConsumer.as_asgi()),
]
