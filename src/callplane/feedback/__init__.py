"""Feedback entries on call transcripts, and their notes."""
