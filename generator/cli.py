"""Command line: ``python -m generator {generate,check,validate,diff,compare-reference}``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from pathlib import Path

from generator import __version__
from generator.errors import SchemaError, UsageError

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_BUG = 0, 1, 2, 3
JOBS_ENV = "ACP_TYPES_JOBS"


def _out_path(text: str) -> Path:
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no folder")
    return Path(text)


def _check_jobs() -> None:
    raw = os.environ.get(JOBS_ENV, "").strip()
    if raw and not (raw.isascii() and raw.isdigit()):
        raise UsageError(
            f"{JOBS_ENV}={raw!r}: expected a whole number of processes "
            "(1 keeps everything in one process; unset or 0: one per version)"
        )


def _display(out: Path) -> str:
    """How an output folder is named in messages: relative to the working folder when inside it."""
    text = os.path.relpath(os.path.abspath(out))
    if text.startswith(".."):
        text = os.path.abspath(out)
    return text.rstrip("/") + "/"


def _parser() -> argparse.ArgumentParser:
    from generator.pipeline import ROOT

    p = argparse.ArgumentParser(
        prog="python -m generator",
        description=(
            "Generate the acp_types package from the canonical ACP schemas in schema/. "
            "Exit codes: 0 success, 1 findings (stale files for check; changes at the "
            "--fail-on level for diff), 2 invalid schema or usage, 3 internal error."
        ),
    )
    p.add_argument("--version", action="version", version=f"acp-types generator {__version__}")
    p.add_argument(
        "--schema",
        type=Path,
        default=ROOT / "schema",
        metavar="DIR",
        help="the canonical schema folder: one folder per version (v1/, v2/, ...) and "
        "crossversion.json (default: schema/)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser(
        "generate",
        help="check the schemas and (re)write generated/",
        description="Check the schemas, render every file in memory, then write only "
        "the files that changed and remove orphans. Nothing is written if any "
        "step fails.",
    )
    g.add_argument(
        "--out",
        type=_out_path,
        default=ROOT / "generated",
        help="output folder (default: generated/); it must be new, empty, or a tree the generator "
        "wrote (it holds a .acp-types-generated marker), because everything else in it is replaced",
    )

    c = sub.add_parser(
        "check",
        help="exit 1 and list stale files if generated/ is not what the schemas produce",
        description="Confirm the output folder is what the schemas produce; writes nothing. "
        "When the local check cache (.cache/check/, written by generate) shows the same inputs (schemas, templates, "
        "generator source, tool versions) and the same file hashes, that is enough; "
        "otherwise everything is rendered in memory and compared file by file.",
    )
    c.add_argument("--out", type=_out_path, default=ROOT / "generated", help="folder to compare (default: generated/)")
    c.add_argument(
        "--full",
        action="store_true",
        help="always regenerate in memory and compare, even when the manifest confirms the tree, "
        "with black over every definition (the format cache, .cache/format/, is not used)",
    )

    sub.add_parser(
        "validate",
        help="check the schemas only (meta-schema and semantic checks)",
        description="Load both versions and the cross-version map and report every problem "
        "with its file and JSON pointer.",
    )

    d = sub.add_parser(
        "diff",
        help="list what changed between two versions of the schemas, with a level for each change",
        description="Compare two version folders of canonical schemas (schema/v1, or REV:schema/v1 read from "
        "git at a revision, without a checkout; FOLDER is relative to the current folder, and to the "
        "repository root after REV:). Methods, definitions, fields, unions, enums, capability gates, "
        "tolerance markers and stability are compared on the intermediate model; every change gets a "
        "rule id, a level (breaking, possibly-breaking, safe) and the axis it breaks (wire or "
        "generated source). Between different versions, renames are paired by the crossversion.json "
        "beside NEW (or OLD); otherwise they show as a removal plus an addition. The rules are listed "
        "in generated/docs/diff-rules.md. Exit codes: 0 done, 1 a change at the --fail-on level was "
        "found, 2 a side cannot be loaded or the arguments are wrong.",
    )
    d.add_argument("old", metavar="OLD", help="the old side: FOLDER or REV:FOLDER")
    d.add_argument("new", metavar="NEW", help="the new side: FOLDER or REV:FOLDER")
    d.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="text for a terminal (colour only on a tty; NO_COLOR turns it off), markdown for a pull "
        "request, json for CI (default: text)",
    )
    d.add_argument(
        "--fail-on",
        choices=("breaking", "possibly-breaking", "any"),
        default=None,
        help="exit 1 if a change at this level or worse is found (any: any change at all); "
        "without it the exit code is 0 whatever is found",
    )
    d.add_argument(
        "--ignore-unstable",
        action="store_true",
        help="with --fail-on, do not count changes that touch only the unstable surface (methods, "
        "definitions, fields and union branches unstable on every side they exist); moves between "
        "unstable and stable still count",
    )
    maps = d.add_mutually_exclusive_group()
    maps.add_argument(
        "--map",
        type=Path,
        default=None,
        metavar="FILE",
        help="the cross-version map to pair renames with (default: crossversion.json beside NEW, "
        "else beside OLD); only used when the two sides are different versions",
    )
    maps.add_argument("--no-map", action="store_true", help="pair by name only, even between different versions")
    _add_compare_reference(sub)
    s = sub.add_parser(
        "snapshot-release",
        help="keep the schemas of a git revision as the previous release the changelog is diffed against",
        description="Copy every version folder of --schema as it is at git revision REV (default HEAD; read with "
        "git, no checkout) to releases/NAME/<version>/ beside them, record NAME, the full revision and "
        "the sha256 of each snapshot in releases.json, and remove older snapshots. make generate then "
        "writes generated/docs/changelog-<version>.md: the diff from the snapshot to the working "
        "folder. Run it on the last commit of a release, before adopting the next one. Exit codes: 0 "
        "done, 2 the revision or its schemas cannot be read (nothing is written).",
    )
    s.add_argument("name", metavar="NAME", help="the release's year and month, such as 2026-08")
    s.add_argument("--revision", default="HEAD", metavar="REV", help="the git revision to take (default: HEAD)")
    return p


def _add_compare_reference(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    r = sub.add_parser(
        "compare-reference",
        help="list every wire difference between a canonical version and a published ACP reference schema",
        description="Read a published ACP reference schema (a folder with schema.json, or the file itself; with "
        "--unstable its schema.unstable.json, read against the stable schema.json beside it) into the "
        "intermediate model and compare it with the canonical version (--schema DIR/<version>), with "
        "the diff's rules and levels. The methods are the schema's x-method / x-side annotations, or "
        "meta.json (meta.unstable.json) when it lies beside the schema. A construct our format cannot "
        "express is reported by name (rule reference-unsupported), like any other difference. "
        "Differences listed in schema/differences.json are shown as deliberate and never fail "
        "--fail-on; differences of names only are listed apart. Exit codes: 0 done, 1 an "
        "unexplained difference at the --fail-on level, 2 a side cannot be read or the arguments "
        "are wrong.",
    )
    r.add_argument(
        "reference",
        type=Path,
        metavar="REFERENCE",
        help="reference folder, schema.json, or schema.unstable.json (implies --unstable)",
    )
    r.add_argument(
        "--unstable",
        action="store_true",
        help="compare with the folder's unstable schema (schema.unstable.json, and meta.unstable.json if any), "
        "read against the stable pair beside it: what only the unstable pair has reads as unstable",
    )
    r.add_argument(
        "--version",
        dest="version_name",
        required=True,
        metavar="VERSION",
        help="the canonical version to compare with, a folder of --schema such as v1 (and the "
        "reference's protocol version)",
    )
    r.add_argument(
        "--differences",
        type=Path,
        default=None,
        metavar="FILE",
        help="the deliberate differences (default: differences.json in the --schema folder)",
    )
    r.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="text for a terminal, markdown for a pull request, json for CI (default: text)",
    )
    r.add_argument(
        "--fail-on",
        choices=("breaking", "possibly-breaking", "any"),
        default=None,
        help="exit 1 if an unexplained difference at this level or worse is found",
    )


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except SchemaError as exc:
        n = len(exc.problems)
        print(f"error: the schema has {n} problem{'s' if n != 1 else ''}; nothing was written", file=sys.stderr)
        for problem in exc.problems:
            print(problem.format(), file=sys.stderr)
        return EXIT_INPUT
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted; nothing more was written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in the generator, not in the input
        if os.environ.get("ACP_TYPES_DEBUG"):
            traceback.print_exc()
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(
            "nothing was written. This is a bug in the generator; rerun with ACP_TYPES_DEBUG=1 "
            "for the traceback and report it.",
            file=sys.stderr,
        )
        return EXIT_BUG


def _run(args: argparse.Namespace) -> int:
    if args.command == "compare-reference":
        from generator import reference

        return reference.run(args)
    if args.command == "diff":
        from generator.diff import command

        return command.run(args)
    if args.command == "snapshot-release":
        from generator.diff import changelog

        for line in changelog.snapshot_release(args.schema, args.name, args.revision):
            print(line)
        print(f"{_display(args.schema / changelog.RELEASES_FILE).rstrip('/')}: written; now `make generate`")
        return EXIT_OK
    from generator import writer

    if args.command in ("generate", "check"):
        _check_jobs()
    real_out = writer.resolve_out(args.out) if args.command in ("generate", "check") else None
    if args.command == "check" and not args.full and real_out is not None and writer.has_marker(real_out):
        from generator import manifest

        try:
            confirmed = manifest.up_to_date(real_out, args.schema)
        except RecursionError:  # a damaged cache nested too deeply to read: compare in full
            confirmed = False
        if confirmed:
            print(f"{_display(args.out)} is up to date (confirmed by the check cache: same inputs, same files)")
            return EXIT_OK
    from generator import manifest, pipeline

    if args.command == "validate":
        inputs = pipeline.load_inputs(args.schema)
        for proto in inputs.protocols.values():
            print(
                f"{proto.source}: {len(proto.types)} definitions, {len(proto.methods)} methods, "
                f"{len(proto.features)} features: ok"
            )
        return EXIT_OK
    from generator.render import formatting

    # check --full confirms the tree by black alone: what the format cache holds plays no part
    with formatting.cache_disabled() if args.command == "check" and args.full else contextlib.nullcontext():
        mapping = pipeline.build_outputs(pipeline.load_inputs(args.schema))
    assert real_out is not None
    if args.command == "check":
        writer.check_owned(real_out, set(mapping))
        stale = writer.stale_files(real_out, mapping)
        if stale:
            print(f"{len(stale)} generated file(s) are stale; run `make generate`:", file=sys.stderr)
            for path, why in stale:
                print(f"  {_display(args.out)}{path}: {why}", file=sys.stderr)
            return EXIT_FINDINGS
        manifest.record(real_out, mapping, args.schema)
        print(f"{_display(args.out)} is up to date ({len(mapping)} files)")
        return EXIT_OK
    written, removed = writer.write_tree(real_out, mapping)
    manifest.record(real_out, mapping, args.schema)
    print(
        f"{_display(args.out)}: {len(written)} written, {len(removed)} removed, {len(mapping) - len(written)} unchanged"
    )
    return EXIT_OK
