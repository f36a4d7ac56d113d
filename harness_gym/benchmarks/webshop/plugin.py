"""WebShop as a registered benchmark (entry point ``webshop``)."""
from __future__ import annotations

from harness_gym.benchmarks.api import SelectSpec
from harness_gym.benchmarks.builtin import ModuleBenchmark

SELECT = SelectSpec(
    signatures=("buy_without_options", "over_budget", "invalid_click", "search_loop", "repeat_click", "stall",
                "text_only"),
    signals=(("total_actions", 20), ("searches", 10), ("clicks", 20), ("buy_now", 3), ("text_only_turns", 10),
             ("task_limit_reached", 1), ("reward", 1)),
    # the product categories of ``tasks.py`` (``general`` and any other: "other")
    kinds=(("apparel", ("apparel",)), ("beauty", ("beauty",)), ("food", ("food",)), ("tech", ("tech",)),
           ("home", ("home",)), ("other", ())),
)


class WebShop(ModuleBenchmark):
    name = "webshop"
    display = "WebShop"

    def select(self) -> SelectSpec:
        return SELECT
