"""Renderers: each turns the intermediate model into ``{relative path: text}``."""
