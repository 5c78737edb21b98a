"""Proposals to discard an item: annotators propose, a reviewer decides (review.adjudication)."""
