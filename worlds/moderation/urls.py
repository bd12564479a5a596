from django.urls import path

from worlds.moderation import api, views

urlpatterns = [
    path("moderation/", views.queue, name="moderation-queue"),
    path("moderation/act/", views.act, name="moderation-act"),
    path("moderation/audit/", views.audit_log, name="moderation-audit"),
    path("moderation/live/", views.live, name="moderation-live"),
    path("report/", views.report, name="report"),
    path("w/<slug:slug>/appeal/", views.appeal, name="world-appeal"),
    path("api/reports/", api.ReportCreateApi.as_view(), name="api-report-create"),
    path("api/appeals/", api.AppealCreateApi.as_view(), name="api-appeal-create"),
    path("api/me/suspension/", api.SuspensionStatusApi.as_view(), name="api-my-suspension"),
    path("api/moderation/queue/", api.QueueApi.as_view(), name="api-moderation-queue"),
    path("api/moderation/actions/", api.ActionCreateApi.as_view(), name="api-moderation-act"),
    path("api/moderation/audit/", api.AuditListApi.as_view(), name="api-moderation-audit"),
    path("api/moderation/live/", api.LiveSessionsApi.as_view(), name="api-moderation-live"),
]
