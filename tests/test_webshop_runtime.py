"""The WebShop episode loop: message layout and hook placement as Harness-R1's WebShop column."""
from __future__ import annotations

import asyncio
from typing import Any

from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.harness.patch import parse_patch
from harness_gym.models.base import ChatRequest
from harness_gym.benchmarks.webshop import episode as runtime
from harness_gym.runtime.hooks import HookRunner
from harness_gym.runtime.trajectory import COMPLETED, TASK_LIMIT_REACHED
from harness_gym.sandbox.pool import SandboxPool
from harness_gym.benchmarks.webshop.catalog import load_split
from harness_gym.benchmarks.webshop.world import WebShopWorld
from harness_gym.types import ToolCall, assistant_message

SPEC = get_benchmark("webshop")
TASK = load_split("test", None)[0]
CTX_FIELDS = {
    "action": {"tool", "value", "value_normalized", "final_action"},
    "state": {"page_type", "has_search_bar", "clickables", "buy_now_available", "back_to_search_count",
              "duplicate_search_count", "product_stall_turns", "same_click_count", "remaining_steps", "current_price", "price_max"},
    "task": {"task_type", "required_color", "required_size", "required_material"},
    "predicates": {"required_options_unselected", "product_price_over_budget", "same_click_repeated", "duplicate_search_repeated",
                   "search_loop_detected", "product_page_stalled", "buy_now_available", "search_not_available", "action_not_admissible"},
    "webshop": {"search_queries", "asins_visited", "current_asin", "selected_attributes", "attribute_options"},
}


class Scripted:
    def __init__(self, script: list[Any]) -> None:
        self.script, self.seen = list(script), []

    async def submit(self, request: ChatRequest) -> dict:
        self.seen.append(request)
        kind, arg = self.script.pop(0) if self.script else ("text", "hmm")
        if kind == "search":
            return assistant_message("", [ToolCall(f"c{len(self.seen)}", "search_action", {"keywords": arg}),
                                          ToolCall("x", "click_action", {"value": "ignored"})])
        if kind == "click":
            return assistant_message("", [ToolCall(f"c{len(self.seen)}", "click_action", {"value": arg})])
        return assistant_message(arg)


def run(script, patch: str | None = None):
    harness = SPEC.default_harness()
    if patch:
        harness = parse_patch(patch, harness).apply(harness)
    model = Scripted(script)

    async def go():
        pool = SandboxPool(workers=1)
        try:
            return await runtime.run_episode(TASK, WebShopWorld(), harness, HookRunner(harness, pool), model.submit, seed=0)
        finally:
            await pool.close()

    return asyncio.run(go()), model


def _to_target():
    g = TASK.goal
    return [("search", g["query"]), ("click", "__target__")]


def test_message_layout_text_only_and_first_call_only():
    res, model = run([("text", "thinking"), ("search", "hoodie"), ("click", "not-a-clickable")])
    m = res.messages
    assert m[0]["role"] == "system" and m[1]["content"].startswith("The initial observation:\nWebShop [SEP] Instruction:")
    assert "\n\nAvailable Actions:\n{'has_search_bar': True, 'clickables': ['search']}" in m[1]["content"]
    assert m[3] == {"role": "user", "content": "Observation:\nYou must call a tool! NEVER respond with only text.\n\nAvailable Actions:\n{'has_search_bar': True, 'clickables': ['search']}"}
    tool = m[5]
    assert tool["role"] == "tool" and tool["content"].startswith("Action: search[hoodie]\n\nObservation:\nInstruction:")
    assert [e["arguments"]["action"] for e in res.events if e["kind"] == "step"] == ["search[hoodie]", "click[not-a-clickable]"]
    assert res.status == TASK_LIMIT_REACHED and res.reward == 0 and len(model.seen) == 20
    # the last call id persists over later text-only turns, as in the original
    assert m[-1] == {"role": "tool", "tool_call_id": "c3", "content": "Task limit reached."}


BLOCK = '''def on_before_action(ctx, nb):
    nb["ctx"] = ctx
    if ctx["action"]["value_normalized"] == "buy now" and not nb.get("blocked"):
        nb["blocked"] = True
        return {"type": "block_and_prompt", "message": "BLOCKED: select options first."}
    if ctx["action"]["value_normalized"] == "pleasebuy":
        return {"type": "rewrite_action", "action": "buy now", "message": "REWRITTEN"}
    return None

def on_post_step(ctx, nb):
    if ctx["state"]["page_type"] == "product_detail" and not nb.get("hinted"):
        nb["hinted"] = True
        return {"type": "inject_hint", "message": "HINT after the step"}
    return None
'''


def _asin_script(extra):
    return [("search", TASK.goal["query"])] + extra


