"""`/api/recordings/` and `/api/sessions/<id>/recording/`: a run's recording, made public,
exported as MP4, forked from one of its frames, deleted (thin shells over
`sessions.recordings`)."""

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.storage import default_storage
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, permission_classes, throttle_classes
from rest_framework.exceptions import APIException, NotFound
from rest_framework.exceptions import PermissionDenied as Forbidden
from rest_framework.exceptions import ValidationError as BadRequest
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle

from sessions import forks, recordings, services
from sessions.api import TooManySessions, _output, _player
from sessions.client_ip import client_ip
from sessions.models import Recording
from sessions.serializers import SessionOutput
from worlds.models import World

NOT_YOURS = "No recording you can see here (it is private, removed, or there is none)."


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class RecordingOutput(serializers.ModelSerializer):
    world = serializers.CharField(source="world.slug")
    world_title = serializers.CharField(source="world.title")
    version = serializers.IntegerField(source="world_version.number")
    session = serializers.UUIDField(source="session_id")
    public = serializers.BooleanField(source="is_public")
    video_url = serializers.SerializerMethodField()
    videos = serializers.SerializerMethodField()
    thumbnail_url = serializers.SerializerMethodField()
    replay_url = serializers.CharField(source="get_absolute_url")
    cameras = serializers.SerializerMethodField()
    marks = serializers.SerializerMethodField()
    fps = serializers.SerializerMethodField()
    weights_match = serializers.SerializerMethodField()
    is_player = serializers.SerializerMethodField()

    class Meta:
        model = Recording
        fields = [
            "id", "world", "world_title", "version", "session", "players", "duration_s",
            "frames", "fps", "size", "complete", "public", "video_status", "video_progress",
            "video_url", "videos", "thumbnail_url", "replay_url", "cameras", "marks",
            "weights_match", "is_player", "created_at",
        ]  # fmt: skip

    def get_videos(self, obj) -> dict[str, str]:
        """slot -> MP4 URL of that player's camera, once exported."""
        return {slot: default_storage.url(key) for slot, key in (obj.videos or {}).items()}

    def get_video_url(self, obj) -> str | None:
        """The lead camera's MP4 (what spectators saw), once exported."""
        videos = self.get_videos(obj)
        return videos[min(videos, key=int)] if videos else None

    def get_thumbnail_url(self, obj) -> str:
        return default_storage.url(obj.thumbnail) if obj.thumbnail else obj.world.cover_url

    def get_cameras(self, obj) -> dict[str, int]:
        """slot -> frames of that camera."""
        return (obj.timeline or {}).get("cameras", {})

    def get_marks(self, obj) -> list[dict]:
        """Events, story picks and lines said: {frame (the lead's), kind, text, by}."""
        return (obj.timeline or {}).get("marks", [])

    def get_fps(self, obj) -> float:
        return float((obj.timeline or {}).get("fps") or 0)

    def get_weights_match(self, obj) -> bool:
        """False: other weights drew it; it cannot be exported or forked (never redrawn)."""
        return recordings.weights_match(obj)

    def get_is_player(self, obj) -> bool:
        return bool(self.context.get("is_player"))


class RecordingPatchInput(serializers.Serializer):
    public = serializers.BooleanField()


class ForkInput(serializers.Serializer):
    frame = serializers.IntegerField(min_value=0)
    slot = serializers.IntegerField(min_value=0, required=False, allow_null=True, default=None)


class ExportThrottle(UserRateThrottle):
    """Exports per player (or address) and hour: each one replays and encodes on a core."""

    scope = "recording_export"

    def get_rate(self) -> str:
        return f"{settings.RECORDING_EXPORTS_PER_HOUR}/hour"


def _viewer(request: Request):
    user = request.user if request.user.is_authenticated else None
    return user, request.session.session_key


def _visible(request: Request, **lookup) -> Recording:
    user, key = _viewer(request)
    recording = (
        Recording.objects.select_related("world", "world_version", "session")
        .filter(**lookup)
        .first()
    )
    if recording is None or not recordings.can_see(recording, user=user, session_key=key):
        raise NotFound(NOT_YOURS)
    return recordings.recording_refresh(recording)


def _mine(request: Request, recording: Recording) -> None:
    user, key = _viewer(request)
    if not recordings.is_player(recording, user=user, session_key=key):
        raise Forbidden("Only the players of this run may change it.")


def _out(request: Request, recording: Recording, code=status.HTTP_200_OK) -> Response:
    user, key = _viewer(request)
    mine = recordings.is_player(recording, user=user, session_key=key)
    return Response(RecordingOutput(recording, context={"is_player": mine}).data, status=code)


