from django.contrib.auth import views as auth_views
from django.urls import path

from gallery import api, views

urlpatterns = [
    path("", views.home, name="home"),
    path("c/<slug:category>/", views.category, name="category"),
    path("live/", views.live, name="live"),
    path("search/", views.search, name="search"),
    path("u/<str:username>/", views.profile, name="profile"),
    path("accounts/signup/", views.sign_up, name="signup"),
    path("accounts/login/", views.login_view, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/profile/", views.profile_edit, name="profile-edit"),
    path("api/me/", api.MeApi.as_view(), name="api-me"),
]
