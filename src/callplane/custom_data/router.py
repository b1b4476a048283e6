"""/v1/data: custom data tables and their records (SPEC; docs/api-contract.md).

Every error, request validation included, is ``{"status": "error", "success": false, "error":
str, "errors": [str]}`` (the STATUS family). The ``/data/tables`` routes are declared before the
``/data/{table_name}`` ones so they win; ``tables`` is a reserved table name.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Query
from starlette.requests import Request
from starlette.responses import Response

from callplane.custom_data import query, records, schema, service
from callplane.custom_data.catalog import Catalog
from callplane.custom_data.schema import TableSchema
from callplane.custom_data.schemas import (
    LIST_PARAMETERS,
    Deleted,
    DeletedAll,
    QueryIn,
    RecordOne,
    RecordPage,
    Records,
    RecordsIn,
    Success,
    TableCreated,
    TableIn,
    TableList,
    TableOne,
)
from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import STATUS, StatusError
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.scopes import DATA, needs_scope

router = family_router(STATUS, scopes=DATA, prefix="/data", tags=["custom data"])


def _catalog(request: Request) -> Catalog:
    catalog: Catalog = request.app.state.runtime.catalog
    return catalog


_409: dict[int | str, dict[str, Any]] = {409: {"description": "Conflict", "model": StatusError}}
RecordBody = Annotated[dict[str, Any], Body(description="values of declared columns")]


@router.post(
    "/tables",
    status_code=201,
    response_model=TableCreated,
    responses=_409,
    summary="Create a table",
)
async def create_table(
    body: TableIn, request: Request, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Create a custom data table with typed columns (TEXT, INTEGER, FLOAT, BOOLEAN, TIMESTAMP,
    JSON), column options (required, unique, indexed, references) and composite indexes."""
    table = await service.create_table(session, _catalog(request), tenant.organization_id, body)
    return json_response({"success": True, "table": table.wire()}, 201)


@router.get("/tables", response_model=TableList, summary="List tables")
async def list_tables(request: Request, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Every custom data table of the organization, with its columns."""
    tables = await _catalog(request).list_tables(session, tenant.organization_id)
    return json_response({"tables": [t.wire() for t in tables]})


@router.get("/tables/{id}", response_model=TableOne, summary="Read a table")
async def get_table(
    id: int,  # noqa: A002
    request: Request,
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """One custom data table, with its columns."""
    table = await _catalog(request).find_table_by_id(session, tenant.organization_id, id)
    return json_response({"table": table.wire()})


@router.delete("/tables/{id}", response_model=Success, responses=_409, summary="Delete a table")
async def delete_table(
    id: int,  # noqa: A002
    request: Request,
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """Delete a table's schema. It must hold no records and no other table may reference it
    (409 otherwise)."""
    await service.delete_table(session, _catalog(request), tenant.organization_id, id)
    return json_response({"success": True})


@router.post(
    "/{table_name}",
    status_code=201,
    response_model=Records,
    responses=_409,
    summary="Create records (1-1000, all or nothing)",
)
async def create_records(
    table_name: str, body: RecordsIn, request: Request, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Insert 1 to 1000 records at once: all of them or, on any invalid value or conflict, none."""
    table = await _catalog(request).find_table(session, tenant.organization_id, table_name)
    with schema.dropped_table_is_not_found():
        created = await records.create_records(session, table, body.records)
    return json_response({"records": created}, 201)


@router.post(
    "/{table_name}/query",
    response_model=RecordPage,
    summary="Query records",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": QueryIn.model_json_schema()}},
        }
    },
)
@needs_scope("data:read")  # a search, sent as POST for its body
async def query_records(
    table_name: str,
    body: Annotated[dict[str, Any], Body()],
    request: Request,
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """Records matching operator filters (eq ne lt lte gt gte in contains is_null), sorted and
    paginated like the list."""
    table = await _catalog(request).find_table(session, tenant.organization_id, table_name)
    with schema.dropped_table_is_not_found():
        return json_response(await query.query_records(session, table, body))


@router.get(
    "/{table_name}",
    response_model=RecordPage,
    summary="List records",
    openapi_extra={"parameters": LIST_PARAMETERS},
)
async def list_records(
    table_name: str, request: Request, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """A page of records. Sort with sort_by and sort_direction; any other query parameter that names
    a column is an exact-match filter (repeat it to match any of several values)."""
    table = await _catalog(request).find_table(session, tenant.organization_id, table_name)
    params = request.query_params.multi_items()
    with schema.dropped_table_is_not_found():
        return json_response(await query.list_records(session, table, params))


@router.delete(
    "/{table_name}",
    response_model=DeletedAll,
    responses=_409,
    summary="Delete every record of a table",
)
async def delete_all_records(
    table_name: str, request: Request, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Delete every record of a table; the table itself stays."""
    table = await _catalog(request).find_table(session, tenant.organization_id, table_name)
    with schema.dropped_table_is_not_found():
        count = await records.delete_all_records(session, table)
    return json_response(
        {"success": True, "message": f"Deleted {count} records", "deleted_count": count}
    )


@router.get("/{table_name}/{id}", response_model=RecordOne, summary="Read a record")
async def get_record(
    table_name: str,
    id: int,  # noqa: A002
    request: Request,
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """One record of a table."""

    async def read(table: TableSchema) -> dict[str, Any]:
        return await records.get_record(session, table, id)

    found = await _catalog(request).with_table(session, tenant.organization_id, table_name, read)
    return json_response({"record": found})


@router.put(
    "/{table_name}/{id}", response_model=RecordOne, responses=_409, summary="Replace a record"
)
async def replace_record(
    table_name: str,
    id: int,  # noqa: A002
    body: RecordBody,
    request: Request,
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """Replace every declared column of a record (omitted columns become null)."""

    async def replace(table: TableSchema) -> dict[str, Any]:
        return await records.replace_record(session, table, id, body)

    replaced = await _catalog(request).with_table(
        session, tenant.organization_id, table_name, replace
    )
    return json_response({"record": replaced})


@router.patch(
    "/{table_name}/{id}",
    response_model=RecordOne,
    responses=_409,
    summary="Partially update a record",
)
async def patch_record(
    table_name: str,
    id: int,  # noqa: A002
    body: RecordBody,
    request: Request,
    session: SessionDep,
    tenant: CurrentTenant,
    source_column: Annotated[
        str | None,
        Query(alias="sourceUpdatedAtColumn", max_length=63, pattern=r"^[a-z][a-z0-9_]*$"),
    ] = None,
) -> Response:
    """Update the given columns of a record; others stay. With sourceUpdatedAtColumn the update
    applies only when the body's timestamp in that column is newer than the stored one (409
    otherwise), atomically."""

    async def patch(table: TableSchema) -> dict[str, Any]:
        return await records.patch_record(session, table, id, body, source_column)

    patched = await _catalog(request).with_table(session, tenant.organization_id, table_name, patch)
    return json_response({"record": patched})


@router.delete(
    "/{table_name}/{id}", response_model=Deleted, responses=_409, summary="Delete a record"
)
async def delete_record(
    table_name: str,
    id: int,  # noqa: A002
    request: Request,
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """Delete one record of a table."""

    async def remove(table: TableSchema) -> None:
        await records.delete_record(session, table, id)

    await _catalog(request).with_table(session, tenant.organization_id, table_name, remove)
    return json_response({"success": True, "message": f"Deleted record {id}"})
