"""Judge settings of a project: its own text for each judge prompt template (every version
kept) and the LLM-I reward weights. Runs read them through ``selectors``."""