@extend_schema(
    responses={200: RecordingOutput, 404: OpenApiResponse(description=NOT_YOURS)},
    summary="The recording of a session you played, or of a public one",
)
@api_view(["GET"])
@permission_classes([AllowAny])
def session_recording(request: Request, session_id) -> Response:
    return _out(request, _visible(request, session_id=session_id))


@extend_schema(
    methods=["GET"],
    responses={200: RecordingOutput, 404: OpenApiResponse(description=NOT_YOURS)},
    summary="A recording",
)
@extend_schema(
    methods=["PATCH"],
    request=RecordingPatchInput,
    responses={
        200: RecordingOutput,
        403: OpenApiResponse(description="Not one of its players"),
        404: OpenApiResponse(description=NOT_YOURS),
        409: OpenApiResponse(description="A run a moderator ended, or of a private world"),
    },
    summary="Publish a run (or make it private again)",
)
@extend_schema(
    methods=["DELETE"],
    responses={204: None, 403: OpenApiResponse(description="Not one of its players")},
    summary="Delete a recording and its files",
)
@api_view(["GET", "PATCH", "DELETE"])
@permission_classes([AllowAny])
def recording_detail(request: Request, recording_id) -> Response:
    recording = _visible(request, pk=recording_id)
    if request.method == "GET":
        return _out(request, recording)
    _mine(request, recording)
    if request.method == "DELETE":
        recordings.recording_delete(recording)
        return Response(status=status.HTTP_204_NO_CONTENT)
    data = RecordingPatchInput(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        recording = recordings.recording_set_public(recording, public=data.validated_data["public"])
    except recordings.RecordingConflict as exc:
        raise Conflict(str(exc)) from None
    return _out(request, recording)


@extend_schema(
    request=None,
    responses={
        202: RecordingOutput,
        404: OpenApiResponse(description=NOT_YOURS),
        409: OpenApiResponse(description="An export is running, or other weights drew it"),
        429: OpenApiResponse(description="Too many exports"),
    },
    summary="Export the run as MP4 (H.264), one video per player's camera",
)
@api_view(["POST"])
@permission_classes([AllowAny])
@throttle_classes([ExportThrottle])
def recording_export(request: Request, recording_id) -> Response:
    recording = _visible(request, pk=recording_id)
    user, _ = _viewer(request)
    try:
        recording = recordings.recording_export(recording, user=user)
    except recordings.RecordingConflict as exc:
        raise Conflict(str(exc)) from None
    except PermissionDenied as exc:
        raise Forbidden(str(exc)) from None
    recording.refresh_from_db()
    return _out(request, recording, status.HTTP_202_ACCEPTED)


@extend_schema(
    request=ForkInput,
    responses={
        201: SessionOutput,
        400: OpenApiResponse(description="A frame or camera the run does not have"),
        404: OpenApiResponse(description=NOT_YOURS),
        409: OpenApiResponse(description="A Live world, or other weights drew it"),
        429: OpenApiResponse(description="Too many sessions at once"),
    },
    summary="Play on from a frame of the run: a new live session whose world starts there",
)
@api_view(["POST"])
@permission_classes([AllowAny])
def recording_fork(request: Request, recording_id) -> Response:
    recording = _visible(request, pk=recording_id)
    data = ForkInput(data=request.data)
    data.is_valid(raise_exception=True)
    user, session_key = _player(request)
    try:
        session, _ = forks.recording_fork(
            recording,
            frame=data.validated_data["frame"],
            slot=data.validated_data["slot"],
            user=user,
            session_key=session_key,
            client_ip=client_ip(request),
        )
    except ValidationError as exc:
        raise BadRequest(exc.message_dict) from None
    except recordings.RecordingConflict as exc:
        raise Conflict(str(exc)) from None
    except World.DoesNotExist:
        raise NotFound("This world can no longer be played.") from None
    except services.SessionLimitReached as exc:
        raise TooManySessions(str(exc)) from None
    return Response(_output(session, request), status=status.HTTP_201_CREATED)


@extend_schema(
    request=None,
    responses={
        202: OpenApiResponse(description="The clip is being made from this run"),
        403: OpenApiResponse(description="Not the world's creator"),
        404: OpenApiResponse(description=NOT_YOURS),
        409: OpenApiResponse(description="A private run, or other weights drew it"),
    },
    summary="Use this public run for the world's gallery card clip (its creator only)",
)
@api_view(["POST"])
@permission_classes([AllowAny])
def recording_cover(request: Request, recording_id) -> Response:
    recording = _visible(request, pk=recording_id)
    user, _ = _viewer(request)
    try:
        recordings.recording_make_cover(recording, user=user)
    except PermissionDenied as exc:
        raise Forbidden(str(exc)) from None
    except recordings.RecordingConflict as exc:
        raise Conflict(str(exc)) from None
    return Response({"detail": "The world's card will play this run."}, status=202)
