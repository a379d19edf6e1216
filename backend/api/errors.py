"""The API's one error format, `{"error": code, "detail": message}`, for every refusal."""

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException

from backend.errors import AppError

logger = logging.getLogger(__name__)


class ErrorBody(BaseModel):
    error: str
    detail: str


def error_responses(*status_codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for routes that can answer these codes in the error format."""
    return {code: {"model": ErrorBody} for code in status_codes}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def app_error(_request: Request, error: AppError) -> JSONResponse:
        return JSONResponse(
            {"error": error.code, "detail": error.message},
            status_code=error.status_code,
            headers=error.headers,
        )

    @app.exception_handler(ConnectionError)
    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def database_unavailable(_request: Request, error: Exception) -> JSONResponse:
        # Postgres restarting or out of reach: nothing was committed, so a retry is safe.
        logger.warning("database unavailable: %s", error)
        return JSONResponse(
            {"error": "service_unavailable", "detail": "the database is unavailable; try again shortly"},
            status_code=503,
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, error: HTTPException) -> JSONResponse:
        """Starlette's own refusals (no such path 404, method 405) in the API's error format."""
        code = HTTPStatus(error.status_code).phrase.lower().replace(" ", "_").replace("-", "_")
        return JSONResponse(
            {"error": code, "detail": str(error.detail)}, status_code=error.status_code, headers=error.headers
        )

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in error.errors()
        )
        return JSONResponse({"error": "invalid_input", "detail": problems}, status_code=422)
