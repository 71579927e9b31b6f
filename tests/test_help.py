"""help() of the package and of each version module is a short guide; __all__ and import * see everything."""

from __future__ import annotations

import json
import pydoc
import subprocess
import sys

import pytest
from conftest import ROOT, VERSIONS, api

import acp_types

# Bounds on the pages pydoc renders (plain text). Before the guide, the page of
# a version module documented every model with all of pydantic's inherited
# methods: about 110,000 lines.
MAX_VERSION_PAGE = 400
MAX_PACKAGE_PAGE = 80


def _page(thing: object) -> str:
    return pydoc.render_doc(thing, renderer=pydoc.plaintext)


def _update_model(version: str) -> str:
    """The params model of ``session/update``, the example each page names."""
    return str(api(version).METHODS["session/update"].params.__name__)


def _schema_names(version: str) -> set[str]:
    return set(json.loads(api(version).SCHEMA_PATH.read_text("utf-8"))["$defs"])


@pytest.mark.parametrize("version", VERSIONS)
def test_version_page_is_a_short_guide(version: str) -> None:
    m = api(version)
    page = _page(m)
    assert len(page.splitlines()) <= MAX_VERSION_PAGE, len(page.splitlines())
    # what to import and where the models are documented
    assert f"from acp_types.{version} import" in page
    model = _update_model(version)
    assert f"from acp_types.{version} import {model}" in page
    assert f"help(acp_types.{version}.{model})" in page
    # the entry points and tables are on the page itself
    for name in (
        "parse_params",
        "parse_result",
        "parse_message",
        "method_allowed",
        "METHODS",
        "ERRORS",
        "RESOURCE_NOT_FOUND",
        "SCHEMA_PATH",
    ):
        assert name in page, name
    # no model is documented on the guide page
    assert f"class {model}" not in page
    assert "model_validate" not in page


def test_package_page_is_a_short_guide() -> None:
    page = _page(acp_types)
    assert len(page.splitlines()) <= MAX_PACKAGE_PAGE
    for version in VERSIONS:
        assert f"acp_types.{version}" in page
    assert "acp_types.connection" in page and "help(acp_types.v1)" in page


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["session/update", "TextContent", "InitializeResponse"])
def test_each_model_keeps_its_own_page(version: str, name: str) -> None:
    name = _update_model(version) if name == "session/update" else name
    cls = getattr(api(version), name)
    page = _page(cls)
    assert f"class {name}(" in page
    first_line = (cls.__doc__ or "").strip().splitlines()[0]
    assert first_line in page
    for field in cls.model_fields:
        assert field in page, field
    assert "model_validate" in page  # the inherited API is still documented there


@pytest.mark.parametrize("version", VERSIONS)
def test_dir_shows_the_guide_and_every_name_is_exported(version: str) -> None:
    m = api(version)
    listed = set(dir(m))
    assert {"parse_message", "parse_params", "METHODS", "RESOURCE_NOT_FOUND"} <= listed
    assert _update_model(version) not in listed  # (pydoc documents what dir() gives)
    assert listed <= set(m.__all__)
    # the JSON-RPC layer and the peers are exported before first use too
    assert {"parse_message", "PendingRequests", "MessageError", "Notification", "AgentPeer"} <= set(m.__all__)
    assert _schema_names(version) <= set(m.__all__)


@pytest.mark.parametrize("version", VERSIONS)
def test_star_import_binds_every_public_name(version: str) -> None:
    # in a fresh interpreter, so the lazily loaded names are not loaded yet
    code = (
        f"import json; from acp_types.{version} import *\n"
        f"import acp_types.{version} as m\n"
        "print(json.dumps(sorted(k for k in globals() if not k.startswith('_'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT / "generated", check=True
    )
    bound = set(json.loads(out.stdout)) - {"json", "m"}
    assert _schema_names(version) <= bound
    assert set(list(api(version).__all__)) == bound
    assert {"parse_message", "PendingRequests", "MessageError", "AgentPeer", "RESOURCE_NOT_FOUND"} <= bound


@pytest.mark.parametrize("version", VERSIONS)
def test_the_export_list_is_a_plain_list_of_every_name(version: str) -> None:
    m = api(version)
    names = m.__all__
    assert type(names) is list and len(names) == len(set(names))
    assert _schema_names(version) <= set(names)
    model = _update_model(version)
    assert model in names and "parse_params" in names and "METHODS" in names


def test_the_client_helpers_page_says_what_a_user_had_to_guess() -> None:
    # a new user found these only by reading signatures (issue 34.4)
    from acp_types import client

    page = _page(client)
    for needle in ("``async`` one", "ConnectionClosed", "one at a time", "max_other_sessions", "v1.SessionState"):
        assert needle in page, needle
