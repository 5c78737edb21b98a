"""Models for this app arrive with its first workflow."""
