from django.urls import path

from annotation.verification import views

# Mounted at verification/ (benchmark/routing.py); <pk> is the judgment task.
urlpatterns = [
    # The audit after answering, and the reviewers' overview. (The blind solve screen is the
    # judge page of a solve task; joint review is review's adjudication.)
    path("<int:pk>/items/<int:item_id>/audit/", views.audit, name="verification_audit"),
    path("<int:pk>/audits/", views.audit_list, name="verification_audits"),
]
