from django.urls import path

from benchmark.people import views

urlpatterns = [
    path("projects/<int:project_id>/members/", views.members, name="members"),
    path(
        "projects/<int:project_id>/members/<int:membership_id>/role/",
        views.member_role,
        name="member_role",
    ),
    path(
        "projects/<int:project_id>/members/<int:membership_id>/remove/",
        views.member_remove,
        name="member_remove",
    ),
    path(
        "projects/<int:project_id>/invitations/",
        views.invitation_create,
        name="invitation_create",
    ),
    path(
        "projects/<int:project_id>/invitations/<int:invitation_id>/revoke/",
        views.invitation_revoke,
        name="invitation_revoke",
    ),
    path("invitations/<str:token>/", views.invitation_open, name="invitation_open"),
    path("people/", views.people, name="people"),
    path(
        "people/<int:user_id>/password-link/",
        views.user_password_link,
        name="user_password_link",
    ),
    path("people/<int:user_id>/active/", views.user_active, name="user_active"),
    path(
        "password-link/<str:uidb64>/<str:token>/",
        views.password_link_open,
        name="password_link_open",
    ),
]
