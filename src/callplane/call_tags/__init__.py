"""Call tags (SPEC: GET /call_tags; docs/api-contract.md#extension-routes: POST /call_tags)."""
