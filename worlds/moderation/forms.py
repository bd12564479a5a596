"""Page forms for moderation. They only shape input: the services decide."""

from django import forms

from worlds.moderation.models import ActionKind, ReportReason, TargetType
from worlds.moderation.services import MODERATOR_ACTIONS


class ReportForm(forms.Form):
    target_type = forms.ChoiceField(choices=TargetType.choices, widget=forms.HiddenInput)
    target_id = forms.CharField(required=False, widget=forms.HiddenInput)
    text = forms.CharField(required=False, widget=forms.HiddenInput, max_length=2000)
    field = forms.CharField(required=False, widget=forms.HiddenInput, max_length=40)
    world = forms.CharField(required=False, widget=forms.HiddenInput)
    session = forms.CharField(required=False, widget=forms.HiddenInput)
    reason = forms.ChoiceField(choices=ReportReason.choices, widget=forms.RadioSelect)
    note = forms.CharField(
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Optional: anything a moderator should know.",
    )


class ActionForm(forms.Form):
    kind = forms.ChoiceField(choices=[(k, ActionKind(k).label) for k in MODERATOR_ACTIONS])
    target_type = forms.ChoiceField(choices=TargetType.choices, widget=forms.HiddenInput)
    target_id = forms.CharField(widget=forms.HiddenInput)
    reason = forms.CharField(max_length=1000, widget=forms.TextInput(attrs={"size": 40}))
    duration_days = forms.IntegerField(
        required=False, min_value=0, help_text="Suspensions: days (empty or 0: permanent)."
    )
    next = forms.CharField(required=False, widget=forms.HiddenInput)


class AppealForm(forms.Form):
    text = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 5}),
        label="Why should this world be restored?",
    )


class AuditFilterForm(forms.Form):
    actor = forms.CharField(required=False)
    action = forms.ChoiceField(required=False, choices=[("", "any action"), *ActionKind.choices])
    target_type = forms.ChoiceField(
        required=False, choices=[("", "any target"), *TargetType.choices]
    )
    target_id = forms.CharField(required=False)
