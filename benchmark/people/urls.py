from django.urls import path

from benchmark.people import views

# Mounted at projects/<project_id>/people/ and people/ (benchmark/routing.py).
project_urlpatterns = [
    # A project's members and its invitation links.
    path("members/", views.members, name="members"),
    path("members/<int:membership_id>/role/", views.member_role, name="member_role"),
    path("members/<int:membership_id>/remove/", views.member_remove, name="member_remove"),
    path("invitations/", views.invitation_create, name="invitation_create"),
    path(
        "invitations/<int:invitation_id>/revoke/",
        views.invitation_revoke,
        name="invitation_revoke",
    ),
]
urlpatterns = [
    # The staff people page; the links people are sent (an invitation, a password link).
    path("", views.people, name="people"),
    path("<int:user_id>/password-link/", views.user_password_link, name="user_password_link"),
    path("<int:user_id>/active/", views.user_active, name="user_active"),
    path("invitations/<str:token>/", views.invitation_open, name="invitation_open"),
    path(
        "password-link/<str:uidb64>/<str:token>/",
        views.password_link_open,
        name="password_link_open",
    ),
]
