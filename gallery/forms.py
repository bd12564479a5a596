from django import forms
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import UserCreationForm

from gallery.models import User


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


class LoginView(auth_views.LoginView):
    def form_invalid(self, form):
        return self.render_to_response(self.get_context_data(form=form), status=400)
