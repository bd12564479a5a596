from django.urls import path

websocket_urlpatterns: list = [
    # ws/play/<session_id>/ and ws/watch/<session_id>/ are added by the live-play work.
]
