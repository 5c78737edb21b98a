from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from benchmark import selectors


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    projects = selectors.project_list(user=request.user)
    return render(request, "benchmark/project_list.html", {"projects": projects})
