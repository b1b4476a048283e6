"""Phone numbers (SPEC: PATCH /numbers/{uuid})."""
