"""What nvcc makes of every representative config: registers, spills, static shared memory, and
(where ``cuobjdump`` is on PATH) the SASS itself.

A template or family change that means to keep the kernels as they were can prove it: record the
usage before and after, then compare. ``tests/tuner/representative_usage.json`` holds the usage
of the committed templates, and ``test_compile.py`` checks every compile against it, so a change
in what the compiler makes of a representative is seen (and the file rewritten on purpose).

    python -m tests.tuner.kernel_usage record        # rewrites representative_usage.json
    python -m tests.tuner.kernel_usage record before.json --sass before-sass/
    python -m tests.tuner.kernel_usage compare before.json after.json

SASS is compared as ``cuobjdump -sass`` prints it (instructions with their encodings, which hold
the scheduling bits); it is not committed: it is large and changes with the compiler.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tuner.kernels.compile import CompiledKernel, CompileError, NvccCompiler, compile_many
from tuner.kernels.families import parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import ALL_REPRESENTATIVE

ARCH = "sm_90"
USAGE_FIELDS = (
    "registers",
    "smem_static_bytes",
    "stack_bytes",
    "spill_store_bytes",
    "spill_load_bytes",
)
SNAPSHOT = Path(__file__).with_name("representative_usage.json")


def compile_representatives(names: list[str] | None = None) -> dict[str, CompiledKernel]:
    """nvcc builds for sm_90 of ``names`` (every representative by default); a failure raises."""
    names = ALL_REPRESENTATIVE if names is None else names
    results = compile_many(NvccCompiler(ARCH), [render(parse_config(n)) for n in names])
    kernels = {}
    for name, result in zip(names, results, strict=True):
        if isinstance(result, CompileError):
            raise result
        kernels[name] = result
    return kernels


def usage_record(kernel: CompiledKernel) -> dict[str, int]:
    return {f: getattr(kernel.usage, f) for f in USAGE_FIELDS}


def sass(cubin: Path) -> str:
    """The cubin's SASS as ``cuobjdump -sass`` prints it, from the first function on (the lines
    before name the file)."""
    text = subprocess.run(
        ["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    return text[text.index("Function :") :]


def record(path: Path, sass_dir: Path | None) -> None:
    kernels = compile_representatives()
    compiler = NvccCompiler(ARCH).version
    entries: dict[str, dict[str, Any]] = {}
    for name, kernel in kernels.items():
        entries[name] = usage_record(kernel)
        if sass_dir is not None:
            code = sass(kernel.cubin)
            sass_dir.mkdir(parents=True, exist_ok=True)
            (sass_dir / f"{name}.sass").write_text(code)
            entries[name]["sass_sha256"] = hashlib.sha256(code.encode()).hexdigest()
    document = {"compiler": compiler, "arch": ARCH, "kernels": entries}
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """One line per representative whose recorded values differ (or that only one side has)."""
    lines = []
    old, new = before["kernels"], after["kernels"]
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            lines.append(f"{name}: only {'after' if name in new else 'before'}")
            continue
        changed = [
            f"{key} {old[name].get(key)} -> {new[name].get(key)}"
            for key in sorted(set(old[name]) | set(new[name]))
            if old[name].get(key) != new[name].get(key)
        ]
        if changed:
            lines.append(f"{name}: {', '.join(changed)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="compile every representative, write the usage")
    rec.add_argument("path", type=Path, nargs="?", default=SNAPSHOT)
    rec.add_argument("--sass", type=Path, help="also write each kernel's SASS into this folder")
    cmp = commands.add_parser("compare", help="list the representatives whose usage differs")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        if args.sass is not None and shutil.which("cuobjdump") is None:
            parser.error("--sass needs cuobjdump (and nvdisasm) on PATH")
        record(args.path, args.sass)
        return 0
    lines = differences(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    print("\n".join(lines) if lines else "no differences")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
