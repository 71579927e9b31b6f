"""A conformance kit for ACP programs: drive an agent (or a client) over stdio and judge it rule by rule.

    python -m acp_types.conformance agent [options] -- AGENT COMMAND...
    python -m acp_types.conformance client [options] -- CLIENT COMMAND...

In ``agent`` mode the kit plays a scriptable client: it spawns the agent,
negotiates each version asked for (``--protocol v1|v2|both``), logs in when
asked (``--auth METHOD_ID``, or ``auto``: an env_var method whose variables are
set, else one the agent completes), runs every check of the chosen suites
(``core``, ``seeds``: where the rule comes from; ``setup``: needs no model,
``prompt``: needs prompt turns) or the one ``--case ID``, answers the agent's
requests (permission with ``--permission``, ``fs/*`` in v1 with
``--client-fs``) and cancels turns where a check says so. In ``client`` mode
it plays an agent for a client it spawns, and checks what the client sends.

Every line is judged by the generated models of the settled version; the
``session/update`` stream by the session state's strict mode (see
``_oracle``). Each check has a stable id (the rule's row in the project's
inventory of the protocol's requirements), a level, who it binds, its versions
and its source; each result a verdict (SUCCESS, FAILURE, WARNING for a broken
SHOULD, SKIPPED with the reason, INFO), the transcript lines that show it and
the time it took. A prompt turn that does not finish within ``--turn-timeout``
(an agent without a working model) is a budget, not a rule: the checks that
need a finished turn are SKIPPED, saying so; what asks for a login the kit did
not make (-32000) is SKIPPED too. Results are printed as each check ends (with
a progress line on a terminal). Reports: text on stdout (colour on a terminal
only), and ``--json``, ``--junit``, ``--markdown`` files; ``--transcript DIR``
keeps the whole exchange. Ctrl-C or SIGTERM ends the run: the agent is stopped
and every report is written with what ended so far, marked partial.
``--expected-failures FILE`` lists known failures (``ID`` or ``ID@vN`` a line):
they do not fail the run, and one whose every result is SUCCESS does (a stale
baseline). Exit status: 0, 1 (a MUST failed outside the baseline, or the
baseline is stale), 2 (bad usage, the program could not be started, or the run
was interrupted).

Bounded: every wait has a deadline (``--timeout`` per check), a line longer
than 1 MiB is skipped unread, memory keeps the transcript's last lines, and
every process the kit starts runs in its own process group, which is ended.

Hand-written: the source is runtime/conformance/__init__.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import Any

from . import _agent, _agent_run, _client
from ._checks import FAILURE, REGISTRY, SUITES, WARNING, Check, Result, checks
from ._driver import StartError
from ._report import BaselineError, as_json, as_junit, as_markdown, as_result, as_text, judge, read_baseline

__all__ = ["REGISTRY", "Check", "Result", "checks", "main", "run"]

_ = (_agent, _client)  # importing them registers their checks


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m acp_types.conformance",
        usage="%(prog)s {agent,client} [options] -- CMD...",
        description="Check an ACP agent or client over stdio, rule by rule.",
    )
    parser.add_argument(
        "mode", choices=("agent", "client"), help="agent: the kit plays the client; client: the kit plays the agent"
    )
    parser.add_argument(
        "--protocol", choices=("v1", "v2", "both"), default="both", help="the versions to check (default: %(default)s)"
    )
    parser.add_argument(
        "--suite",
        default="all",
        metavar="SUITES",
        help="the checks to run, comma-separated: core, seeds (where the rule comes from), setup (needs no"
        " model: initialize, sessions, list, archive, errors, framing), prompt (needs prompt turns), all"
        " (default: %(default)s)",
    )
    parser.add_argument(
        "--auth",
        metavar="METHOD_ID",
        help="log in with this advertised auth method right after initialize; auto: an env_var method whose"
        " variables are set, else one the agent completes itself",
    )
    parser.add_argument("--case", metavar="ID", help="run the one check with this id (see --list)")
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    parser.add_argument("--json", type=Path, metavar="FILE")
    parser.add_argument("--junit", type=Path, metavar="FILE")
    parser.add_argument("--markdown", type=Path, metavar="FILE")
    parser.add_argument(
        "--transcript", type=Path, metavar="DIR", help="keep the whole exchange, one JSON line per message"
    )
    parser.add_argument("--expected-failures", type=Path, metavar="FILE")
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds a request may take; a check gets 3 times that (default: %(default)s)",
    )
    parser.add_argument(
        "--turn-timeout", type=float, default=5.0, help="seconds a prompt turn may take (default: %(default)s)"
    )
    parser.add_argument(
        "--prompt", default=_agent.Options.prompt, help="the prompt of each turn (default: %(default)r)"
    )
    parser.add_argument(
        "--long-prompt",
        default=_agent_run.LONG_PROMPT,
        help=f"a prompt long enough to cancel mid-turn (default: a built-in one of {len(_agent_run.LONG_PROMPT)} characters)",
    )
    parser.add_argument(
        "--permission",
        choices=("allow", "reject", "cancel"),
        default="allow",
        help="how the kit answers session/request_permission (default: %(default)s)",
    )
    parser.add_argument(
        "--client-fs", action="store_true", help="advertise fs/* in v1 and serve files under the kit's workspace"
    )
    parser.add_argument(
        "--client-input",
        default="",
        metavar="TEXT",
        help="client mode with {agent}: text written to the client's stdin (\\n for a newline)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only failures, warnings and the summary")
    parser.add_argument(
        "--url",
        metavar="URL",
        help="agent mode: check the remote agent at URL (ws://, wss://, http://, https://) instead of a command, "
        "through `python -m acp_types.remote connect URL` (the remote extra); give its options after --",
    )
    return parser


async def run(
    mode: str, command: list[str], versions: list[str], selected: list[Check], options: _agent.Options
) -> tuple[list[Result], dict[str, Any]]:
    """Run ``selected`` checks against ``command``; the results and what each version's program advertised."""
    if mode == "agent":
        return await _agent.run_agent(command, versions, selected, options)
    return await _client.run_client(command, versions, selected, options)


