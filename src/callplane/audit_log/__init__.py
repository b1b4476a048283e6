"""The audit log's route (``GET /v1/audit_log``); ``callplane.audit`` writes the log."""
