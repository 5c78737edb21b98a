"""Judge runs: model judges (``benchmark.judges``) run as jobs over a project's stored model
answers, every call kept (``JudgeRun``, ``JudgeCall``)."""