def _render(
    kind: str, mode: str, command: list[str], results: list[Result], info: dict[str, Any], outcome: dict[str, Any]
) -> str:
    if kind == "json":
        return as_json(mode, command, results, info, outcome)
    if kind == "junit":
        return as_junit(mode, results, outcome.get("interrupted") if outcome.get("partial") else None)
    return as_markdown(mode, command, results, info, outcome)


class _Live:
    """Results printed as each check ends, and a progress line on a terminal (on stderr)."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.results: list[Result] = []
        self.total = total
        self.quiet = quiet
        self.colour = sys.stdout.isatty()
        self.progress = sys.stderr.isatty()
        self.started = time.monotonic()

    def __call__(self, result: Result) -> None:
        self.results.append(result)
        self._clear()
        if not self.quiet or result.verdict in (FAILURE, WARNING):
            sys.stdout.write(as_result(result, self.colour))
            sys.stdout.flush()
        if self.progress:
            done, bad = len(self.results), sum(r.verdict == FAILURE for r in self.results)
            sys.stderr.write(
                f"\r[{done}/{self.total}] {bad} failed, {time.monotonic() - self.started:.0f} s; last {result.key}\033[K"
            )
            sys.stderr.flush()

    def _clear(self) -> None:
        if self.progress:
            sys.stderr.write("\r\033[K")

    def done(self) -> None:
        self._clear()


def _suites(text: str) -> tuple[str, ...] | None:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names or any(n not in (*SUITES, "all") for n in names):
        return None
    return tuple(n for n in names if n != "all")


async def _interruptible(coro: Any, caught: list[str]) -> tuple[Any, str | None]:
    """Run ``coro``; Ctrl-C or SIGTERM cancels it (its processes are ended): (its value or None, the signal).

    The signal's name goes to ``caught`` (the run looks at it before each check as well).
    """
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(coro)

    def stop(name: str) -> None:
        if not caught:
            caught.append(name)
            task.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop, sig.name)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such support
            pass
    try:
        value = await task
    except asyncio.CancelledError:
        if not caught:
            raise
        return None, caught[0]
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    return (None, caught[0]) if caught else (value, None)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    command = argv[cut + 1 :]
    suites = _suites(args.suite)
    if suites is None:
        parser.error(f"--suite {args.suite!r}: give one or more of {', '.join((*SUITES, 'all'))}, comma-separated")
    selected = checks(args.mode, suites, args.case)
    if args.list:
        for c in checks(args.mode):
            print(
                f"{c.id:<9} {c.suite:<6} {c.tags[1]:<6} {c.level:<6} {','.join(c.versions):<6} {c.title} [{c.source}]"
            )
        return 0
    if args.case and not selected:
        parser.error(f"no {args.mode} check has id {args.case!r} (see --list)")
    if args.url is not None:
        if args.mode != "agent":
            parser.error("--url checks a remote agent: it goes with agent mode")
        command = [sys.executable, "-m", "acp_types.remote", "connect", args.url, *command]
    if not command:
        parser.error("give the program to check after -- (or, in agent mode, --url URL)")
    try:
        baseline = read_baseline(args.expected_failures) if args.expected_failures else set()
    except BaselineError as exc:
        parser.error(str(exc))
    for path, what in ((args.json, "--json"), (args.junit, "--junit"), (args.markdown, "--markdown")):
        if path is not None and path.exists() and not path.is_file():
            parser.error(f"{what} {path}: not a regular file (a report is written there)")
    if args.transcript is not None:
        if args.transcript.exists() and not args.transcript.is_dir():
            parser.error(f"--transcript {args.transcript}: not a folder (the kit writes one file per version there)")
        try:
            args.transcript.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            parser.error(f"--transcript {args.transcript}: cannot make the folder ({exc.strerror})")
    versions = ["v1", "v2"] if args.protocol == "both" else [args.protocol]
    live = _Live(sum(len([v for v in c.versions if v in versions]) for c in selected), args.quiet)
    info: dict[str, Any] = {}
    caught: list[str] = []
    options = _agent.Options(
        timeout=args.timeout,
        turn_timeout=args.turn_timeout,
        prompt=args.prompt,
        long_prompt=args.long_prompt,
        permission=args.permission,
        client_fs=args.client_fs,
        transcript_dir=args.transcript,
        client_input=args.client_input.replace("\\n", "\n"),
        auth=args.auth,
        on_result=live,
        info=info,
        stopped=lambda: bool(caught),
    )
    try:
        done, interrupted = asyncio.run(_interruptible(run(args.mode, command, versions, selected, options), caught))
    except StartError as exc:
        live.done()
        print(f"conformance: {exc}", file=sys.stderr)
        return 2
    live.done()
    if done is not None:
        results, info = done
    else:  # interrupted: what ended so far
        results = list(live.results)
    outcome = judge(results, baseline)
    shown = len(live.results) == len(results)  # agent mode prints as it goes; client mode at the end
    if interrupted is not None:
        ran = len(results)
        outcome.update(
            partial=True,
            passed=False,
            interrupted=f"interrupted by {interrupted} after {ran} of {live.total} results",
        )
    sys.stdout.write(as_text(args.mode, results, info, outcome, sys.stdout.isatty(), args.quiet, shown))
    for path, kind in ((args.json, "json"), (args.junit, "junit"), (args.markdown, "markdown")):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_render(kind, args.mode, command, results, info, outcome), "utf-8")
    if interrupted is not None:
        return 2
    return 0 if outcome["passed"] else 1
