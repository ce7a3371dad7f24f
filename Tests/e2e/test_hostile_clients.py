"""Hostile and slow clients (issue 15), the short version of benchmarks/hostile_clients.py: each
attack against a fresh daemon for a few seconds while an honest client snaps and watches the
preview. What is asserted is behaviour, with generous bounds (the CI machine is noisy): the
honest client's snaps all succeed and its preview keeps coming, memory stays under a stated
bound, and the limits answer 503 (or 408, 401, 403) and close.

The attacks' code is the benchmark's own (imported from benchmarks/), so the script a user runs
and what CI asserts cannot drift apart."""

import importlib.util
import os
import resource

import pytest

from conftest import BINARY

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "hostile_clients.py")
_spec = importlib.util.spec_from_file_location("hostile_clients", _SCRIPT)
hostile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hostile)

SHORT = hostile.SHORT
MIB = 1024  # RSS figures are in KiB


@pytest.fixture(scope="module", autouse=True)
def enough_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))


def run(attack):
    figures = hostile.run_attack(BINARY, attack, SHORT)
    context = hostile.row(figures) + "\n" + "\n".join(figures["log"][-30:])
    assert figures["alive"], context
    return figures, context


def assert_honest_client_served(figures, context):
    """Every honest snap during the attack stored a picture, and the preview kept coming."""
    _, _, failed, failures = figures["snap_during"]
    assert failed == 0, (failures, context)
    assert figures["snap_during"][0] is not None, context
    # Frames, not a frame rate: the test pattern sends 30 a second, and a busy machine fewer.
    assert figures["fps_during"] * SHORT["window"] >= 10, context
    # And after the attack too.
    assert figures["snap_after"][2] == 0, context


def assert_memory_bounded(figures, context, growth_mib):
    assert figures["rss_peak"] - figures["rss_before"] < growth_mib * MIB, context


def test_slowloris_gets_408_or_503_and_is_closed():
    figures, context = run("slowloris")
    outcomes = figures["outcomes"]
    # Within the per-address limit: a 408 once the request timeout passes, then the close.
    assert outcomes.get("408 then closed", 0) >= SHORT["max_per_peer"] - 2, context
    # Past it: a 503 at once, then the close.
    assert outcomes.get("503 then closed", 0) >= SHORT["slowloris"] - SHORT["max_per_peer"] - 2, context
    assert outcomes.get("open", 0) == 0, context
    assert_honest_client_served(figures, context)
    assert_memory_bounded(figures, context, 20)


def test_silent_connections_past_the_per_address_limit_get_503_and_are_closed():
    figures, context = run("silent")
    outcomes = figures["outcomes"]
    assert outcomes.get("503 then closed", 0) >= SHORT["silent"] - SHORT["max_per_peer"] - 2, context
    # Those held are closed without a word after the header timeout (and opened again).
    assert outcomes.get("closed", 0) >= SHORT["max_per_peer"] - 2, context
    assert_honest_client_served(figures, context)
    assert_memory_bounded(figures, context, 20)


def test_silent_connections_from_many_addresses_past_max_connections_make_room_for_honest_clients():
    figures, context = run("silent-many")
    outcomes = figures["outcomes"]
    # Past max_connections the server, full, closes a waiting connection of the address holding
    # the most for a client holding fewer (the attackers' own reopened connections included,
    # until their addresses hold as many as each other), and refuses the rest with a 503.
    assert outcomes.get("503 then closed", 0) > 0, context
    assert outcomes.get("closed", 0) > 0, context
    # The honest client, from an address holding one or two connections, is always let in.
    assert_honest_client_served(figures, context)
    assert_memory_bounded(figures, context, 20)
    assert figures["fds_after"] < figures["fds_before"] + 10, context


def test_preview_readers_that_never_read_are_dropped_and_slow_ones_cost_no_more_than_a_frame():
    figures, context = run("slow-readers")
    outcomes = figures["outcomes"]
    # Never reading: dropped after the stall timeout (the head was written before the stall).
    assert outcomes.get("never reading 200 then closed", 0) + outcomes.get("never reading 200 then reset", 0) \
        == SHORT["slow_readers"], context
    assert_honest_client_served(figures, context)
    assert_memory_bounded(figures, context, 20)


def test_idle_event_streams_cost_little():
    figures, context = run("event-streams")
    assert figures["outcomes"].get("200 then open", 0) == SHORT["event_streams"], context
    assert_honest_client_served(figures, context)
    assert_memory_bounded(figures, context, 20)


def test_clients_pipelining_without_reading_keep_memory_bounded():
    figures, context = run("pipeliners")
    assert figures["outcomes"]["requests sent"] > 0, context
    assert_honest_client_served(figures, context)
    assert_memory_bounded(figures, context, 25)


def test_clients_pipelining_snaps_without_reading_meet_max_pending_snaps():
    figures, context = run("snap-pipeliners")
    outcomes = figures["outcomes"]
    # Past max_pending_snaps: 503s (counted as busy), not pictures held in memory without bound.
    assert outcomes.get("snaps busy", 0) > 0, context
    assert outcomes.get("snaps stored", 0) > 0, context
    assert_honest_client_served(figures, context)
    # 64 pictures of 1280x720 held at most: before the limit, 20 such clients took 45 MiB.
    assert_memory_bounded(figures, context, 30)


def test_a_thumbnail_sweep_over_every_width_caches_at_most_seven():
    figures, context = run("thumbnails")
    outcomes = figures["outcomes"]
    widths = len(range(16, 4097, SHORT["thumbnail_step"]))
    assert outcomes.get(200, 0) == widths, context
    assert outcomes["thumbnail files"] <= 7, context
    assert_honest_client_served(figures, context)


def test_anonymous_and_view_clients_cannot_take_job_slots():
    figures, context = run("job-slots")
    outcomes = figures["outcomes"]
    assert outcomes.get("anonymous 401", 0) == SHORT["job_attempts"], context
    assert outcomes.get("view 403", 0) == SHORT["job_attempts"], context
    assert outcomes.get("honest snap-scope job 201") == 1, context
    assert_honest_client_served(figures, context)
