"""Check that every ember sibling dependency range admits the sibling's current version.

Also checks that each distribution's ``__version__`` agrees with its pyproject.toml.
Run by the ``ranges`` tox env; exits non-zero and names the offending pair on failure.
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "packages"


def main() -> int:
    projects = {}
    for pyproject in sorted(PACKAGES.glob("*/pyproject.toml")):
        meta = tomllib.loads(pyproject.read_text())["project"]
        projects[meta["name"]] = (pyproject.parent, meta)
    errors = []
    for name, (folder, meta) in projects.items():
        init = folder / "src" / "ember" / folder.name / "__init__.py"
        match = re.search(r'^__version__\s*=\s*"([^"]+)"', init.read_text(), re.M)
        if match is None or match.group(1) != meta["version"]:
            errors.append(f"{init}: __version__ does not match pyproject version {meta['version']}")
        for dep in meta.get("dependencies", []):
            req = Requirement(dep)
            if not req.name.startswith("ember-"):
                continue
            if req.name not in projects:
                errors.append(f"{name} depends on unknown sibling {req.name}")
                continue
            sibling_version = projects[req.name][1]["version"]
            if not req.specifier.contains(sibling_version, prereleases=True):
                errors.append(
                    f"{name} requires {req} but packages/{projects[req.name][0].name} "
                    f"is at {sibling_version}"
                )
            else:
                print(f"ok: {name} -> {req} admits {sibling_version}")
    for line in errors:
        print("error:", line, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
