"""Moderation REST API: reports and appeals for signed-in users; the rest for moderators only."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import Throttled
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from worlds.moderation import policy, selectors, services
from worlds.moderation.models import (
    ActionKind,
    Appeal,
    AuditEntry,
    ModerationAction,
    Report,
    ReportReason,
    TargetType,
)


class IsModerator(BasePermission):
    message = "Only moderators can do this."

    def has_permission(self, request, view) -> bool:
        return policy.is_moderator(request.user)


# --- Serializers ----------------------------------------------------------------------------


class ReportIn(serializers.Serializer):
    target_type = serializers.ChoiceField(choices=TargetType.choices)
    target_id = serializers.CharField(
        required=False, allow_blank=True, help_text="World slug, session id or username."
    )
    reason = serializers.ChoiceField(choices=ReportReason.choices)
    note = serializers.CharField(required=False, allow_blank=True, max_length=1000)
    text = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    field = serializers.CharField(
        required=False, allow_blank=True, max_length=40, help_text="For text: title, event..."
    )
    world = serializers.CharField(required=False, allow_blank=True, help_text="Text context.")
    session = serializers.CharField(required=False, allow_blank=True, help_text="Text context.")
    player = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=63,
        help_text="A shared session's player, by seat slot (session and session-text reports).",
    )


class ReportOut(serializers.ModelSerializer):
    reporter = serializers.CharField(source="reporter.username", default=None)

    class Meta:
        model = Report
        fields = [
            "id", "reporter", "target_type", "target_id", "field", "text", "reason", "note",
            "player_slot", "player_name", "status", "created_at",
        ]  # fmt: skip


class ActionIn(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=[(k, ActionKind(k).label) for k in services.MODERATOR_ACTIONS]
    )
    target_type = serializers.ChoiceField(choices=TargetType.choices)
    target_id = serializers.CharField()
    reason = serializers.CharField(max_length=1000)
    duration_days = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="Suspend only; 0 or null: permanent.",
    )


class ActionOut(serializers.ModelSerializer):
    moderator = serializers.CharField(source="moderator.username", default=None)

    class Meta:
        model = ModerationAction
        fields = ["id", "kind", "moderator", "target_type", "target_id", "reason", "created_at"]


class AuditOut(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = [
            "id", "actor_name", "action", "target_type", "target_id", "target_label", "reason",
            "before", "after", "created_at",
        ]  # fmt: skip


class AppealIn(serializers.Serializer):
    world = serializers.CharField(help_text="The removed world's slug.")
    text = serializers.CharField(max_length=2000)


class AppealOut(serializers.ModelSerializer):
    world = serializers.CharField(source="world.slug")

    class Meta:
        model = Appeal
        fields = ["id", "world", "text", "status", "created_at", "decided_at"]


class QueueItemOut(serializers.Serializer):
    target_type = serializers.CharField()
    target_id = serializers.CharField()
    report_count = serializers.IntegerField()
    latest_at = serializers.DateTimeField()
    reasons = serializers.DictField(child=serializers.IntegerField())
    world = serializers.CharField(source="world.slug", default=None)
    world_status = serializers.CharField(source="world.status", default=None)
    user = serializers.CharField(source="target_user.username", default=None)
    text = serializers.CharField()
    reports = ReportOut(many=True)
    actions = ActionOut(many=True)
    appeal = AppealOut(allow_null=True)


class LiveSessionOut(serializers.Serializer):
    id = serializers.UUIDField()
    world = serializers.CharField(source="world.slug")
    player = serializers.CharField(source="player.username", default=None)
    status = serializers.CharField()
    is_public = serializers.BooleanField()
    created_at = serializers.DateTimeField()


# --- Views ----------------------------------------------------------------------------------


class ReportCreateApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=ReportIn, responses={201: ReportOut}, tags=["moderation"])
    def post(self, request: Request) -> Response:
        data = _valid(ReportIn, request)
        try:
            report = services.report_create(
                reporter=request.user,
                target_type=data["target_type"],
                target_id=data.get("target_id", ""),
                reason=data["reason"],
                note=data.get("note", ""),
                text=data.get("text", ""),
                field=data.get("field", ""),
                world_key=data.get("world", ""),
                session_key=data.get("session", ""),
                player_slot=data.get("player"),
            )
        except services.ReportRateLimited as exc:
            raise Throttled(detail=str(exc)) from None
        return Response(ReportOut(report).data, status=status.HTTP_201_CREATED)


class AppealCreateApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=AppealIn, responses={201: AppealOut}, tags=["moderation"])
    def post(self, request: Request) -> Response:
        data = _valid(AppealIn, request)
        world = services.appealable_world(key=data["world"], by=request.user)
        appeal = services.appeal_create(world=world, by=request.user, text=data["text"])
        return Response(AppealOut(appeal).data, status=status.HTTP_201_CREATED)


class QueueApi(APIView):
    permission_classes = [IsModerator]

    @extend_schema(responses=QueueItemOut(many=True), tags=["moderation"])
    def get(self, request: Request) -> Response:
        return Response(QueueItemOut(selectors.queue_items(), many=True).data)


class ActionCreateApi(APIView):
    permission_classes = [IsModerator]

    @extend_schema(request=ActionIn, responses={201: ActionOut}, tags=["moderation"])
    def post(self, request: Request) -> Response:
        data = _valid(ActionIn, request)
        action = services.action_take(
            moderator=request.user,
            kind=data["kind"],
            target_type=data["target_type"],
            target_id=data["target_id"],
            reason=data["reason"],
            duration_days=data.get("duration_days"),
        )
        return Response(ActionOut(action).data, status=status.HTTP_201_CREATED)


AUDIT_FILTERS = ["actor", "action", "target_type", "target_id"]


class AuditListApi(APIView):
    permission_classes = [IsModerator]

    @extend_schema(
        parameters=[OpenApiParameter(name, str, required=False) for name in AUDIT_FILTERS],
        responses=AuditOut(many=True),
        tags=["moderation"],
    )
    def get(self, request: Request) -> Response:
        filters = {name: request.query_params.get(name) or None for name in AUDIT_FILTERS}
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(selectors.audit_list(**filters), request, view=self)
        return paginator.get_paginated_response(AuditOut(page, many=True).data)


class LiveSessionsApi(APIView):
    permission_classes = [IsModerator]

    @extend_schema(responses=LiveSessionOut(many=True), tags=["moderation"])
    def get(self, request: Request) -> Response:
        return Response(LiveSessionOut(selectors.live_sessions(), many=True).data)


class SuspensionStatusApi(APIView):
    """The caller's own suspension, so clients can show why publishing or playing is refused."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses=inline_serializer(
            "SuspensionStatus",
            {
                "suspended": serializers.BooleanField(),
                "until": serializers.DateTimeField(allow_null=True),
                "message": serializers.CharField(),
            },
        ),
        tags=["moderation"],
    )
    def get(self, request: Request) -> Response:
        suspension = policy.suspension_active(user=request.user)
        if suspension is None:
            return Response({"suspended": False, "until": None, "message": ""})
        return Response(
            {"suspended": True, "until": suspension.ends_at, "message": suspension.describe()}
        )


def _valid(serializer_class, request: Request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
