"""Human evaluation of answers in a browser (issue 11; ATP-Bench App. B.2): a reviewer renders
two models' answers (each calls Reference on the item's stored image) from the "Render
answers" page, makes the task over them, three raters score every answer with the keyboard
(i / m count inappropriate and missed images, a digit gives FS, s submits) reading the
rendered document (``#answer [data-rendered]``, with the image drawn and loaded) and never a
model's name, not even on the item's own page, and the results page shows the hand-computed
means and Spearman's rho against a judge run on the same answers.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.judgment_tasks.models import Judgment, JudgmentTask
from annotation.judgment_tasks.units import unit_responses
from benchmark.models import Origin
from review.answer_rendering.models import RenderedAnswer
from tests.factories import (
    ImageFactory,
    ItemFactory,
    JudgeRunFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
    image_ref,
    mam_judgment,
)

pytestmark = pytest.mark.django_db(transaction=True)

MODELS = ("Orchid-9000", "Basalt-XL")
# Per answer (model, n): what each rater gives, (# Inappr., MI, FS).
RATINGS = {
    ("Orchid-9000", 0): {"r1": (1, 0, 5), "r2": (1, 0, 5), "r3": (1, 0, 4)},  # FS 14/3
    ("Orchid-9000", 1): {"r1": (1, 0, 4), "r2": (1, 0, 4), "r3": (1, 0, 2)},  # FS 10/3
    ("Basalt-XL", 0): {"r1": (0, 1, 3), "r2": (0, 2, 2), "r3": (0, 0, 3)},  # FS 8/3
    ("Basalt-XL", 1): {"r1": (0, 1, 1), "r2": (0, 2, 1), "r3": (0, 0, 2)},  # FS 4/3
}
# The judge's Chief score per answer: O0 90, B0 70, O1 60, B1 20. People rank the answers
# O0, O1, B0, B1 and the judge O0, B0, O1, B1: rho = 1 - 6 * (0 + 1 + 1 + 0) / (4 * 15) = 0.8.
CHIEF = {("Orchid-9000", 0): 90, ("Orchid-9000", 1): 60, ("Basalt-XL", 0): 70,
         ("Basalt-XL", 1): 20}  # fmt: skip


def test_three_raters_score_answers_blind_and_the_results_match(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Rendered answers", data_format="atp")
    image = ImageFactory(projects=[project])
    ref = image_ref(image, position=0)
    reviewer = UserFactory(username="rev")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    raters = {name: UserFactory(username=name) for name in ("r1", "r2", "r3")}
    for user in raters.values():
        MembershipFactory(project=project, user=user, role="annotator")
    which: dict[int, tuple[str, int]] = {}
    which_items: list[int] = []
    run = JudgeRunFactory(project=project, model="mam-judge")
    for n in range(2):
        item = ItemFactory(
            project=project, position=n, external_id=f"nave-{n}", image_refs=[ref],
            query=f"Show me the nave of church {n}.",
            documents=[{"text": f"Church {n} has a long nave.", "images": [ref["path"]]}],
        )  # fmt: skip
        which_items.append(item.pk)
        for model in MODELS:
            answer = ResponseFactory(
                item=item, origin=Origin.MODEL, model_name=model, key=f"model:{model}",
                text=f"Church {n}: the nave is long.\n\n<tool>{{\"tool_name\": \"Reference\", "
                '"description": "the nave", "params": {"img_index": 0}}</tool>',
            )  # fmt: skip
            which[answer.pk] = (model, n)
            mam_judgment(run, answer, score=CHIEF[(model, n)])

    # The reviewer renders the four answers first (the Reference call draws the item's
    # stored image into each document).
    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="Render answers").click()
    expect(page.locator("h1")).to_have_text("Render answers")
    ready(page)
    page.get_by_role("button", name="Render").click()
    job = page.locator("#render-started [id^=job-]")
    expect(job).to_have_attribute("data-status", "succeeded")
    expect(job).to_contain_text("4 answers, 4 rendered anew")
    assert RenderedAnswer.objects.filter(response_id__in=which, error="").count() == 4

    # The reviewer makes the task: ATP-Bench B.2, both models, two answers each, k = 3.
    page.goto(f"/projects/{project.pk}/judgment-tasks/")
    page.get_by_role("link", name="Human evaluation").click()
    page.get_by_label("ATP-Bench B.2: # Inappr., MI and FS").check()
    for model in MODELS:
        page.get_by_label(f"{model} (2 answers)").check()
    page.get_by_label("Answers per model").fill("2")
    page.get_by_label("Seed").fill("11")
    page.get_by_label("Raters per answer (k)").fill("3")
    page.get_by_label("Name").fill("Rendered answers B.2")
    page.get_by_role("button", name="Create the task").click()
    expect(page.locator("#he-seed")).to_have_text("11")
    expect(page.locator("#he-progress")).to_contain_text("0 of 4 answers fully rated")
    task = JudgmentTask.objects.get(project=project, name="Rendered answers B.2")

    # Each rater scores the four answers with the keyboard, in an order of their own.
    orders = {}
    for name, user in raters.items():
        rater = login_page(user)
        rater.goto(f"/projects/{project.pk}/judgment-tasks/")
        rater.get_by_role("button", name="Rate next unit").click()
        orders[name] = []
        for _ in range(4):
            expect(rater.locator("#rating")).to_be_visible()
            unit = re.search(r"/units/([^/]+)/$", rater.url).group(1)
            (answer_id,) = unit_responses(unit)
            orders[name].append(answer_id)
            model, n = which[answer_id]
            # What the reader sees: the query, its document, the answer with the image drawn
            # where the Reference call stands; and no model's name anywhere.
            document = rater.locator("#answer [data-rendered] .rd-document")
            expect(document).to_contain_text(f"Church {n}: the nave is long.")
            figure = document.locator('.rd-figure[data-status="rendered"] img')
            expect(figure).to_have_count(1)
            expect(rater.locator("#answer img")).to_have_count(1)
            rater.wait_for_function(
                "img => img.complete && img.naturalWidth > 0", arg=figure.element_handle()
            )
            expect(rater.locator(".query-text")).to_contain_text(f"church {n}")
            expect(rater.locator("body")).not_to_contain_text(re.compile("Orchid|Basalt", re.I))
            assert not re.search("orchid|basalt", rater.title() + rater.url, re.I)
            expect(rater.locator("table.judgments")).to_have_count(0)  # blind
            inappr, mi, fs = RATINGS[(model, n)][name]
            ready(rater)
            for _ in range(inappr):
                rater.keyboard.press("i")
            for _ in range(mi + 1):
                rater.keyboard.press("m")
            rater.keyboard.press("M")  # one too many, taken back
            expect(rater.locator("#f-inappr")).to_have_value(str(inappr))
            expect(rater.locator("#f-mi")).to_have_value(str(mi))
            rater.keyboard.press(str(fs))
            expect(rater.locator(f"input[name=fs][value='{fs}']")).to_be_checked()
            with rater.expect_navigation():
                rater.keyboard.press("s")
        expect(rater.locator("h1")).to_have_text("Nothing left to judge")
        # The item's own page lists the answers, but not who wrote them (the identity-hiding
        # rule of human evaluation).
        rater.goto(f"/projects/{project.pk}/items/{which_items[0]}/")
        expect(rater.locator("body")).to_contain_text("Church 0: the nave is long.")
        expect(rater.locator("body")).not_to_contain_text(re.compile("Orchid|Basalt", re.I))
    assert len({tuple(o) for o in orders.values()}) > 1  # not everyone in the same order
    assert Judgment.objects.filter(task=task).count() == 12
    basalt_0 = next(pk for pk, key in which.items() if key == ("Basalt-XL", 0))
    rated = Judgment.objects.get(task=task, user=raters["r2"], unit=f"response:{basalt_0}:atp")
    assert rated.value == {"inappr": 0, "mi": 2, "fs": 2}

    # The results: Orchid # Inappr. 1, MI 0, FS (14 + 10) / 6 = 4; Basalt 0, (4 + 2) / 6 = 1,
    # (8 + 4) / 6 = 2.
    page = login_page(reviewer)
    page.goto(f"/human-eval/{task.pk}/")
    orchid = page.locator('#he-table tr[data-model="Orchid-9000"]')
    basalt = page.locator('#he-table tr[data-model="Basalt-XL"]')
    expect(orchid.locator('[data-field="inappr"]')).to_contain_text("1.00")
    expect(orchid.locator('[data-field="mi"]')).to_contain_text("0.00")
    expect(orchid.locator('[data-field="fs"]')).to_contain_text("4.00")
    expect(orchid.locator('[data-field="n"]')).to_have_text("2 / 6")
    expect(basalt.locator('[data-field="inappr"]')).to_contain_text("0.00")
    expect(basalt.locator('[data-field="mi"]')).to_contain_text("1.00")
    expect(basalt.locator('[data-field="fs"]')).to_contain_text("2.00")
    expect(page.locator("#he-progress")).to_contain_text("4 of 4 answers fully rated")

    # Against the judge run: over two models rho is undefined; over the four answers 0.8.
    page.get_by_label("Judge run").select_option(str(run.pk))
    page.get_by_role("button", name="Compare").click()
    fs = page.locator('#judge-compare [data-compare="fs"]')
    expect(fs.locator('[data-over="answers"] [data-field="rho"]')).to_have_text("0.8000")
    expect(fs.locator('[data-over="models"]')).to_contain_text("at least 3")
    expect(page.locator("#compare-scope")).to_contain_text("judged 4 of the 4 answers")
