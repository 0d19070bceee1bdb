"""Hatch build hook: a wheel carries the committed results an installed gemmtune reads.

Which files, and where in the wheel, is decided by ``tuner/data/location.py`` (the module
that also resolves where the readers look), loaded here by path: it needs only the standard
library, and the package's dependencies are not installed while a wheel is built.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CommittedResults(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return  # an editable install reads the checkout itself
        path = Path(self.root) / "tuner" / "results" / "location.py"
        spec = importlib.util.spec_from_file_location("_gemmtune_location", path)
        assert spec is not None and spec.loader is not None, path
        location = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = location  # dataclasses look their module up there
        try:
            spec.loader.exec_module(location)
            build_data["force_include"].update(location.shipped_files(Path(self.root)))
        finally:
            del sys.modules[spec.name]
