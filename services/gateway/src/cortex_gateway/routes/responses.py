"""OpenAPI descriptions of the problem responses routes share."""

PROBLEM_JSON = "application/problem+json"


def problem(description: str) -> dict[str, object]:
    return {"description": description, "content": {PROBLEM_JSON: {}}}


ERRORS: dict[int | str, dict[str, object]] = {
    400: problem("Bad request (missing X-Scope-Slug, invalid cursor)"),
    401: problem("Missing or invalid credentials"),
    404: problem("No such organization (or not a member)"),
    413: problem("Request body too large"),
    422: problem("Invalid parameters"),
    429: problem("Rate limit spent; see Retry-After"),
    502: problem("The search service failed to answer (its reply was an error or empty)"),
    503: problem("The database, the event bus or the search service is not reachable; see Retry-After"),
    504: problem("The search service did not answer in time"),
}
