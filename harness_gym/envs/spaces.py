"""A text space that accepts any string: patches, packets and tracebacks are free text.

Gymnasium's ``Text`` checks every character against a charset (alphanumeric by default),
so a packet with punctuation or non-ASCII text would be "not in space". Like BrowserGym's
``Unicode``, ``contains`` checks only type and length; ``sample`` draws printable text.
"""
from __future__ import annotations

import string
from typing import Any

from gymnasium.spaces import Text

# Every observation fits in this many characters: the harness-file section is cut to fit
# (``render_observation(max_chars=…)``), however large sequential edits make the files.
MAX_OBSERVATION_CHARS = 1_000_000


class FreeText(Text):
    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"FreeText({self.min_length}, {self.max_length})"
