from __future__ import annotations

import os


def require_files(dataset: str, folder: str, files: list[str]) -> None:
    """Raise FileNotFoundError listing what to put where when any of ``files`` is missing."""
    missing = [f for f in files if not os.path.exists(os.path.join(folder, f))]
    if missing:
        raise FileNotFoundError(
            f"{dataset}: missing {', '.join(missing)} under {os.path.abspath(folder)!r}. "
            f"ember downloads nothing: put the {dataset} files there "
            f"(expected: {', '.join(os.path.join(folder, f) for f in files)})"
        )
