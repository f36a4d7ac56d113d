"""``python -m harness_gym.smol {data,train,eval,ship} …``: the SmolLM2 target pipeline's commands."""
from __future__ import annotations

import importlib
import sys

COMMANDS = {"data": "harness_gym.smol.data", "train": "harness_gym.smol.train", "eval": "harness_gym.smol.evaluate",
            "ship": "harness_gym.smol.ship"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m harness_gym.smol {{{','.join(COMMANDS)}}} [options]  (-h after a command for its options)",
              file=sys.stderr)
        return 2
    return int(importlib.import_module(COMMANDS[argv[0]]).main(argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
