from django.conf import settings


def site(request):
    return {"SITE_NAME": "Parallax", "DEBUG": settings.DEBUG}
