from django.apps import AppConfig


class ReviewConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "review"

    def ready(self) -> None:
        from benchmark.jobs.kinds import JobKind, job_kind_register
        from review.agreement.services import AGREEMENT_KIND
        from review.answers.services import SCORE_KIND as ANSWERS_KIND
        from review.answers.services import UPLOAD_AREA as ANSWERS_AREA
        from review.judges.services import JUDGE_KIND
        from review.runs.services import RESCORE_KIND
        from review.runs.services import SCORE_KIND as RUNS_KIND
        from review.runs.services import UPLOAD_AREA as RUNS_AREA

        job_kind_register(
            JobKind(
                name=ANSWERS_KIND,
                runner="review.answers.services.answers_score_job",
                action="review",
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
                action="review",
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
                action="review",
                result_template="review/jobs/score_runs_result.html",
                title="Rescoring",
                unit="runs rescored",
            )
        )
        job_kind_register(
            JobKind(
                name=AGREEMENT_KIND,
                runner="review.agreement.services.agreement_job",
                action="review",
                result_template="review/jobs/agreement_result.html",
                title="Agreement",
            )
        )
        job_kind_register(
            JobKind(
                name=JUDGE_KIND,
                runner="review.judges.services.judge_run_job",
                action="review",
                title="Judge run",
                unit="calls",
                result_template="review/jobs/judge_result.html",
                result_context="review.judges.views.job_result_context",
                done_event="judge-run-done",
            )
        )
