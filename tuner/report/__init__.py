"""Bench tables and SVG charts, drawn from documents without a GPU."""
