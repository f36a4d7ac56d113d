"""ALFWorld as a registered benchmark (entry point ``alfworld``)."""
from __future__ import annotations

from harness_gym.benchmarks.api import SelectSpec
from harness_gym.benchmarks.builtin import ModuleBenchmark

SELECT = SelectSpec(
    signatures=("skip_transform", "wrong_receptacle", "retake_placed", "examine_instead", "not_opening",
                "substitute_object", "invalid_grammar"),
    signals=(("take_action_calls", 50), ("nothing_happens", 10), ("text_only_turns", 10), ("turns", 50)),
    # ``tasks.py:TASK_TYPES``
    kinds=(("pick_and_place", ("pick_and_place_simple",)), ("look_at_obj", ("look_at_obj_in_light",)),
           ("clean", ("pick_clean_then_place_in_recep",)), ("heat", ("pick_heat_then_place_in_recep",)),
           ("cool", ("pick_cool_then_place_in_recep",)), ("two_obj", ("pick_two_obj_and_place",)), ("other", ())),
)


class ALFWorld(ModuleBenchmark):
    name = "alfworld"
    display = "ALFWorld"

    def select(self) -> SelectSpec:
        return SELECT
