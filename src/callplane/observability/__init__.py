"""Seeing inside a running platform (issue 29, docs/metrics.md).

metrics.py      every Prometheus metric, and the one-line hooks the engine, webhooks, SIP
                and speech call
exposition.py   GET /metrics (bearer token) and CALLPLANE_METRICS_LISTEN; multiprocess mode
middleware.py   HTTP requests by route template and status; the request id in log lines
turns.py        one turn's latency breakdown, on the recording's clock, as a call event
tracing.py      optional OpenTelemetry spans (the ``tracing`` extra, OTEL_* variables)
"""
