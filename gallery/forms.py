from django import forms
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.http import HttpResponse

from gallery.models import User
from sessions.client_ip import client_ip
from worlds import ratelimit


class SignUpForm(UserCreationForm):
    display_name = forms.CharField(max_length=60, required=False)

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "display_name", "email")


class ProfileForm(forms.ModelForm):
    class Meta:
        model = User
        fields = ("display_name", "bio")
        widgets = {"bio": forms.Textarea(attrs={"rows": 4})}


class LimitedAuthenticationForm(AuthenticationForm):
    """Django's login form, stopping after LOGINS_PER_15_MIN failed attempts per client address
    and username (a success clears them): without it a password could be guessed as fast as
    requests go."""

    def clean(self) -> dict:
        username = (self.data.get("username") or "").strip().lower()[:150]
        address = client_ip(self.request) if self.request else None
        key = f"accounts:login-failed:{address}:{username}"
        if ratelimit.seen(key) >= settings.LOGINS_PER_15_MIN:
            raise forms.ValidationError(
                "Too many failed sign-in attempts. Please wait a few minutes and try again.",
                code="rate_limited",
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            ratelimit.count(key, window_s=15 * 60)
            raise
        ratelimit.forget(key)
        return cleaned


class LoginView(auth_views.LoginView):
    authentication_form = LimitedAuthenticationForm

    def form_invalid(self, form: forms.Form) -> HttpResponse:
        return self.render_to_response(self.get_context_data(form=form), status=400)
