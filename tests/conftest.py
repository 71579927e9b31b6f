"""Shared helpers for the tests: fixtures on disk, the generated package, the bundled schemas."""

from __future__ import annotations

import importlib
import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
GENERATED = ROOT / "generated"
VERSIONS = tuple(importlib.import_module("acp_types").VERSIONS)

# `make test-quick` (and the runs on the other ends of the supported interpreter
# range in `make test`) leave out the tests marked slow: whole modules that run
# the generator end to end, build environments, spawn agents or clients as
# processes, drive the official SDKs or run mypy, and any test that needs the
# whole tree rendered (the `rendered` fixture). What is left runs in-process and
# is what a contributor's edit most often breaks; the whole suite runs every test.
SLOW_MODULES = frozenset(
    {
        "test_conformance.py",  # the conformance kit against spawned agents, a run per mutant
        "test_conformance_client.py",  # the same against spawned clients
        "test_conformance_sdks.py",
        "test_conformance_usage.py",  # the kit's command line in subprocesses, and a flooding program  # the kit against the official SDKs' programs
        "test_connection_interop.py",  # the official SDKs, in environments of their own
        "test_connection_process.py",  # the example agent and client as processes
        "test_connection_typing.py",  # mypy over the typed API
        "test_connection_types.py",  # mypy over the typed connection
        "test_agent_typing.py",  # mypy over the typed agent
        "test_example_client.py",  # the example client driving spawned agents
        "test_examples_interop.py",  # the examples against the official SDKs' programs
        "test_golden.py",  # whole-tree renders under several hash seeds and job counts
        "test_hostile_peers.py",  # connections under load, with memory measured
        "test_hostile_schemas.py",  # a generator run per bad or hostile schema
        "test_interpreters.py",  # a render per supported interpreter
        "test_manifest.py",  # full checks of generated/ in subprocesses
        "test_output_folder.py",  # the command line on real folders
        "test_package.py",  # builds a wheel
        "test_pydantic_floor.py",  # an environment with the oldest pydantic allowed
        "test_session_state_client.py",  # the client helpers against spawned agents
        "test_session_state_typing.py",  # mypy and pyright over the typed session state
        "test_readme_snippets.py",  # mypy and pyright over README.md's python blocks
        "test_versions.py",  # generates a third version package
    }
)
# Single tests of other modules that take seconds each: whole renders, generator
# runs in subprocesses or many fresh processes.
SLOW_TESTS = frozenset(
    {
        "test_validation_gives_the_same_answer_in_any_order_in_fresh_processes",  # test_parser_limits.py
        "test_a_message_costs_memory_in_proportion_to_its_size",  # test_parser_limits.py
        "test_cli_output_is_deterministic",  # test_diff.py
        "test_sigkill_at_random_moments_leaves_old_or_new",  # test_atomic_write.py
        "test_recursive_types_generate_import_and_round_trip",  # test_generator_inputs.py: generates and imports
        "test_a_cross_version_map_over_the_size_limit_is_refused_before_it_is_read",  # test_generator_inputs.py: two diffs
        "test_every_generated_module_is_what_black_writes_for_it_whole",  # test_formatting.py: a render and black whole
        "test_every_field_description_reaches_help_and_the_attribute_docstring",  # test_plan.py: help() of every model
    }
)

# Agents on acp_types.agent keep sessions in $ACP_TYPES_STORE (else under ~/.local/state): a store for
# this test process, for whatever starts before a test's own (below) takes over, e.g. a module's server.
os.environ.setdefault("ACP_TYPES_STORE", os.path.join(tempfile.mkdtemp(prefix="acp-types-tests-"), "sessions.sqlite3"))

QUICK = os.environ.get("ACP_TYPES_QUICK") == "1"
"""Set by `make test-quick`: the property tests draw fewer examples (see :func:`examples`)."""


def examples(n: int) -> int:
    """Hypothesis's ``max_examples`` for a property: ``n``, or a fifth of it in the quick loop."""
    return max(3, n // 5) if QUICK else n


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = getattr(item, "originalname", item.name)
        if item.path.name in SLOW_MODULES or name in SLOW_TESTS or "rendered" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _session_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test (and every agent it spawns) keeps its App sessions in a store of its own, never in ~/.local/state."""
    monkeypatch.setenv("ACP_TYPES_STORE", str(tmp_path_factory.mktemp("store") / "sessions.sqlite3"))


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.json"))


def load_fixture(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text("utf-8"))


def fixture_cases() -> list[Any]:
    """One case per (fixture file, version it holds for)."""
    cases = []
    for path in fixture_files():
        data = load_fixture(path)
        for version in data["versions"]:
            rel = path.relative_to(FIXTURES).as_posix()
            cases.append(pytest.param(path, version, id=f"{version}:{rel}"))
    return cases


def api(version: str):
    return importlib.import_module(f"acp_types.{version}")


@cache
def bundled_schema(version: str) -> dict[str, Any]:
    return json.loads((GENERATED / "acp_types" / version / "schema.json").read_text("utf-8"))


@cache
def validator_for(version: str, definition: str) -> jsonschema.Draft202012Validator:
    """A jsonschema validator for one definition of the bundled schema."""
    schema = dict(bundled_schema(version))
    schema = {**schema, "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(schema)


def payload_of(message: dict[str, Any]) -> tuple[str, Any]:
    """('params', params) for a request or notification, ('result', result) for a response."""
    if "method" in message:
        return "params", message.get("params")
    if "error" in message:
        return "error", message["error"]
    return "result", message.get("result")


@pytest.fixture(scope="session")
def inputs():
    from generator import pipeline

    return pipeline.load_inputs()


@pytest.fixture(scope="session")
def rendered(inputs) -> dict[str, str]:
    """Every file of generated/, rendered in memory from the committed schemas."""
    from generator import pipeline

    return pipeline.build_outputs(inputs)
