"""Judge runs: model judges run as jobs over a project's stored model answers or plans, every
call kept (``JudgeRun``, ``JudgeCall``, ``PlanJudgeCall``). Each judge is one spec
(``review.judges.specs``); one runner (``services``) and one call lifecycle (``calls``) serve
them all; the pure prompts, parsers and formulas are ``benchmark.judge_prompts``."""
