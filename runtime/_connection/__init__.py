"""The pieces of :mod:`acp_types.connection`, one module each; import them from there.

Along a message's path, each module importing only those before it:

- ``transport``: the interface a connection reads and writes whole messages
  through (``receive``, ``send``, ``buffered``, ``drain``, ``close``) and
  ``Oversized``, how a transport reports a frame over its limit;
- ``stdio``: newline-delimited JSON over a byte reader/writer, with the line
  limit (the transport of ``serve_stdio`` and ``spawn_agent``);
- ``pipes``: OS pipes, sockets, ttys and files as such a reader/writer;
- ``limits``: the defaults, the rate-limited log of what a peer causes, the
  cheap looks at oversized input (a batch's entry count, an id in a head);
- ``outgoing``: the one table of the requests this side sent;
- ``negotiation``: which version a connection settles on, and reading
  ``initialize`` in it;
- ``core``: ``Connection``: dispatch, the flow limits, answers, closing;
- ``sides``: ``AgentConnection`` / ``ClientConnection``, typed by version,
  and ``serve`` / ``serve_transport`` / ``serve_stdio``;
- ``process``: ``spawn_agent``, the agent's process group and signals.

Hand-written: the source is runtime/_connection/__init__.py, which the generator copies
into the package unchanged.
"""
