"""The audit log's route (``GET /v1/audit_log``); the log itself is written by ``callplane.audit``."""
