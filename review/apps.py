from django.apps import AppConfig


class ReviewConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "review"

    def ready(self) -> None:
        from annotation.judgment_tasks.units import UnitSource, unit_source_register
        from benchmark.jobs.kinds import JobKind, job_kind_register
        from review.job_names import (
            AGREEMENT_KIND,
            EVALUATE_KIND,
            EVALUATE_RETAKES,
            EVALUATE_SILENT_LIMIT,
            EVALUATION_JUDGE_KIND,
            JUDGE_KIND,
            ORACLE_KIND,
            RELEASE_KIND,
            RENDER_KIND,
        )
        from review.job_names import ANSWERS_SCORE_KIND as ANSWERS_KIND
        from review.job_names import ANSWERS_UPLOAD_AREA as ANSWERS_AREA
        from review.job_names import CHECK_EXAMPLES_HELD_BACK_KIND as CHECK_EXAMPLES_KIND
        from review.job_names import RUNS_RESCORE_KIND as RESCORE_KIND
        from review.job_names import RUNS_SCORE_KIND as RUNS_KIND
        from review.job_names import RUNS_UPLOAD_AREA as RUNS_AREA

        job_kind_register(
            JobKind(
                name=ANSWERS_KIND,
                runner="review.answers.services.answers_score_job",
                action="score",
                upload_area=ANSWERS_AREA,
                result_template="review/jobs/score_answers_result.html",
                result_context="review.answers.views.job_result_context",
                title="Scoring",
                unit="answers scored",
            )
        )
        job_kind_register(
            JobKind(
                name=RUNS_KIND,
                runner="review.runs.services.run_set_score_job",
                action="score",
                upload_area=RUNS_AREA,
                result_template="review/jobs/score_runs_result.html",
                title="Scoring",
                unit="runs scored",
            )
        )
        job_kind_register(
            JobKind(
                name=RESCORE_KIND,
                runner="review.runs.services.run_set_rescore",
                action="score",
                result_template="review/jobs/score_runs_result.html",
                title="Rescoring",
                unit="runs rescored",
            )
        )
        job_kind_register(
            JobKind(
                name=AGREEMENT_KIND,
                runner="review.agreement.services.agreement_job",
                action="manage_studies",
                result_template="review/jobs/agreement_result.html",
                title="Agreement",
            )
        )
        job_kind_register(
            JobKind(
                name=RELEASE_KIND,
                runner="review.releases.services.release_create_job",
                action="release",
                result_template="review/jobs/release_result.html",
                title="Release",
                unit="items",
            )
        )
        job_kind_register(
            JobKind(
                name=JUDGE_KIND,
                runner="review.judges.services.judge_run_job",
                action="run_judges",
                title="Judge run",
                unit="calls",
                result_template="review/jobs/judge_result.html",
                result_context="review.judges.views.job_result_context",
                done_event="judge-run-done",
            )
        )
        job_kind_register(
            JobKind(
                name=CHECK_EXAMPLES_KIND,
                runner="review.runs.examples.services.held_back_checks_job",
                action="run_judges",
                title="Held-back comparison",
                unit="runs",
                result_template="review/jobs/check_examples_result.html",
            )
        )
        job_kind_register(
            JobKind(
                name=EVALUATE_KIND,
                runner="review.evaluation.services.evaluation_run_job",
                action="evaluate",
                # A chunk of an agent benchmark's items takes hours. Its runner reports at
                # least every 30 s, so a chunk silent for 10 minutes lost its worker: the sweep
                # queues it again (finished items are skipped), 3 times, then fails it, and
                # Resume takes it again.
                time_limit=6 * 60 * 60,
                retakes=EVALUATE_RETAKES,
                silent_limit=EVALUATE_SILENT_LIMIT,
                title="Evaluation",
                unit="items",
                result_template="review/evaluation/_job_result.html",
                result_context="review.evaluation.views.job_result_context",
                done_event="evaluation-done",
            )
        )
        job_kind_register(
            JobKind(
                name=EVALUATION_JUDGE_KIND,
                runner="review.evaluation.judges.evaluation_judge_job",
                action="evaluate",
                title="Judges on an evaluation",
                unit="runs",
                result_template="review/evaluation/_judge_job_result.html",
                result_context="review.evaluation.views.judge_job_result_context",
                done_event="evaluation-judged",
            )
        )
        job_kind_register(
            JobKind(
                name=ORACLE_KIND,
                runner="review.oracle.services.oracle_run_job",
                action="run_judges",
                result_template="review/jobs/oracle_result.html",
                title="Oracle test",
                unit="items",
            )
        )
        job_kind_register(
            JobKind(
                name=RENDER_KIND,
                runner="review.answer_rendering.services.render_job",
                action="score",
                result_template="review/jobs/render_result.html",
                title="Rendering",
                unit="answers",
                done_event="rendering-done",
            )
        )

        # A release carries the tool records of its items (review.releases writes them
        # through this hook: evaluation imports releases, not the other way), and importing
        # the release folder (benchmark.datasets) adds them to the project.
        from benchmark.datasets.interop import interop_hook_register

        interop_hook_register(
            "release.tool_records_import", "review.evaluation.records.release_records_import"
        )
        interop_hook_register(
            "release.tool_records_write", "review.evaluation.records.release_records_write"
        )
        interop_hook_register(
            "release.model_calls_import", "review.evaluation.records.release_calls_import"
        )
        interop_hook_register(
            "release.model_calls_write", "review.evaluation.records.release_calls_write"
        )
        # A failed oracle test shows on the item's page.
        from benchmark.notices import register_item_notice_source

        register_item_notice_source("review.oracle.selectors.item_oracle_notices")
        # A gold item's page tells reviewers it is gold, and who is below the gold threshold.
        register_item_notice_source("review.gold.selectors.item_gold_notices")
        # The units of the judgment tasks that rate a judge's reports or score criteria of
        # answers come from judge runs, which annotation may not import (see
        # annotation.judgment_tasks.units).
        unit_source_register(
            UnitSource(
                kind="judge-report",
                list_units="review.rate_judge.units.judge_report_units",
                describe="review.rate_judge.units.judge_report_describe",
                template="review/_unit_report.html",
            )
        )
        unit_source_register(
            UnitSource(
                kind="answer-criterion",
                list_units="review.rate_judge.units.answer_criterion_units",
                describe="review.rate_judge.units.answer_criterion_describe",
                template="review/_unit_report.html",
            )
        )
        # Routing by doubt (annotation.judgment_tasks.doubt): a model judge disagreeing with the people and
        # models under test getting an item wrong raise its doubt.
        from annotation.judgment_tasks.doubt.services import doubt_source_register

        doubt_source_register("review.agreement.judge_sources.doubt_judge_values")
        doubt_source_register("review.evaluation.selectors.doubt_models_wrong")
        # Unsaved input kept as drafts (benchmark.input_drafts): adjudication and ratings.
        from benchmark.input_drafts.scopes import input_draft_scope_register

        input_draft_scope_register("adjudication", "review.adjudication.input_drafts.check")
        input_draft_scope_register("human-eval", "review.human_eval.input_drafts.check")
        # Human evaluation is blind: its raters never see which model wrote an answer
        # (every selector that returns responses applies the rule).
        from benchmark import visibility

        visibility.register_identity_hiding_rule("review.human_eval.selectors.identity_hidden")
        # Response-level human evaluation: whole answers, or pairs of them, rated on a page
        # of their own (review.human_eval).
        for kind, units in (
            ("answer-eval", "answer_eval_units"),
            ("answer-pair", "answer_pair_units"),
        ):
            unit_source_register(
                UnitSource(
                    kind=kind,
                    list_units=f"review.human_eval.units.{units}",
                    describe="review.human_eval.units.answer_describe",
                    template="review/_unit_report.html",
                    page="review.human_eval.views.rate_unit",
                )
            )
