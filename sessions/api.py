"""`/api/sessions/` and `/api/live/`: create, join, show, leave play sessions, remove a player,
list what is being played now (thin shells over the services)."""

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import APIException, NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from sessions import seats, selectors, services
from sessions.client_ip import client_ip
from sessions.models import EndReason, PlaySession, Seat
from sessions.serializers import (
    LiveSessionOutput,
    PlayerRemoveInput,
    SessionCreateInput,
    SessionJoinInput,
    SessionJoinOutput,
    SessionOutput,
)
from sessions.worker_client import get_placement
from worlds.models import World

LIVE_PAGE_SIZE = 24


class TooManySessions(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_sessions"


class SessionFull(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "session_full"


def _player(request: Request):
    user = request.user if request.user.is_authenticated else None
    if user is None and not request.session.session_key:
        # Anonymous players are their browser session: make one so the socket can prove it.
        request.session["play"] = True
        request.session.save()
    return user, request.session.session_key


def _output(session: PlaySession, request: Request, *, serializer=SessionOutput) -> dict:
    user, key = request.user if request.user.is_authenticated else None, request.session.session_key
    context = {
        "queue_position": services.session_queue_position(session=session),
        "seat": seats.seat_of(session=session, user=user, session_key=key),
        "is_creator": session.is_created_by(user=user, session_key=key),
    }
    return serializer(session, context=context).data


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
        session, created = seats.session_create(
            world_slug=data.validated_data["world"],
            user=user,
            session_key=session_key,
            client_ip=client_ip(request),
            is_public=data.validated_data["public"],
            shared=data.validated_data["shared"],
            name=data.validated_data.get("name"),
        )
    except World.DoesNotExist:
        raise NotFound("No playable world with this slug.") from None
    except services.SessionLimitReached as exc:
        raise TooManySessions(str(exc)) from None
    except seats.SessionFull as exc:
        raise SessionFull(str(exc)) from None
    code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return Response(_output(session, request), status=code)


@extend_schema(
    request=SessionJoinInput,
    responses={
        201: SessionJoinOutput,
        200: OpenApiResponse(SessionJoinOutput, description="You already have a seat here"),
        400: OpenApiResponse(description="A name that fails screening"),
        403: OpenApiResponse(description="Suspended"),
        404: OpenApiResponse(description="No such running session, or private without its invite"),
        409: OpenApiResponse(description="Every seat is taken"),
    },
    summary="Join a shared session as another player",
)
@api_view(["POST"])
@permission_classes([AllowAny])  # anonymous players join with a display name
def session_join(request: Request, session_id) -> Response:
    data = SessionJoinInput(data=request.data)
    data.is_valid(raise_exception=True)
    user, session_key = _player(request)
    try:
        session, seat, created = seats.seat_join(
            session_id=session_id,
            user=user,
            session_key=session_key,
            client_ip=client_ip(request),
            invite=data.validated_data.get("invite"),
            name=data.validated_data.get("name"),
        )
    except PlaySession.DoesNotExist:
        raise NotFound("No such session to join (has it ended, or is the invite wrong?).") from None
    except seats.SessionFull as exc:
        raise SessionFull(str(exc)) from None
    except services.SessionLimitReached as exc:
        raise TooManySessions(str(exc)) from None
    code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return Response(_output(session, request, serializer=SessionJoinOutput), status=code)


@extend_schema(
    request=PlayerRemoveInput,
    responses={200: SessionOutput, 403: OpenApiResponse(description="Not the creator")},
    summary="Remove a player from a shared session (its creator, or a moderator)",
)
@api_view(["POST"])
@permission_classes([AllowAny])  # an anonymous creator is their browser session; checked below
def session_remove_player(request: Request, session_id, slot: int) -> Response:
    data = PlayerRemoveInput(data=request.data)
    data.is_valid(raise_exception=True)
    key = request.session.session_key
    try:
        session = selectors.session_get(session_id=session_id)
    except PlaySession.DoesNotExist:
        raise NotFound("No such session.") from None
    if not seats.can_remove(session=session, user=request.user, session_key=key):
        # Not theirs: the same answer as an unknown session unless they can see it anyway.
        if not session.is_public:
            raise NotFound("No such session.")
        raise PermissionDenied("Only the session's creator and moderators can remove players.")
    try:
        seats.seat_remove_by(
            session=session,
            slot=slot,
            by=request.user,
            reason=data.validated_data["reason"],
            session_key=key,
        )
    except Seat.DoesNotExist:
        raise NotFound("Nobody sits in that seat.") from None
    return Response(_output(session, request))


@extend_schema(responses={200: LiveSessionOutput(many=True)}, summary="What is being played now")
@api_view(["GET"])
@permission_classes([AllowAny])
def live_list(request: Request) -> Response:
    page = Paginator(selectors.live_listing(), LIVE_PAGE_SIZE).get_page(request.GET.get("page"))

    def link(number: int) -> str:
        return request.build_absolute_uri(f"{request.path}?page={number}")

    return Response(
        {
            "count": page.paginator.count,
            "next": link(page.next_page_number()) if page.has_next() else None,
            "previous": link(page.previous_page_number()) if page.has_previous() else None,
            "results": LiveSessionOutput(page.object_list, many=True).data,
        }
    )


@extend_schema(
    responses={(200, "image/jpeg"): OpenApiResponse(description="The latest frame")},
    summary="A public session's latest frame",
)
@api_view(["GET"])
@permission_classes([AllowAny])
def session_thumbnail(request: Request, session_id) -> HttpResponse:
    try:
        session = selectors.session_get_watchable(session_id=session_id)
    except PlaySession.DoesNotExist:
        raise NotFound("No such session.") from None
    data = get_placement().load_thumbnail(str(session.id)) if session.is_active else None
    if not data:
        raise NotFound("No frame yet.")
    response = HttpResponse(data, content_type="image/jpeg")
    response["Cache-Control"] = "no-store"  # the Live page refreshes it every few seconds
    return response


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
        # Leaving: the session ends with its last player (alone, that is ending it).
        seat = seats.seat_of(session=session, user=user, session_key=key)
        if seat is not None:
            session = seats.seat_leave(seat=seat, reason=EndReason.PLAYER)
            session.refresh_from_db()
    return Response(_output(session, request))
