from django.urls import path

from annotation.verification import views

urlpatterns = [
    # The audit after answering, and the reviewers' overview. (The blind solve screen is the
    # judge page of a solve task; joint review is review's adjudication.)
    path("judge/<int:pk>/items/<int:item_id>/audit/", views.audit, name="verification_audit"),
    path("judge/<int:pk>/audits/", views.audit_list, name="verification_audits"),
]
