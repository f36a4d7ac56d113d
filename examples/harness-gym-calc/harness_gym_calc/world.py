"""The calculator world: look up a conversion, evaluate arithmetic, submit the answer (scored exactly)."""
from __future__ import annotations

import ast
import operator
from typing import Any

from harness_gym.benchmarks.api import StepResult, ToolCall, World
from harness_gym_calc.tasks import CONVERSIONS

_OPS: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                         ast.Div: operator.truediv, ast.USub: operator.neg, ast.UAdd: operator.pos}


def calculate(expression: str) -> str:
    """Arithmetic on numbers with + - * / and parentheses, by walking its AST (nothing is executed)."""
    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return float(_OPS[type(node.op)](value(node.left), value(node.right)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return float(_OPS[type(node.op)](value(node.operand)))
        raise ValueError("only numbers, + - * / and parentheses are allowed")

    if len(expression) > 200:
        raise ValueError("expression longer than 200 characters")
    return f"{value(ast.parse(expression.strip(), mode='eval').body):.10g}"


class CalcWorld(World):
    def reset(self, task: Any) -> str:
        self.task, self.answer = task, None
        return task.question

    def step(self, call: ToolCall) -> StepResult:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        if call.name == "lookup_factor":
            pair = (str(args.get("from_unit", "")).lower().strip(), str(args.get("to_unit", "")).lower().strip())
            if pair not in CONVERSIONS:
                return StepResult(f"No conversion from {pair[0]!r} to {pair[1]!r}.")
            return StepResult(f"{pair[1]} = {CONVERSIONS[pair][1].format(x=pair[0])}")
        if call.name == "calculate":
            try:
                return StepResult(calculate(str(args.get("expression", ""))))
            except (ValueError, SyntaxError, ZeroDivisionError, OverflowError) as exc:
                return StepResult(f"Error: {exc}")
        if call.name == "submit_answer":
            self.answer = str(args.get("answer", "")).strip()
            return StepResult("Answer submitted.", done=True)
        return StepResult(f"Error: unknown tool {call.name!r}; use lookup_factor, calculate or submit_answer.")

    @property
    def score(self) -> float:
        return 1.0 if self.answer is not None and self.answer == self.task.gold else 0.0
