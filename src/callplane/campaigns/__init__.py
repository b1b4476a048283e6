"""Campaigns: outbound calling programs with calling hours, retries, pacing and a do-not-call
list (``docs/campaigns.md``)."""
