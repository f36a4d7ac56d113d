"""Observations stay inside the declared observation space, however large sequential edits make the harness."""
from __future__ import annotations

import gymnasium as gym

import harness_gym  # noqa: F401
from harness_gym.envs.spaces import MAX_OBSERVATION_CHARS, FreeText
from harness_gym.packets.prompt import MARKER

LINE = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor\n"


def _big_file_diff(k: int, chars: int = 190_000) -> str:
    lines = chars // len(LINE)
    return f"--- /dev/null\n+++ b/notes{k}.md\n@@ -0,0 +1,{lines} @@\n" + ("+" + LINE) * lines


def test_sequential_large_patches_keep_observations_in_space() -> None:
    env = gym.make("HarnessEdit-DBBench-v0", batch_size=2, max_edits=8)
    try:
        space = env.observation_space
        assert isinstance(space, FreeText) and space.max_length == MAX_OBSERVATION_CHARS
        obs, _ = env.reset(seed=3)
        assert space.contains(obs)
        sizes = []
        for k in range(7):  # 7 × 190 KB of harness files: the full render would be over 1.3 M characters
            obs, _, terminated, _, info = env.step(_big_file_diff(k))
            assert info["patch_valid"], info["patch_error"]
            assert space.contains(obs), len(obs)
            sizes.append(len(obs))
        harness_chars = sum(len(t) for t in env.unwrapped._base.files.values())
        assert harness_chars > MAX_OBSERVATION_CHARS  # the cut was needed
        assert "[harness files truncated:" in obs and obs.rstrip().endswith(info["packet"]["text"].rstrip()[-200:])
        assert MARKER in obs and "## Response protocol" in obs  # instructions and evidence are never cut
        assert max(sizes) <= MAX_OBSERVATION_CHARS
        # an invalid patch renders the same capped observation
        obs_bad, _, _, _, bad = env.step("not a patch")
        assert bad["patch_valid"] is False and space.contains(obs_bad)
    finally:
        env.close()


def test_cut_is_at_a_line_and_says_how_much_is_shown() -> None:
    from harness_gym.packets.prompt import _cut

    section = "## Current Harness\n" + "".join(f"line {i}\n" for i in range(1000))
    cut = _cut(section, 500)
    assert len(cut) <= 500
    body, marker = cut.split("\n[harness files truncated: ", 1)
    assert section.startswith(body + "\n") and body.endswith(tuple("0123456789"))
    shown = int(marker.split(" of ")[0].replace(",", ""))
    assert shown == len(body) and f"{len(section):,} characters shown" in marker
