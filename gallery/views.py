"""Browse, search, profiles and accounts. Thin shells over the selectors and services."""

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from gallery import selectors as account_selectors
from gallery import services as account_services
from gallery.forms import LoginView, ProfileForm, SignUpForm
from gallery.models import User
from sessions.client_ip import client_ip
from worlds import selectors
from worlds.catalog_cache import cached_for_visitors, cached_fragment, hearts_filled, page_digest
from worlds.forms import render_form
from worlds.models import Category

PER_PAGE = 24
login_view = LoginView.as_view()


def _page(request: HttpRequest, queryset) -> dict:
    """One page of worlds for everyone (no heart full: `hearts_filled` fills a viewer's), and
    the query to keep across pages."""
    page = Paginator(queryset, PER_PAGE).get_page(request.GET.get("page"))
    params = request.GET.copy()
    params.pop("page", None)
    return {"page": page, "liked": set(), "page_query": f"{params.urlencode()}&" if params else ""}


def _sort(request: HttpRequest, default: str = selectors.DEFAULT_SORT) -> str:
    sort = request.GET.get("sort", default)
    return sort if sort in selectors.SORTS or sort == "relevance" else default


def _shared_grid(request: HttpRequest, name: str, render_grid) -> str:
    """A page's cards rendered once for everyone per catalog version and page (`name` says
    whose cards: a fragment for one person has its own name), with this viewer's hearts
    filled in. `render_grid()` returns the HTML and the ids of the worlds it shows."""
    html, shown = cached_fragment(f"{name}:{page_digest(request)}", render_grid)
    return hearts_filled(html, selectors.world_liked_ids(worlds=shown, viewer=request.user))


@require_GET
@cached_for_visitors
def home(request: HttpRequest) -> HttpResponse:
    # The rows are the same for every visitor: rendered once per catalog change and timeout,
    # with a signed-in person's own hearts filled in.
    def cards() -> tuple[str, list[int]]:
        rows = selectors.home_rows()
        html = render_to_string("gallery/_home_rows.html", {"rows": rows})
        lists = [rows.trending, rows.new] + [worlds for _, _, worlds in rows.by_category]
        return html, [world.pk for worlds in lists for world in worlds]

    html, shown = cached_fragment("home-cards", cards)
    html = hearts_filled(html, selectors.world_liked_ids(worlds=shown, viewer=request.user))
    return render(request, "gallery/home.html", {"rows_html": html})


@require_GET
def live(request: HttpRequest) -> HttpResponse:
    """Sessions being played now: live.js fills the page from GET /api/live/."""
    return render(request, "gallery/live.html")


@require_GET
@cached_for_visitors
def category(request: HttpRequest, category: str) -> HttpResponse:
    if category not in Category.values:
        raise Http404("Unknown category")
    sort = _sort(request)
    worlds = selectors.world_list(category=category, sort=sort)
    label = Category(category).label

    def grid() -> tuple[str, list[int]]:
        page = _page(request, worlds)
        html = render_to_string("gallery/_category_grid.html", page | {"category_label": label})
        return html, [w.pk for w in page["page"].object_list]

    # The cards are the same for everyone: rendered once per catalog version and page, with a
    # signed-in person's own hearts filled in.
    html = _shared_grid(request, "category-grid", grid)
    context = {"grid_html": html, "category": category, "category_label": label, "sort": sort}
    return render(request, "gallery/category.html", context | {"sorts": selectors.SORTS})


@require_GET
@cached_for_visitors
def search(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:200]
    category_value = request.GET.get("category", "")
    if category_value not in Category.values:
        category_value = ""
    sort = _sort(request, default="relevance" if query else selectors.DEFAULT_SORT)

    def grid() -> tuple[str, list[int]]:
        results = selectors.world_search(query=query, category=category_value or None, sort=sort)
        page = _page(request, results)
        html = render_to_string("gallery/_search_grid.html", page | {"query": query})
        return html, [w.pk for w in page["page"].object_list]

    # Results are the same for everyone (only published worlds): shared, as a category's.
    context = {
        "grid_html": _shared_grid(request, "search-grid", grid),
        "query": query,
        "category": category_value,
        "categories": Category.choices,
        "sort": sort,
        "sorts": selectors.SORTS,
    }
    return render(request, "gallery/search.html", context)


@require_GET
@cached_for_visitors
def profile(request: HttpRequest, username: str) -> HttpResponse:
    # The owner's own page lists their drafts and private runs: a fragment of its own, named by
    # their id, so no one else's page can ever be served from it. Everyone else shares one.
    viewer = request.user
    is_self = viewer.is_authenticated and viewer.username == username
    name = f"profile-own:{viewer.pk}" if is_self else "profile"

    def body() -> tuple[str, list[int], str]:
        try:
            person = account_selectors.user_get_profile(username=username)
        except User.DoesNotExist:
            raise Http404("No such creator") from None
        own = is_self and person.pk == viewer.pk
        worlds = selectors.world_list(viewer=viewer if own else None, creator=person, sort="new")
        page = _page(request, worlds)
        context = page | {"person": person, "is_self": own, "path": request.path}
        html = render_to_string("gallery/_profile_body.html", context)  # no request: no viewer
        return html, [w.pk for w in page["page"].object_list], person.public_name

    html, shown, title = cached_fragment(f"{name}:{page_digest(request)}", body)
    html = hearts_filled(html, selectors.world_liked_ids(worlds=shown, viewer=viewer))
    return render(request, "gallery/profile.html", {"body_html": html, "title": title})


def _safe_next(request: HttpRequest) -> str:
    target = request.GET.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return "/"


def sign_up(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = account_services.user_sign_up(
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
                email=form.cleaned_data.get("email") or "",
                display_name=form.cleaned_data.get("display_name") or "",
                client_ip=client_ip(request),
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome to Parallax.")
            return redirect(_safe_next(request))
    return render_form(request, "registration/signup.html", {"form": form})


@login_required
def profile_edit(request: HttpRequest) -> HttpResponse:
    form = ProfileForm(request.POST or None, instance=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            account_services.user_update_profile(
                user=request.user,
                display_name=form.cleaned_data["display_name"],
                bio=form.cleaned_data["bio"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, "Profile saved.")
            return redirect("profile", username=request.user.username)
    return render_form(request, "gallery/profile_edit.html", {"form": form})


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception=None) -> HttpResponse:
    """404 everywhere: JSON under /api/ (every API error is JSON), a page elsewhere."""
    if _wants_json(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return render(request, "gallery/error.html", {"code": 404, "title": "Not found"}, status=404)


def forbidden(request: HttpRequest, exception=None) -> HttpResponse:
    # The exception's message says why (not the creator, a suspended account, ...).
    message = str(exception or "") or "You do not have permission to do this."
    if _wants_json(request):
        return JsonResponse({"detail": message}, status=403)
    context = {"code": 403, "title": "Not allowed", "message": message}
    return render(request, "gallery/error.html", context, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"detail": "Server error."}, status=500)
    # No template context processors here: the failure may be in one of them.
    return HttpResponse(
        "<!doctype html><title>Server error</title><h1>Something went wrong</h1>",
        status=500,
    )


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for whatever the pages link to (it was a 404 on every
    page): the icon the pages link, looked up per request (a hashed name after collectstatic)."""
    return redirect(static("img/favicon.svg"), permanent=True)
