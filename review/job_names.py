"""The names of review's job kinds and of the folders their uploads go to: a module of plain
strings, so that ``ReviewConfig.ready()`` registers the kinds without importing the services
that run them (and everything those import) in every process, a data command's included."""

AGREEMENT_KIND = "agreement"
ANSWERS_SCORE_KIND = "score_answers"
ANSWERS_UPLOAD_AREA = "answers-upload"
EVALUATE_KIND = "evaluate"
EVALUATION_JUDGE_KIND = "evaluation_judge"
JUDGE_KIND = "judge"
ORACLE_KIND = "oracle"
RELEASE_KIND = "release"
RENDER_KIND = "render_answers"
RUNS_SCORE_KIND = "score_runs"
RUNS_RESCORE_KIND = "rescore_runs"
RUNS_UPLOAD_AREA = "runs-upload"

#: An evaluation chunk whose worker died is queued again up to this many times (its finished
#: items are kept and skipped), then fails; a chunk silent this many seconds counts as lost
#: (the runner reports at least every ``review.evaluation.services.HEARTBEAT_SECONDS``).
EVALUATE_RETAKES = 3
EVALUATE_SILENT_LIMIT = 10 * 60
CHECK_EXAMPLES_HELD_BACK_KIND = "check_examples_held_back"
