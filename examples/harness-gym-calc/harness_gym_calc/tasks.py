"""Conversion tasks: a value, two units and the decimals asked for, drawn by a seeded generator."""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from harness_gym.benchmarks.api import digest

# (from, to) -> (task type, exact formula, the rough rule of thumb an agent may remember instead)
CONVERSIONS = {
    ("mile", "kilometer"): ("length", "{x} * 1.609344", "{x} * 1.6"),
    ("foot", "meter"): ("length", "{x} * 0.3048", "{x} * 0.3"),
    ("inch", "centimeter"): ("length", "{x} * 2.54", "{x} * 2.5"),
    ("pound", "kilogram"): ("mass", "{x} * 0.45359237", "{x} * 0.45"),
    ("ounce", "gram"): ("mass", "{x} * 28.349523125", "{x} * 28"),
    ("gallon", "liter"): ("volume", "{x} * 3.785411784", "{x} * 3.8"),
    ("celsius", "fahrenheit"): ("temperature", "{x} * 1.8 + 32", "{x} * 2 + 30"),
    ("fahrenheit", "celsius"): ("temperature", "({x} - 32) / 1.8", "({x} - 30) / 2"),
}
SPLITS = {"train": (0, 120), "valid": (1, 60), "test": (2, 100)}  # split -> (generator seed, task count)


@dataclass(frozen=True)
class CalcTask:
    task_id: str
    task_type: str
    value: float
    from_unit: str
    to_unit: str
    decimals: int

    @property
    def question(self) -> str:
        return f"Convert {self.value:g} {self.from_unit} to {self.to_unit}. Answer with exactly {self.decimals} decimal places."

    @property
    def gold(self) -> str:
        """The reference answer; only the world and the sim target read it."""
        from harness_gym_calc.world import calculate

        return f"{float(calculate(CONVERSIONS[(self.from_unit, self.to_unit)][1].format(x=self.value))):.{self.decimals}f}"

    def identity(self) -> str:
        return digest({"benchmark": "calc", **asdict(self)})


def generate_split(split: str) -> list[CalcTask]:
    seed, count = SPLITS[split]
    rng = random.Random(f"calc:{seed}")  # all randomness from one seeded generator per split
    pairs, tasks = sorted(CONVERSIONS), []
    for i in range(count):
        src, dst = pairs[rng.randrange(len(pairs))]
        value = round(rng.uniform(3, 250), rng.choice((0, 1, 2)))
        tasks.append(CalcTask(f"calc-{split}:{i}", CONVERSIONS[(src, dst)][0], value, src, dst, rng.choice((1, 2, 3))))
    return tasks
