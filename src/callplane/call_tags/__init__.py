"""Call tags (SPEC: GET /call_tags; DESIGN §6: POST /call_tags)."""
