"""The names of annotation's job kinds that ``AnnotationConfig.ready()`` registers: plain
strings, so that registering them does not import the services that run them (and
everything those import) in every process (as ``review.job_names`` for review's kinds)."""

MODEL_DRAFT_KIND = "model_draft"
