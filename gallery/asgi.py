import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gallery.settings")
# Django must be set up before anything imports models (the routing modules do).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from sessions import socket_buffer  # noqa: E402
from sessions.routing import websocket_urlpatterns  # noqa: E402

# Under Daphne (make run, production, the tests' stack) a slow client's socket drops frames
# instead of buffering them without limit; see sessions/socket_buffer.py.
socket_buffer.install()

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
