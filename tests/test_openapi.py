"""The served OpenAPI document, checked by rule over every route that exists (a new route that
lacks a description, a tag, an error schema or a documented parameter fails here), and the docs
pages, which must work without internet access."""

from __future__ import annotations

import re
from typing import Any

import pytest

from callplane.http.openapi import TAGS

Operation = tuple[str, str, dict[str, Any]]


@pytest.fixture
async def document(client) -> dict[str, Any]:
    response = await client.get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def operations(document: dict[str, Any]) -> list[Operation]:
    return [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


async def test_document_metadata(document) -> None:
    info = document["info"]
    assert info["title"] and info["description"] and info["version"]
    assert info["contact"]["name"] and info["license"]["identifier"] == "Apache-2.0"
    assert document["servers"] and document["servers"][0]["url"].startswith("http")
    assert document["components"]["securitySchemes"]["APIKey"]["scheme"] == "bearer"


async def test_only_the_public_api_is_described(document) -> None:
    assert all(path.startswith("/v1/") for path in document["paths"]), list(document["paths"])
    assert not [p for p in document["paths"] if "dashboard" in p or p.startswith("/v1/docs")]


async def test_every_operation_is_described_and_tagged(document) -> None:
    defined = {t["name"]: t.get("description") for t in document["tags"]}
    ids = [op["operationId"] for _, _, op in operations(document)]
    assert len(ids) == len(set(ids))
    for method, path, op in operations(document):
        where = f"{method.upper()} {path}"
        assert re.fullmatch(r"[a-z][a-z0-9_]*", op["operationId"]), where
        assert op.get("summary"), where
        assert len(op.get("description", "")) >= 20, f"{where}: no description (docstring)"
        assert "DESIGN" not in op["description"] and "§" not in op["description"], where
        assert op.get("tags"), where
        for tag in op["tags"]:
            assert defined.get(tag), f"{where}: tag {tag!r} is not defined with a description"
            assert tag in TAGS


async def test_every_parameter_is_documented(document) -> None:
    for method, path, op in operations(document):
        for parameter in op.get("parameters", []):
            where = f"{method.upper()} {path} {parameter['in']} {parameter['name']}"
            assert parameter.get("schema"), where
            if parameter["in"] == "query":
                assert parameter.get("description"), f"{where}: no description"


async def test_the_list_of_records_documents_paging_sorting_and_column_filters(document) -> None:
    parameters = {
        p["name"]: p for p in document["paths"]["/v1/data/{table_name}"]["get"]["parameters"]
    }
    assert {"page", "per_page", "sort_by", "sort_direction", "filters"} <= set(parameters)
    filters = parameters["filters"]
    assert filters["style"] == "form" and filters["explode"] is True
    assert filters["schema"]["type"] == "object" and "column" in filters["description"]


async def test_every_error_response_has_its_family_schema(document) -> None:
    schemas = document["components"]["schemas"]
    for method, path, op in operations(document):
        for code, response in op["responses"].items():
            if not code.startswith(("4", "5")):
                continue
            where = f"{method.upper()} {path} {code}"
            schema = response["content"]["application/json"]["schema"]
            name = schema["$ref"].rsplit("/", 1)[-1]
            assert name in schemas, where
            assert name in {
                "StatusError",
                "FindError",
                "PlainError",
                "DetailError",
                "ValidationDetail",
            }, where
        if op.get("security"):
            assert {"401", "422", "429"} <= set(op["responses"]), f"{method} {path}"
            assert "Retry-After" in op["responses"]["429"]["headers"]


async def test_conflicts_are_documented_with_a_body(document) -> None:
    for path in ("/v1/calls", "/v1/calls/{uuid}/cancel"):
        conflict = document["paths"][path]["post"]["responses"]["409"]
        assert conflict["content"]["application/json"]["schema"]["$ref"].endswith("StatusError")


async def test_schema_names_are_unique_and_every_ref_resolves(document) -> None:
    schemas = document["components"]["schemas"]
    for name, schema in schemas.items():
        assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", name), name
        assert schema.get("title", name) == name
    for ref in _refs(document):
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.rsplit("/", 1)[-1] in schemas, f"dangling {ref}"


@pytest.mark.parametrize("page", ["/v1/docs", "/v1/redoc"])
async def test_docs_pages_load_their_assets_from_this_server(client, page: str) -> None:
    response = await client.get(page)
    assert response.status_code == 200 and "text/html" in response.headers["content-type"]
    assets = re.findall(r"""(?:src|href)=["']([^"']+)""", response.text) + re.findall(
        r"""url: ["']([^"']+)""", response.text
    )
    assert assets
    external = [a for a in assets if a.startswith(("http:", "https:", "//"))]
    assert not external, external
    for asset in assets:
        if asset.startswith("/v1/docs/assets/"):
            served = await client.get(asset)
            assert served.status_code == 200 and len(served.content) > 500, asset
    assert "/v1/openapi.json" in response.text


async def test_the_conversation_route_documents_its_503_without_a_brain(document) -> None:
    answers = document["paths"]["/v1/agents/{uuid}/conversations"]["post"]["responses"]
    unavailable = answers["503"]
    assert "language model" in unavailable["description"]
    assert unavailable["content"]["application/json"]["schema"]["$ref"].endswith("StatusError")