def test_block_rewrite_and_post_step_hint_order():
    # open the first result, buy (blocked), then rewrite "pleasebuy" into buy now
    world = WebShopWorld()
    world.reset(TASK)
    world.act("search[" + TASK.goal["query"] + "]")
    first = world.clickables()[2]
    res, _ = run(_asin_script([("click", first), ("click", "buy now"), ("click", "pleasebuy")]), BLOCK)
    roles = [(m["role"], (m.get("content") or "")[:20]) for m in res.messages]
    contents = [m.get("content") or "" for m in res.messages]
    i_hint = contents.index("HINT after the step")
    # the post-step hint sits before the next round's observation (the tool message)
    assert res.messages[i_hint - 1]["role"] == "assistant" and res.messages[i_hint + 1]["role"] == "tool"
    i_block = contents.index("BLOCKED: select options first.")
    assert res.messages[i_block - 1]["role"] == "assistant"
    after = res.messages[i_block + 1]
    assert after["role"] == "tool" and after["content"].startswith("Action: click[buy now]\n\nObservation:\nInstruction:")
    assert "Buy Now" in after["content"]  # the unchanged item page is shown again
    i_rw = contents.index("REWRITTEN")
    assert res.messages[i_rw - 1]["role"] == "assistant"
    steps = [e["arguments"]["action"] for e in res.events if e["kind"] == "step"]
    assert steps[-1] == "click[buy now]" and "click[pleasebuy]" not in steps
    assert res.status == COMPLETED and res.info["webshop_task_manifest"]["protocol"] == "webshop_task_manifest_v1"
    assert roles[0][0] == "system"


FORCE = '''def on_post_step(ctx, nb):
    if ctx["state"]["page_type"] == "product_detail":
        return {"type": "force_action", "action": "buy now", "message": "FORCED"}
    return None

def on_before_action(ctx, nb):
    if ctx["action"]["final_action"] == "click[buy now]":
        nb["saw_force"] = ctx["action"]["value"]
    return None
'''


def test_post_step_force_replaces_the_next_action():
    world = WebShopWorld()
    world.reset(TASK)
    world.act("search[" + TASK.goal["query"] + "]")
    first = world.clickables()[2]
    res, _ = run(_asin_script([("click", first), ("click", "description")]), FORCE)
    steps = [e["arguments"]["action"] for e in res.events if e["kind"] == "step"]
    assert steps[-1] == "click[buy now]" and res.status == COMPLETED
    assert "FORCED" in [m.get("content") for m in res.messages]


CTX = '''def on_before_action(ctx, nb):
    nb["n"] = nb.get("n", 0) + 1
    if nb["n"] == 2:
        keys = sorted(ctx["action"]) + ["|"] + sorted(ctx["state"]) + ["|"] + sorted(ctx["task"]) + ["|"] + sorted(ctx["predicates"]) + ["|"] + sorted(ctx["webshop"])
        return {"type": "block_and_prompt", "message": "KEYS " + " ".join(keys) + " PAGE " + ctx["state"]["page_type"] + " " + str(ctx["remaining_steps"])}
    return None
'''


def test_ctx_has_every_harness_r1_field():
    res, _ = run([("search", "hoodie"), ("click", "next >")], CTX)
    msg = next(m["content"] for m in res.messages if (m.get("content") or "").startswith("KEYS "))
    groups = msg[5:].split(" PAGE ")[0].split(" | ")
    for name, group in zip(("action", "state", "task", "predicates", "webshop"), groups):
        assert set(group.split()) == CTX_FIELDS[name], name
    assert msg.endswith("PAGE search_results 19")


_TWIN_MESSAGE = "That is not one of the clickables: click exactly one of the available values."
_TWIN_ODD = '''def odd(ctx):
    a, st = ctx["action"], ctx["state"]
    if a["tool"] == "search_action":
        return not st["has_search_bar"]
    return a["value_normalized"] not in [c.lower() for c in st["clickables"]]

'''
_TWIN_BLOCK = _TWIN_ODD + f'''def on_before_action(ctx, nb):
    if odd(ctx):
        return {{"type": "block_and_prompt", "message": {_TWIN_MESSAGE!r}}}
    return None
'''
_TWIN_HINT = _TWIN_ODD + f'''def on_before_action(ctx, nb):
    nb["odd"] = odd(ctx)
    return None

def on_post_step(ctx, nb):
    if nb.get("odd"):
        return {{"type": "inject_hint", "message": {_TWIN_MESSAGE!r}}}
    return None
'''


def test_the_sim_answers_what_the_model_sees_not_how_a_hook_made_it():
    """A block of an action the page does not offer, and the same action let run (the page does not change)
    followed by the block's words as a post-step hint, show the model the same conversation. A real target
    answers both alike, so the sim must too: it reads the transcript, never the hook's effect type (a sim told
    which messages were refusals, as one stop-34 attempt was, answered 91 of 300 such twins differently)."""
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.models.factory import make_backend

    tasks = SPEC.load_tasks("test", None)[:60]
    base = SPEC.default_harness()
    twins = [parse_patch(p, base).apply(base) for p in (_TWIN_BLOCK, _TWIN_HINT)]
    ev = Evaluator(SPEC, make_backend("sim"), world_backend="local")
    try:
        blocked, hinted = ev.evaluate_many(twins, tasks, list(range(len(tasks))))
    finally:
        ev.close()
    fired = [a for a in blocked if any(e.get("type") == "block_and_prompt" for e in a.events)]
    assert len(fired) >= 5, len(fired)  # the sim does click what is not there, now and then
    for a, b in zip(blocked, hinted):
        assert a.messages == b.messages and a.reward == b.reward, a.task_id
