"""The pieces of :mod:`acp_types.connection`, one module each; import them from there.

Along a message's path: ``transport`` (the interface a connection reads and
writes messages through), ``stdio`` (newline-delimited JSON over a byte
reader/writer, with the line limit), ``pipes`` (OS pipes, sockets, ttys and
files as such a reader/writer), ``process`` (an agent in a child process).

Hand-written: the source is runtime/_connection/, which the generator copies
into the package unchanged.
"""
