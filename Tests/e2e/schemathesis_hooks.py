"""Schemathesis hooks for test_openapi_contract.py (loaded through SCHEMATHESIS_HOOKS).

Only what a generated case cannot be allowed to do to a two-minute run; the document itself
stays true (a delay of a year with wait=true is a valid request, it just takes a year)."""

import schemathesis
from schemathesis.specs.openapi.checks import use_after_free

# The longest a held snap (delay with wait=true) may make the run wait.
HELD_SNAP_MAX_DELAY = 1


def _truthy(value):
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1", "yes"))


def _capped(delay):
    if isinstance(delay, (int, float)) and not isinstance(delay, bool) and delay > HELD_SNAP_MAX_DELAY:
        return HELD_SNAP_MAX_DELAY
    if isinstance(delay, str):
        try:
            if float(delay) > HELD_SNAP_MAX_DELAY:
                return str(HELD_SNAP_MAX_DELAY)
        except ValueError:
            pass
    return delay


# The longest a long-poll (wait= on GET /library and GET /jobs/{id}) may hold a request.
LONG_POLL_MAX_WAIT = 1


@schemathesis.hook
def map_case(context, case):
    """A POST /snap that holds the request for its delayed picture waits at most a second, and so
    does a long-poll."""
    if case.method.upper() == "GET" and case.path in ("/library", "/jobs/{id}"):
        query = case.query if isinstance(case.query, dict) else {}
        wait = query.get("wait")
        if isinstance(wait, str) and wait.isdigit():
            wait = int(wait)
        if isinstance(wait, int) and not isinstance(wait, bool) and wait > LONG_POLL_MAX_WAIT:
            query["wait"] = LONG_POLL_MAX_WAIT
        return case
    if case.method.upper() != "POST" or case.path != "/snap":
        return case
    query = case.query if isinstance(case.query, dict) else {}
    body = case.body if isinstance(case.body, dict) else {}
    if _truthy(query.get("wait")) or _truthy(body.get("wait")):
        if "delay" in query:
            query["delay"] = _capped(query["delay"])
        if "delay" in body:
            body["delay"] = _capped(body["delay"])
    return case


@schemathesis.check
def use_after_free_except_jobs(ctx, response, case):
    """schemathesis's use_after_free everywhere but on a job: DELETE /jobs/{id} cancels the job,
    which stays readable in state "cancelled" (docs/API.md), while DELETE /library/{id} removes
    the picture, which must then be gone."""
    if case.operation.path == "/jobs/{id}":
        return None
    return use_after_free(ctx, response, case)
