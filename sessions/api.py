"""`/api/sessions/`: create, show and end play sessions (thin shells over the services)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import APIException, NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from sessions import selectors, services
from sessions.client_ip import client_ip
from sessions.models import EndReason, PlaySession
from sessions.serializers import SessionCreateInput, SessionOutput
from worlds.models import World


class TooManySessions(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_sessions"


def _player(request: Request):
    user = request.user if request.user.is_authenticated else None
    if user is None and not request.session.session_key:
        # Anonymous players are their browser session: make one so the socket can prove it.
        request.session["play"] = True
        request.session.save()
    return user, request.session.session_key


def _output(session: PlaySession) -> dict:
    position = services.session_queue_position(session=session)
    return SessionOutput(session, context={"queue_position": position}).data


@extend_schema(
    request=SessionCreateInput,
    responses={
        201: SessionOutput,
        200: OpenApiResponse(SessionOutput, description="The player's running session"),
        404: OpenApiResponse(description="No playable world with this slug"),
        429: OpenApiResponse(description="Too many sessions at once"),
    },
    summary="Start playing a world",
)
@api_view(["POST"])
@permission_classes([AllowAny])  # anonymous players may play published worlds
def session_create(request: Request) -> Response:
    data = SessionCreateInput(data=request.data)
    data.is_valid(raise_exception=True)
    user, session_key = _player(request)
    try:
        session, created = services.session_create(
            world_slug=data.validated_data["world"],
            user=user,
            session_key=session_key,
            client_ip=client_ip(request),
            is_public=data.validated_data["public"],
        )
    except World.DoesNotExist:
        raise NotFound("No playable world with this slug.") from None
    except services.SessionLimitReached as exc:
        raise TooManySessions(str(exc)) from None
    code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return Response(_output(session), status=code)


@extend_schema(methods=["GET"], responses={200: SessionOutput}, summary="Show a session")
@extend_schema(methods=["DELETE"], responses={200: SessionOutput}, summary="End a session")
@api_view(["GET", "DELETE"])
@permission_classes([AllowAny])  # ownership is checked per session below
def session_detail(request: Request, session_id) -> Response:
    user = request.user if request.user.is_authenticated else None
    key = request.session.session_key
    try:
        session = selectors.session_get_for_player(
            session_id=session_id, user=user, session_key=key
        )
    except PlaySession.DoesNotExist:
        if request.method == "DELETE":
            raise NotFound("No such session of yours.") from None
        try:
            session = selectors.session_get_watchable(session_id=session_id)
        except PlaySession.DoesNotExist:
            raise NotFound("No such session.") from None
    if request.method == "DELETE":
        session = services.session_end(session=session, reason=EndReason.PLAYER)
    return Response(_output(session))
