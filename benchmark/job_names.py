"""The names of benchmark's job kinds that ``BenchmarkConfig.ready()`` registers, and of the
folders their uploads go to: plain strings, so that registering them does not import the
services that run them (and everything those import) in every process, a data command's
included (as ``review.job_names`` for review's kinds)."""

IMPORT_KIND = "import"
IMPORT_AREA = "imports"
