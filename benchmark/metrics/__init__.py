"""Statistics computed over benchmark judgments (agreement, reliability)."""
