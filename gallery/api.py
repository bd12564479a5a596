"""The current user's account over the API."""

from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gallery import services
from worlds.serializers import MeSerializer


class MeApi(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        return Response(MeSerializer(request.user).data)

    @extend_schema(request=MeSerializer, responses=MeSerializer)
    def patch(self, request: Request) -> Response:
        serializer = MeSerializer(request.user, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        user = services.user_update_profile(
            user=request.user,
            display_name=serializer.validated_data.get("display_name", request.user.display_name),
            bio=serializer.validated_data.get("bio", request.user.bio),
        )
        return Response(MeSerializer(user).data)
