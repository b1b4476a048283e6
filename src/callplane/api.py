"""The /v1 API: every domain's router, in an order where fixed paths precede parameters, and
every domain's fast paths (``http.fast``). It stands at the top, beside app assembly, because it
imports every domain, and the ``http`` floor they all stand on imports none."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from callplane.agent_tests.router import router as agent_tests
from callplane.agents.router import router as agents
from callplane.audit_log.router import router as audit_log
from callplane.call_tags.router import router as call_tags
from callplane.calls.find_router import router as find_calls
from callplane.calls.router import router as calls
from callplane.campaigns.router import router as campaigns
from callplane.contacts.router import router as contacts
from callplane.custom_data.fast import FAST_PATHS as CUSTOM_DATA_FAST
from callplane.custom_data.router import router as custom_data
from callplane.external_calls.fast import FAST_PATHS as EXTERNAL_CALLS_FAST
from callplane.external_calls.router import router as external_calls
from callplane.feedback.router import router as feedback
from callplane.http.fast import FastPath
from callplane.http.shared_routes import include_shared
from callplane.knowledge.router import router as knowledge
from callplane.orgs.router import router as api_keys
from callplane.phone_numbers.router import router as phone_numbers
from callplane.recordings.router import router as recordings
from callplane.suppressions.router import router as suppressions
from callplane.voices.router import router as voices
from callplane.web_calls.router import router as web_calls
from callplane.webhooks.router import router as webhooks

V1_ROUTERS: tuple[APIRouter, ...] = (
    # find_by_attribute first: /calls/{uuid} would otherwise capture it.
    find_calls,
    calls,
    feedback,
    contacts,
    custom_data,
    phone_numbers,
    external_calls,
    recordings,
    voices,
    call_tags,
    webhooks,
    web_calls,
    agents,
    agent_tests,
    knowledge,
    api_keys,
    campaigns,
    suppressions,
    audit_log,
)

#: The one table the fast-path layer serves (``tests/test_fast_paths.py`` covers every entry).
V1_FAST_PATHS: tuple[FastPath, ...] = (*CUSTOM_DATA_FAST, *EXTERNAL_CALLS_FAST)


def include_v1(app: FastAPI) -> None:
    """Mount every domain router under /v1, directly on the app (one level of routers to match
    through, which keeps FastAPI's route matching cheap)."""
    include_shared(app, V1_ROUTERS, prefix="/v1")
