"""Voices (SPEC: GET /voices, GET /voices/{uuid})."""
