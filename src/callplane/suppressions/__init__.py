"""The do-not-call list (rules in ``campaigns.donotcall``, ``docs/campaigns.md``)."""
