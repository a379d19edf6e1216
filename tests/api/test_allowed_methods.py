"""Every path says which methods it accepts: OPTIONS answers 204 with them in `Allow`, and a method
it does not accept gets a 405 in the API's error format with the same `Allow`. The widget's
cross-origin preflight is still answered by its CORS, before any of this."""

import re

from tests.support import running_app

METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}
SHOP = "https://shop.example.com"
PREFLIGHT = {"access-control-request-method": "POST", "access-control-request-headers": "content-type"}


def declared_paths(schema: dict) -> dict[str, set[str]]:
    """Each path of the spec, its parameters filled in, and the methods the spec declares on it."""
    return {
        re.sub(r"\{[^}]+\}", "1", path): {method.upper() for method in operations}
        for path, operations in schema["paths"].items()
    }


def allowed(response) -> set[str]:
    return {method.strip() for method in response.headers["allow"].split(",")}


async def test_options_and_405s_list_the_methods_each_path_declares(client):
    paths = declared_paths((await client.get("/openapi.json")).json())
    assert paths["/api/v1/agents"] == {"GET", "POST"}  # a path of two routes
    for path, methods in paths.items():
        options = await client.options(path)
        assert options.status_code == 204, (path, options.text)
        assert allowed(options) == methods | {"OPTIONS"}, path
        assert options.content == b""
        for method in sorted(METHODS - methods):
            refused = await client.request(method, path)
            assert refused.status_code == 405, (method, path, refused.text)
            assert allowed(refused) == methods | {"OPTIONS"}, (method, path)
            assert refused.json() == {
                "error": "method_not_allowed",
                "detail": f"{method} is not allowed on {path}; it accepts {refused.headers['allow']}",
            }


async def test_a_path_that_does_not_exist_is_still_a_404_and_static_files_are_read_only(client):
    for method in ("OPTIONS", "GET", "DELETE"):
        missing = await client.request(method, "/api/v1/no-such-endpoint")
        assert missing.status_code == 404 and missing.json()["error"] == "not_found", method
    static = await client.post("/static/admin.css")
    assert static.status_code == 405 and allowed(static) == {"GET", "HEAD", "OPTIONS"}


async def test_the_widgets_cross_origin_preflight_is_answered_by_its_cors(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"widget_origins": [SHOP]})
    async with running_app(settings, tiny_engine) as client:
        path = "/api/v1/widget/conversations/1/messages"
        preflight = await client.options(path, headers={"origin": SHOP, **PREFLIGHT})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == SHOP
        assert "POST" in preflight.headers["access-control-allow-methods"]
        refused = await client.options(path, headers={"origin": "https://evil.example.net", **PREFLIGHT})
        assert refused.status_code == 403 and refused.json()["error"] == "origin_not_allowed"
        # Without a preflight's headers, OPTIONS from the allowed page is a plain request.
        plain = await client.options(path, headers={"origin": SHOP})
        assert plain.status_code == 204 and allowed(plain) == {"GET", "POST", "OPTIONS"}
        assert plain.headers["access-control-allow-origin"] == SHOP
