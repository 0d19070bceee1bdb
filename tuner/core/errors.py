"""Errors that mean "the user asked for something impossible" (CLI exit code 2, HTTP 422)."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from a user: the message names the value and what is allowed."""
