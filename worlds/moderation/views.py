"""Moderation pages: the queue, actions, the audit log, live oversight; reporting and appeals."""

from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from worlds.models import World
from worlds.moderation import policy, selectors, services
from worlds.moderation.forms import ActionForm, AppealForm, AuditFilterForm, ReportForm
from worlds.moderation.models import ReportReason


def moderator_required(view: Callable) -> Callable:
    """403 for everyone else, signed in or not: moderation pages never redirect to a login."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        if not policy.is_moderator(request.user):
            raise PermissionDenied("Only moderators can see this page.")
        return view(request, *args, **kwargs)

    return wrapper


def _safe_next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    # A path on this site only: redirect() takes a bare word ("abc") for a view name, and
    # answered 500 when none had it.
    local = target.startswith("/")
    if local and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return fallback


def _form_errors(form, exc: ValidationError) -> None:
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)


@require_GET
@moderator_required
def queue(request: HttpRequest) -> HttpResponse:
    items = selectors.queue_items()
    forms = {item.key: ActionForm(initial=_action_initial(item)) for item in items}
    context = {"items": [(item, forms[item.key]) for item in items]}
    return render(request, "moderation/queue.html", context)


def _action_initial(item) -> dict:
    return {"target_type": item.target_type, "target_id": item.target_id, "next": "/moderation/"}


@require_POST
@moderator_required
def act(request: HttpRequest) -> HttpResponse:
    form = ActionForm(request.POST)
    back = _safe_next(request, "/moderation/")
    if not form.is_valid():
        messages.error(request, "The action needs a reason: " + _flat(form.errors))
        return redirect(back)
    data = form.cleaned_data
    try:
        action = services.action_take(
            moderator=request.user,
            kind=data["kind"],
            target_type=data["target_type"],
            target_id=data["target_id"],
            reason=data["reason"],
            duration_days=data["duration_days"],
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(back)
    messages.success(request, f"Done: {action.get_kind_display().lower()}.")
    return redirect(back)


def _flat(errors) -> str:
    return " ".join(str(e) for errs in errors.values() for e in errs)


@require_GET
@moderator_required
def audit_log(request: HttpRequest) -> HttpResponse:
    form = AuditFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    entries = selectors.audit_list(**{k: v or None for k, v in filters.items()})[:200]
    return render(request, "moderation/audit.html", {"form": form, "entries": entries})


@require_GET
@moderator_required
def live(request: HttpRequest) -> HttpResponse:
    sessions = selectors.live_sessions()
    rows = [(s, selectors.recent_prompts(session_id=s.pk, limit=5), _end_form(s)) for s in sessions]
    return render(request, "moderation/live.html", {"rows": rows})


def _end_form(session) -> ActionForm:
    return ActionForm(
        initial={
            "kind": "end_session",
            "target_type": "session",
            "target_id": str(session.pk),
            "next": "/moderation/live/",
        }
    )


@login_required
@require_http_methods(["GET", "POST"])
def report(request: HttpRequest) -> HttpResponse:
    """The report form for any target: /report/?target_type=world&target_id=<slug>."""
    form = ReportForm(request.POST or None, initial=request.GET.dict())
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.report_create(
                reporter=request.user,
                target_type=data["target_type"],
                target_id=data["target_id"],
                reason=data["reason"],
                note=data["note"],
                text=data["text"],
                field=data["field"],
                world_key=data["world"],
                session_key=data["session"],
            )
        except policy.UserSuspended as exc:
            messages.error(request, str(exc))
        except services.ReportRateLimited as exc:
            messages.error(request, str(exc))
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            messages.success(request, "Thanks: a moderator will look at your report.")
            return redirect(_safe_next(request, "/"))
    context = {"form": form, "reasons": ReportReason.choices}
    return render(request, "moderation/report.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def appeal(request: HttpRequest, slug: str) -> HttpResponse:
    world = World.objects.filter(slug=slug, creator=request.user).first()
    removal = selectors.world_removal(world=world) if world is not None else None
    if removal is None:
        raise Http404("No removed world of yours here.")
    form = AppealForm(request.POST or None)
    if request.method == "POST" and removal.can_appeal and form.is_valid():
        try:
            services.appeal_create(world=world, by=request.user, text=form.cleaned_data["text"])
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            messages.success(request, "Your appeal was sent to the moderators.")
            return redirect(world.get_absolute_url())
    context = {"world": world, "removal": removal, "form": form}
    return render(request, "moderation/appeal.html", context)
