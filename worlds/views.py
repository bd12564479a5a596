"""World pages: detail, publish/edit/remix forms, like, and placeholder covers. Thin shells."""

import time
import uuid
from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET, require_POST

from worlds import selectors, services
from worlds.catalog_cache import cached_for_visitors, cached_fragment, hearts_filled
from worlds.covers import placeholder_svg
from worlds.forms import WorldForm, render_form
from worlds.models import Category, World, WorldStatus


def with_world(view: Callable) -> Callable:
    """Resolve <slug> to a world the viewer may see (404 otherwise) and pass it on."""

    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args, **kwargs):
        try:
            world = selectors.world_get_visible(slug=slug, viewer=request.user)
        except World.DoesNotExist:
            raise Http404("No such world") from None
        return view(request, world, *args, **kwargs)

    return wrapper


def owner_only(view: Callable) -> Callable:
    """After with_world: someone else's (visible) world is a 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, world: World, *args, **kwargs):
        if world.creator_id != request.user.pk:
            raise PermissionDenied("Only the creator can change this world.")
        return view(request, world, *args, **kwargs)

    return wrapper


@require_GET
@cached_for_visitors
@with_world
def world_detail(request: HttpRequest, world: World) -> HttpResponse:
    # The world's row is read per request (who may see it, its counts as they are now); its
    # public runs and remixes are the same for everyone who may: rendered once per catalog
    # version, with the viewer's hearts filled in on the remix cards.
    def extras() -> tuple[str, list[int]]:
        remixes = list(selectors.world_remixes(world=world)[:6])
        html = render_to_string(
            "worlds/_detail_extras.html", {"world": world, "remixes": remixes, "liked": ()}
        )
        return html, [remix.pk for remix in remixes]

    html, shown = cached_fragment(f"world-extras:{world.pk}", extras)
    liked = selectors.world_liked_ids(worlds=[world.pk, *shown], viewer=request.user)
    context = {
        "world": world,
        "liked": world.pk in liked,
        "is_owner": world.creator_id == request.user.pk,
        "extras_html": hearts_filled(html, liked),
        **selectors.world_sample_exchange(world=world),
    }
    return render(request, "worlds/detail.html", context)


def _world_form_page(
    request: HttpRequest, form: WorldForm, save: Callable[[WorldForm], World], context: dict
) -> HttpResponse:
    """Create, edit and remix share one submit: save through a service, then publish as asked.

    All or nothing: a ValidationError lands on the form and nothing is saved (a resubmit would
    otherwise create a second copy of a world whose publish step failed).
    """
    submit_id = _submit_id(request)
    if request.method == "POST" and form.is_valid():
        key = f"world-form:{request.user.pk}:{submit_id}"
        if not cache.add(key, 0, SUBMIT_KEEP_S):  # this form was sent before
            first = _first_sending(request, key)
            if first is not None:
                return redirect(first)
            if not cache.add(key, 0, SUBMIT_KEEP_S):
                form.add_error(None, "This form was already sent and is still being saved.")
                return render_form(request, "worlds/form.html", {"form": form, **context})
        world = None
        try:
            with transaction.atomic():
                world = _publish_as_asked(save(form), request.user, form.cleaned_data["visibility"])
        except ValidationError as exc:
            form.add_error(None, exc)
        finally:
            if world is None:  # refused or failed (a rate limit too): sent again, it may go through
                cache.delete(key)
        if world is not None:
            cache.set(key, world.pk, SUBMIT_KEEP_S)
            _announce(request, world)
            return redirect(world)
    context = {"form": form, "submit_id": submit_id, **context}
    return render_form(request, "worlds/form.html", context)


# A form page carries an id of its own: sent twice (a double click, the back button), the
# second answer is the first one's world, not a second copy of it.
SUBMIT_KEEP_S = 3600
SUBMIT_WAIT_S = 10.0


def _submit_id(request: HttpRequest) -> str:
    sent = request.POST.get("submit_id", "") if request.method == "POST" else ""
    return sent if sent.isalnum() and len(sent) == 32 else uuid.uuid4().hex


def _first_sending(request: HttpRequest, key: str) -> World | None:
    """The world the first sending of this form made, waiting while it is saved; None if that
    failed (the key is gone) or is still running at SUBMIT_WAIT_S."""
    deadline = time.monotonic() + SUBMIT_WAIT_S
    while (pk := cache.get(key)) == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    return World.objects.filter(pk=pk, creator=request.user).first() if pk else None


def _publish_as_asked(world: World, user, visibility: str) -> World:
    if visibility == "draft":
        if world.is_public:
            return services.world_unpublish(world=world, by=user)
        return world
    if world.status == visibility:
        return world
    return services.world_publish(world=world, by=user, unlisted=visibility == "unlisted")


def _announce(request: HttpRequest, world: World) -> None:
    if world.status == WorldStatus.IN_REVIEW:
        messages.warning(request, "Your world is waiting for a moderator before it goes public.")
    elif world.is_public:
        messages.success(request, f"“{world.title}” is published.")  # "live" is a category
    else:
        messages.info(request, "Saved as a draft.")


@login_required
def world_create(request: HttpRequest) -> HttpResponse:
    form = WorldForm(request.POST or None, request.FILES or None)
    return _world_form_page(
        request,
        form,
        lambda f: services.world_create(
            creator=request.user, fields=f.spec(), cover=f.cleaned_data["cover"]
        ),
        {"mode": "create"},
    )


@login_required
@with_world
@owner_only
def world_edit(request: HttpRequest, world: World) -> HttpResponse:
    form = WorldForm(
        request.POST or None, request.FILES or None, initial=WorldForm.initial_from(world)
    )
    return _world_form_page(
        request,
        form,
        lambda f: services.world_update(
            world=world, by=request.user, fields=f.spec(), cover=f.cleaned_data["cover"]
        ),
        {"mode": "edit", "world": world},
    )


@login_required
@with_world
def world_remix(request: HttpRequest, world: World) -> HttpResponse:
    initial = WorldForm.initial_from(world) | {
        "title": f"{world.title} (remix)"[:100],
        "seed": None,
    }
    form = WorldForm(request.POST or None, request.FILES or None, initial=initial)
    return _world_form_page(
        request,
        form,
        lambda f: services.world_remix(
            world=world, by=request.user, fields=f.spec(), cover=f.cleaned_data["cover"]
        ),
        {"mode": "remix", "source": world},
    )


def _service_post(action: Callable[[HttpRequest, World], World], done: str | None) -> Callable:
    """A POST-only page action on one world: run the service, flash the outcome, go back.

    done=None announces the world's new status; "" says nothing.
    """

    @require_POST
    @login_required
    @with_world
    def view(request: HttpRequest, world: World) -> HttpResponse:
        try:
            world = action(request, world)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        else:
            if done is None:
                _announce(request, world)
            elif done:
                messages.success(request, done)
        return redirect(world)

    return view


world_like = _service_post(lambda r, w: services.world_toggle_like(world=w, user=r.user), "")
world_publish = _service_post(lambda r, w: services.world_publish(world=w, by=r.user), None)
world_unpublish = _service_post(
    lambda r, w: services.world_unpublish(world=w, by=r.user), "Moved back to drafts."
)


@require_POST
@login_required
@with_world
@owner_only
def world_delete(request: HttpRequest, world: World) -> HttpResponse:
    services.world_delete(world=world, by=request.user)
    messages.success(request, f"Deleted “{world.title}”.")
    return redirect("profile", username=request.user.username)


@require_GET
@cache_control(public=True, max_age=86400)
def world_placeholder(request: HttpRequest, category: str, slug: str) -> HttpResponse:
    if category not in Category.values:
        raise Http404("Unknown category")
    svg = placeholder_svg(slug=slug, category=category)
    return HttpResponse(svg, content_type="image/svg+xml")
