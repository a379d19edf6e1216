"""The OpenAPI schema documents the rating, export, erasure and audit endpoints with their bodies."""


async def test_the_schema_documents_ratings_exports_erasure_and_the_audit_log(client):
    schema = (await client.get("/openapi.json")).json()
    paths, models = schema["paths"], schema["components"]["schemas"]

    def answer(path: str, method: str, status: str = "200") -> dict:
        return paths[path][method]["responses"][status]["content"]

    rating = "/api/v1/widget/conversations/{conversation_id}/rating"
    assert answer(rating, "get")["application/json"]["schema"] == {"$ref": "#/components/schemas/RatingState"}
    assert answer(rating, "post", "201")["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RatingOut"
    }
    assert {"409", "422", "403"} <= set(paths[rating]["post"]["responses"])
    assert (
        models["RatingIn"]["properties"]["score"] | {"minimum": 1, "maximum": 5}
        == models["RatingIn"]["properties"]["score"]
    )

    export = answer("/api/v1/reports/transcripts", "get")
    assert export["application/json"]["schema"]["items"] == {"$ref": "#/components/schemas/TranscriptRow"}
    assert "text/csv" in export
    assert answer("/api/v1/admin/erasures", "post")["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErasureOut"
    }
    assert answer("/api/v1/admin/audit", "get")["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AuditPage"
    }
    assert "conversation.rated" in str(paths["/api/v1/events"]["get"])
