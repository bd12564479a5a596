"""REST API for worlds and categories under /api/. Each action is a thin shell over a service."""

from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from worlds import selectors, services
from worlds.catalog_cache import cached_api_list
from worlds.models import Category, World, WorldStatus
from worlds.serializers import (
    CategorySerializer,
    PublishInputSerializer,
    RemixInputSerializer,
    WorldInputSerializer,
    WorldOutputSerializer,
)

ORDERINGS = {
    "relevance": "",
    "trending": "trending",
    "-trending_score": "trending",
    "new": "new",
    "-published_at": "new",
    "popular": "popular",
    "-play_count": "popular",
    "liked": "liked",
    "-like_count": "liked",
}


class WorldPagination(PageNumberPagination):
    page_size = 24
    page_size_query_param = "page_size"
    max_page_size = 100


LIST_PARAMETERS = [
    OpenApiParameter("q", OpenApiTypes.STR, description="Full-text search"),
    OpenApiParameter("category", OpenApiTypes.STR, enum=Category.values),
    OpenApiParameter("creator", OpenApiTypes.STR, description="Username; your own include drafts"),
    OpenApiParameter("ordering", OpenApiTypes.STR, enum=list(ORDERINGS)),
]


class WorldViewSet(viewsets.GenericViewSet):
    lookup_field = "slug"
    lookup_value_regex = r"[-a-zA-Z0-9_]+"
    serializer_class = WorldOutputSerializer
    pagination_class = WorldPagination
    permission_classes = [permissions.IsAuthenticatedOrReadOnly]
    parser_classes = [JSONParser, MultiPartParser, FormParser]
    queryset = World.objects.none()  # for the schema; reads go through selectors

    def get_world(self) -> World:
        try:
            return selectors.world_get_visible(slug=self.kwargs["slug"], viewer=self.request.user)
        except World.DoesNotExist:
            raise Http404("No such world") from None

    def _out(self, world: World, code: int = status.HTTP_200_OK) -> Response:
        liked = selectors.world_liked_ids(worlds=[world], viewer=self.request.user)
        data = WorldOutputSerializer(world, context={"liked_ids": liked}).data
        return Response(data, status=code)

    def _validated(self, serializer_class, partial: bool = False) -> dict:
        serializer = serializer_class(data=self.request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    @extend_schema(parameters=LIST_PARAMETERS, responses=WorldOutputSerializer(many=True))
    def list(self, request: Request) -> HttpResponse:
        return cached_api_list(request, lambda: self._list(request))

    def _list(self, request: Request) -> Response:
        params = request.query_params
        category = params.get("category") or None
        if category and category not in Category.values:
            return Response(
                {"category": [f"Unknown category; one of {', '.join(Category.values)}."]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        ordering = params.get("ordering", "")
        if ordering and ordering not in ORDERINGS:
            return Response(
                {"ordering": [f"Unknown ordering; one of {', '.join(ORDERINGS)}."]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        sort = ORDERINGS.get(ordering, "")
        creator = None
        if params.get("creator"):
            creator = get_user_model().objects.filter(username=params["creator"]).first()
            if creator is None:
                return Response({"creator": ["No such creator."]}, status=400)
        if params.get("q"):
            qs = selectors.world_search(
                query=params["q"], viewer=request.user, category=category, creator=creator,
                sort=sort,
            )  # fmt: skip
        else:
            qs = selectors.world_list(
                viewer=request.user,
                category=category,
                creator=creator,
                sort=sort or selectors.DEFAULT_SORT,
            )
        page = self.paginate_queryset(qs)
        liked = selectors.world_liked_ids(worlds=page, viewer=request.user)
        data = WorldOutputSerializer(page, many=True, context={"liked_ids": liked}).data
        return self.get_paginated_response(data)

    @extend_schema(request=WorldInputSerializer, responses={201: WorldOutputSerializer})
    def create(self, request: Request) -> Response:
        data = self._validated(WorldInputSerializer)
        cover = data.pop("cover", None)
        publish = data.pop("publish", False)
        world = services.world_create(
            creator=request.user, fields=data, cover=cover, publish=publish
        )
        return self._out(world, status.HTTP_201_CREATED)

    @extend_schema(responses=WorldOutputSerializer)
    def retrieve(self, request: Request, slug: str) -> Response:
        return self._out(self.get_world())

    @extend_schema(request=WorldInputSerializer, responses=WorldOutputSerializer)
    def update(self, request: Request, slug: str) -> Response:
        return self._update(partial=False)

    @extend_schema(request=WorldInputSerializer, responses=WorldOutputSerializer)
    def partial_update(self, request: Request, slug: str) -> Response:
        return self._update(partial=True)

    def _update(self, *, partial: bool) -> Response:
        world = self.get_world()
        data = self._validated(WorldInputSerializer, partial=partial)
        cover = data.pop("cover", None)
        data.pop("publish", None)
        world = services.world_update(world=world, by=self.request.user, fields=data, cover=cover)
        return self._out(world)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, slug: str) -> Response:
        services.world_delete(world=self.get_world(), by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=PublishInputSerializer, responses=WorldOutputSerializer)
    @action(detail=True, methods=["post"])
    def publish(self, request: Request, slug: str) -> Response:
        data = self._validated(PublishInputSerializer)
        world = services.world_publish(
            world=self.get_world(), by=request.user, unlisted=data["unlisted"]
        )
        return self._out(world)

    @extend_schema(request=None, responses=WorldOutputSerializer)
    @action(detail=True, methods=["post"])
    def unpublish(self, request: Request, slug: str) -> Response:
        return self._out(services.world_unpublish(world=self.get_world(), by=request.user))

    @extend_schema(request=None, responses=WorldOutputSerializer)
    @action(detail=True, methods=["post", "delete"])
    def like(self, request: Request, slug: str) -> Response:
        world = self.get_world()
        if request.method == "DELETE":
            world = services.world_unlike(world=world, user=request.user)
        else:
            world = services.world_like(world=world, user=request.user)
        return self._out(world)

    @extend_schema(request=RemixInputSerializer, responses={201: WorldOutputSerializer})
    @action(detail=True, methods=["post"])
    def remix(self, request: Request, slug: str) -> Response:
        source = self.get_world()
        data = self._validated(RemixInputSerializer)
        remix = services.world_remix(world=source, by=request.user, fields=data)
        return self._out(remix, status.HTTP_201_CREATED)


class CategoryListApi(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=CategorySerializer(many=True))
    def get(self, request: Request) -> Response:
        counts = dict(
            World.objects.filter(status=WorldStatus.PUBLISHED)
            .values_list("category")
            .annotate(n=Count("id", filter=Q(status=WorldStatus.PUBLISHED)))
        )
        data = [
            {
                "value": value,
                "label": label,
                "url": f"/c/{value}/",
                "world_count": counts.get(value, 0),
            }
            for value, label in Category.choices
        ]
        return Response(CategorySerializer(data, many=True).data)
