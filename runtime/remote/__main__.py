"""``python -m acp_types.remote serve TARGET [--listen HOST:PORT]``: serve an agent on ``/acp``, both profiles.

TARGET is ``path/to/file.py:Name`` or ``module:Name``, naming an ``App`` (class or instance) or a
connection handler factory. Bad arguments get one line on stderr and exit 2.

``python -m acp_types.remote connect URL [--token-env VAR] [--header K:V]...``: a stdio agent that
relays each line to the remote agent at URL and each of its messages back (see ``_relay.py``);
exit 0 when stdin ends or a signal stops it, 1 (one line on stderr) when the server goes, 2 on bad usage.

Hand-written: the source is runtime/remote/__main__.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from . import Limits, Refused, Stopped, check_exposure, start_server


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr (``error: ...``) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (--help says more)\n")


def load_target(spec: str) -> Any:
    """The object ``spec`` (``file.py:Name`` or ``module:Name``) names."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise _Refused(f"TARGET {spec!r}: expected path/to/file.py:Name or module:Name")
    try:
        if where.endswith(".py") or os.sep in where:
            path = Path(where)
            if not path.is_file():
                raise _Refused(f"TARGET {spec!r}: no file {where}")
            module_spec = importlib.util.spec_from_file_location(path.stem, path)
            if module_spec is None or module_spec.loader is None:
                raise _Refused(f"TARGET {spec!r}: cannot load {where}")
            module = importlib.util.module_from_spec(module_spec)
            sys.path.insert(0, str(path.resolve().parent))  # its siblings import as when it runs as a script
            sys.modules[path.stem] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except _Refused:
        raise
    except Exception as exc:
        raise _Refused(f"TARGET {spec!r}: loading it failed: {type(exc).__name__}: {exc}") from exc
    try:
        return getattr(module, name)
    except AttributeError:
        raise _Refused(f"TARGET {spec!r}: {where} has no {name!r}") from None


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r}: expected HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def _positive(kind: type) -> Any:
    def parse(value: str) -> Any:
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
        if not number > 0:
            raise argparse.ArgumentTypeError(f"{value!r} must be positive")
        return number

    return parse


def _header(value: str) -> tuple[str, str]:
    name, sep, text = value.partition(":")
    if not sep or not name.strip() or any(c in value for c in "\r\n"):
        raise argparse.ArgumentTypeError(f"{value!r} is not NAME:VALUE")
    return name.strip(), text.strip()


def _connect(args: argparse.Namespace, token: str | None) -> int:
    import logging

    from ._client import _url
    from ._relay import RelayError, install_signals, relay

    try:
        _url(args.url)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    quiet = logging.getLogger("acp_types.remote")  # the relay says why it ends, once, itself
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    try:
        asyncio.run(
            relay(
                args.url,
                token=token,
                headers=dict(args.header),
                max_message_size=args.max_message_size,
                open_timeout=args.open_timeout,
                on_ready=install_signals,
            )
        )
    except RelayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except OSError as exc:  # stdin or stdout unusable
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    defaults = Limits()
    parser = _Parser(
        prog="python -m acp_types.remote",
        description="Serve an ACP agent over Streamable HTTP and WebSocket on one /acp endpoint.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser(
        "serve",
        help="serve an agent on http://HOST:PORT/acp (and ws://)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    s.add_argument("target", metavar="TARGET", help="path/to/file.py:Name or module:Name (an App or a handler factory)")
    s.add_argument("--listen", type=_listen, default=("127.0.0.1", 8765), metavar="HOST:PORT")
    s.add_argument("--token-env", metavar="VAR", help="require this environment variable's value as a bearer token")
    s.add_argument("--insecure", action="store_true", help="allow a non-loopback --listen without a token")
    s.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN", help="a browser Origin to accept")
    s.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="a Host header to serve")
    s.add_argument("--tls-cert", metavar="PEM", help="serve https:// and wss:// with this certificate chain")
    s.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    s.add_argument("--max-connections", type=_positive(int), default=defaults.max_connections)
    s.add_argument("--max-message-size", type=_positive(int), default=defaults.max_message_size, metavar="BYTES")
    s.add_argument("--max-buffered-bytes", type=_positive(int), default=defaults.max_buffered_bytes, metavar="BYTES")
    s.add_argument("--output-stall", type=_positive(float), default=defaults.output_stall, metavar="SECONDS")
    s.add_argument("--idle-timeout", type=_positive(float), default=defaults.idle_timeout, metavar="SECONDS")
    s.add_argument("--request-timeout", type=_positive(float), default=defaults.request_timeout, metavar="SECONDS")
    s.add_argument("--header-timeout", type=_positive(float), default=defaults.header_timeout, metavar="SECONDS")
    s.add_argument("--max-sockets", type=_positive(int), default=defaults.max_sockets)
    c = commands.add_parser(
        "connect",
        help="relay stdin/stdout to the remote agent at URL (a stdio agent for editors, the tap, the kit)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    c.add_argument("url", metavar="URL", help="ws://, wss://, http:// or https://HOST[:PORT][/PATH] (/acp by default)")
    c.add_argument("--token-env", metavar="VAR", help="send this environment variable's value as a bearer token")
    c.add_argument(
        "--header", action="append", default=[], type=_header, metavar="K:V", help="a header to send (repeatable)"
    )
    c.add_argument("--max-message-size", type=_positive(int), default=defaults.max_message_size, metavar="BYTES")
    c.add_argument("--open-timeout", type=_positive(float), default=10.0, metavar="SECONDS")
    args = parser.parse_args(argv)
    token = None  # both commands take --token-env
    if args.token_env is not None:
        token = os.environ.get(args.token_env)
        if not token:
            print(f"error: --token-env {args.token_env}: the variable is unset or empty", file=sys.stderr)
            return 2
    if args.command == "connect":
        return _connect(args, token)
    host, port = args.listen
    try:
        check_exposure(host, token, args.insecure)
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if bool(args.tls_cert) != bool(args.tls_key):
        print("error: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    for pem in (args.tls_cert, args.tls_key):
        if pem and not Path(pem).is_file():
            print(f"error: no file {pem}", file=sys.stderr)
            return 2
    try:
        target = load_target(args.target)
    except _Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    limits = Limits(
        max_connections=args.max_connections,
        max_message_size=args.max_message_size,
        max_buffered_bytes=args.max_buffered_bytes,
        output_stall=args.output_stall,
        idle_timeout=args.idle_timeout,
        request_timeout=args.request_timeout,
        header_timeout=args.header_timeout,
        max_sockets=args.max_sockets,
    )

    async def run() -> None:
        async with start_server(
            target,
            host,
            port,
            token=token,
            insecure=args.insecure,
            allowed_origins=args.allow_origin,
            allowed_hosts=args.allow_host,
            ssl_certfile=args.tls_cert,
            ssl_keyfile=args.tls_key,
            limits=limits,
        ) as server:
            print(f"serving {args.target} on {server.url} (WebSocket: {server.ws_url})", file=sys.stderr, flush=True)
            await server.wait()

    try:
        asyncio.run(run())
    except (KeyboardInterrupt, Stopped):
        return 0
    except (TypeError, ValueError) as exc:  # not an App or factory; an App whose promises break (PromiseBroken)
        print(f"error: TARGET {args.target!r}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
