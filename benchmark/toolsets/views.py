"""The project's toolset: everyone sees it; project admins edit it (built-in and shared
toolsets are copied for the project on the first edit)."""

from __future__ import annotations

import json

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from benchmark import limits, permissions, selectors
from benchmark.exceptions import DomainError
from benchmark.toolsets import services as toolset_services


class ToolForm(forms.Form):
    tool_id = forms.IntegerField(required=False, widget=forms.HiddenInput)
    name = forms.CharField(max_length=100)
    category = forms.CharField(max_length=100, required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    parameters = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5, "class": "mono"}),
        initial="[]",
        help_text='JSON list, e.g. [{"name": "img_index", "type": "int", "required": true}]',
    )

    def clean_parameters(self) -> object:
        try:
            return limits.json_loads(self.cleaned_data["parameters"])
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None


@login_required
@require_http_methods(["GET", "POST"])
def toolset_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, pk=project_id)
    can_edit = permissions.can(user=request.user, project=project, action="manage")
    form = ToolForm()
    status = 200
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Only project admins edit the toolset.")
        if request.POST.get("delete"):
            try:
                toolset_services.tool_delete(
                    project=project, user=request.user, tool_id=int(request.POST["delete"])
                )
            except (DomainError, ValueError) as exc:
                form.add_error(None, getattr(exc, "message", str(exc)))
                status = 400
            else:
                return redirect("benchmark:toolset", project_id=project.pk)
        else:
            form = ToolForm(request.POST)
            if form.is_valid():
                data = form.cleaned_data
                try:
                    toolset_services.tool_save(
                        project=project,
                        user=request.user,
                        tool_id=data["tool_id"],
                        name=data["name"],
                        category=data["category"],
                        description=data["description"],
                        parameters=data["parameters"],
                    )
                except DomainError as exc:
                    form.add_error(None, exc.message)
                else:
                    return redirect("benchmark:toolset", project_id=project.pk)
    project.refresh_from_db(fields=["toolset"])
    tools = list(project.toolset.tools.order_by("position", "name"))
    for tool in tools:
        tool.parameters_json = json.dumps(tool.parameters, indent=1)  # type: ignore[attr-defined]
    edges = list(
        project.toolset.edges.select_related("source", "target").order_by(
            "source__name", "target__name"
        )
    )
    return render(
        request,
        "benchmark/toolset.html",
        {"project": project, "tools": tools, "edges": edges, "form": form, "can_edit": can_edit},
        status=status,
    )
