"""ALFWorld data commands: the embedded generator needs no data; the original games come from ``alfworld-download``."""
from __future__ import annotations

import sys
from pathlib import Path


def main_download(url: str | None, dest: Path) -> int:
    """harness-gym does not fetch ALFWorld games itself: they come with the ``alfworld`` package's downloader."""
    print(
        "harness-gym: ALFWorld game files are not downloaded by harness-gym. Install the optional extra "
        "(pip install alfworld), run `alfworld-download` (it fills $ALFWORLD_DATA, default ~/.cache/alfworld), then "
        f"pass data_dir=<that folder> and backend='original'. Without them the embedded generator is used (dest {dest} unused).",
        file=sys.stderr,
    )
    return 2
