"""Co-Harness: critic attribution, local diffs, two-set acceptance, rollback, the policy, SFT."""
from __future__ import annotations

import importlib
import importlib.util
import json
import re

import gymnasium as gym
import pytest
from support import unavailable

import harness_gym  # noqa: F401 - registers the env ids
from baselines.base import PolicyInput
from baselines.co_harness import (
    CoHarnessPolicy,
    RuleCritic,
    make_critic,
    run_co_harness,
)
from baselines.co_harness import loop as co_loop
from baselines.co_harness.critic import ModelCritic, parse_model_attributions
from baselines.co_harness.edits import candidate, make_diff
from baselines.co_harness.propose import (
    files_from_observation,
    harness_for_packet,
    propose_candidates,
)
from baselines.co_harness.rules import rules_for
from harness_gym.errors import ConfigError
from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.harness.files import Harness
from harness_gym.harness.patch import parse_patch
from harness_gym.harness.registry import ACCEPTED, REJECTED, ROLLED_BACK

ENV = "HarnessEdit-DBBench-v0"


def _trace(i, lines, task_type="other", status="completed", **signals):
    base = {"sql_calls": 1, "commits": 1, "text_only_turns": 0, "error_results": 0, "empty_results": 0, "max_same_sql": 1}
    return {"task_id": f"t{i}", "index": i, "status": status, "reward": 0.0, "turns": 3, "messages": lines,
            "signals": {**base, **signals}, "task_type": task_type}


def _sql(q):
    return "ASSISTANT_TOOL execute_sql: " + json.dumps({"query": q})


def _commit(a):
    return "ASSISTANT_TOOL commit_final_answer: " + json.dumps({"answers": a})


PACKET = {"benchmark": "dbbench", "failures": [
    _trace(0, [_sql("SELECT a b FROM t t"), 'TOOL_RESULT: near "b": syntax error', _commit([])]),
    _trace(1, [_commit(["12"])]),
    _trace(2, [_sql("SELECT `x` FROM `t`"), "TOOL_RESULT: [('Paris',)]", _commit(["The answer is Paris city"])]),
    _trace(3, [_sql("UPDATE t SET a = 1"), 'TOOL_RESULT: near "t": syntax error'] * 5, task_type="UPDATE",
           status="task_limit_reached", max_same_sql=5, error_results=5),
    _trace(4, [_sql("SELECT `x` FROM `t`"), "TOOL_RESULT: [('a',)]", _commit(["a"])]),
]}


def test_rule_critic_attributes_each_failure():
    atts = RuleCritic().attribute(PACKET)
    assert [a.category for a in atts] == ["tool_schema_error", "middleware_mismatch", "prompt_ambiguity",
                                          "tool_schema_error", "agent_error"]
    assert "skill_missing" in atts[0].secondary
    assert "memory_overflow" in atts[3].secondary  # the long identical loop
    assert atts[4].signatures == () and "no harness signature" in atts[4].reason


@pytest.mark.parametrize("bench", ["dbbench", "webshop", "alfworld"])
def test_every_fix_is_a_unified_diff_the_project_parser_applies(bench):
    h = get_benchmark(bench).default_harness()
    for fix in rules_for(bench).fixes():
        c = candidate(h, fix)
        assert c is not None, fix.key
        assert c.diff.startswith("--- ") and "\n@@ " in c.diff
        patch = parse_patch(c.diff, h)
        assert patch.kind == "diff" and patch.apply(h).version == c.harness.version
        changed = [p for p, _ in patch.changes]
        assert len(changed) == 1  # local: one file per fix
        assert candidate(c.harness, fix) is None  # idempotent: applying twice changes nothing more
    table = rules_for(bench)
    primary = dict(table.rules)
    for fix in table.fixes():  # every fix answers a signature of the table, in its category or a secondary one
        assert fix.category == primary[fix.key] or fix.category in table.also.get(fix.key, ()), (fix.category, fix.key)
    answered = {f.key for f in table.fixes()}
    assert {sig for sig, cat in table.rules if cat != "agent_error"} <= answered


def test_make_diff_handles_new_files_and_missing_final_newline():
    old = {"a.md": "x\ny", "b.md": "keep\n"}
    new = {"a.md": "x\nz", "b.md": "keep\n", "hooks/01_on_init.py": "def hook(ctx, nb):\n    return None\n"}
    diff = make_diff(old, new)
    assert "\\ No newline at end of file" in diff and "--- /dev/null" in diff
    h = Harness("dbbench", old)
    assert dict(parse_patch(diff, h).apply(h).files) == new


def test_model_critic_reads_a_backend_reply_and_falls_back_to_rules():
    class Stub:
        async def generate(self, requests):
            return [{"role": "assistant", "content": 'x {"attributions": [{"index": 4, "category": "skill_missing",'
                     ' "reason": "r"}, {"index": 0, "category": "bogus"}]}'}]

    atts = ModelCritic("stub", backend=Stub()).attribute(PACKET)
    assert atts[4].category == "skill_missing" and atts[4].reason == "model: r"
    assert atts[0].category == "tool_schema_error"  # invalid category in the reply: rules decide
    assert parse_model_attributions("no json") == {}
    with pytest.raises(ConfigError, match="model:<target string>"):
        make_critic("gpt")


def _run(**kw):
    return run_co_harness(ENV, rounds=2, iterations_per_round=3, seed=0, heldout_batch_size=10, log=None, **kw)


def test_loop_accepts_only_on_both_sets_and_is_deterministic(tmp_path):
    res = _run(registry_path=tmp_path / "reg.jsonl")
    reg = res.registry
    accepted = reg.versions(ACCEPTED)
    assert accepted, "the sim's commit-before-mutation failures should yield one accepted middleware diff"
    for rec in accepted:
        assert rec.evidence["delta_in"] > 0 and rec.evidence["delta_out"] >= 0 and rec.diff.startswith("--- ")
    rejected = reg.versions(REJECTED)
    assert rejected and all(r.evidence["delta_in"] <= 0 or r.evidence["delta_out"] < 0 for r in rejected
                            if r.evidence.get("complete", True))
    assert reg.lineage(reg.head)[-1] == reg.head and reg.lineage(reg.head)[0] == get_benchmark("dbbench").default_harness().version
    skipped = [row for row in res.log if row["event"] == "alignment"]
    assert len(skipped) == 2 and all(row["skipped"] and "has no weights" in row["reason"] for row in skipped)
    iters = [row for row in res.log if row["event"] == "iteration"]
    assert all({"delta_in", "delta_out", "reason"} <= set(c) for row in iters for c in row["candidates"])
    again = _run()
    assert again.registry.digest() == reg.digest()


def test_loop_rolls_back_a_version_that_regresses_on_fresh_tasks(monkeypatch):
    monkeypatch.setattr(co_loop, "fresh_delta", lambda env, base, cand: -0.1)
    res = _run()
    rolled = res.registry.versions(ROLLED_BACK)
    assert rolled, "round 1's recheck must roll back round 0's accepted version"
    assert any(row["event"] == "rollback" for row in res.log)
    assert res.registry.head not in [r.version for r in rolled]


def test_policy_writes_one_valid_diff_per_packet_including_on_an_edited_base():
    env = gym.make(ENV, max_edits=3)
    try:
        obs, info = env.reset(seed=0)
        pol = CoHarnessPolicy()
        patch = pol.propose([PolicyInput(obs, info["packet"], "dbbench")])[0][0]
        assert patch.startswith("--- ")
        obs2, reward, _, _, sinfo = env.step(patch)
        assert sinfo["patch_valid"] and sinfo["patch_kind"] == "diff" and reward >= 0
        # second packet is under the edited harness: the policy rebuilds it from the observation
        p2 = PolicyInput(obs2, sinfo["packet"], "dbbench")
        assert harness_for_packet(p2).version == sinfo["harness_version"]
        assert files_from_observation(obs2)
        patch2 = pol.propose([p2])[0][0]
        _, _, _, _, sinfo2 = env.step(patch2)
        assert sinfo2["patch_valid"], sinfo2["patch_error"]
    finally:
        env.close()


def _tiny_builder():
    if importlib.util.find_spec("harness_gym.models.tiny") is None:
        return None
    return getattr(importlib.import_module("harness_gym.models.tiny"), "build_tiny_model", None)


def test_sft_step_trains_a_tiny_model_and_returns_a_new_target(tmp_path):
    missing = [m for m in ("torch", "transformers", "trl", "datasets") if importlib.util.find_spec(m) is None]
    build = _tiny_builder()
    if build is None:
        missing.append("harness_gym.models.tiny.build_tiny_model")
    if missing:
        unavailable(f"the alignment phase's dependencies {missing}", "not installed: pip install trl datasets")
    from baselines.co_harness.align import AlignConfig, sft_step

    model_dir = build(tmp_path / "tiny", steps=2)
    rows = [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                          {"role": "assistant", "content": "a"}], "tools": []}] * 4
    new = sft_step(f"hf:{model_dir}", rows, AlignConfig(output_dir=str(tmp_path / "sft"), max_steps=2, batch_size=2,
                                                        max_length=64))
    assert new.startswith("hf:") and new != f"hf:{model_dir}"
    assert (tmp_path / "sft" / "round0" / "config.json").exists()


# ----------------------------------------------------------------------------- WebShop and ALFWorld rules

WS_INSTRUCTION = "i need a wool sweater in navy color and in size large, and price lower than 50.00 dollars"
NAV = ["back to search", "< prev", "description", "features", "reviews", "buy now"]


def _ws_obs(body, clickables):
    return f"OBSERVATION: Observation: Instruction: [SEP] {WS_INSTRUCTION} [SEP] {body} Available Actions: " + str(
        {"has_search_bar": False, "clickables": clickables})


def _ws_click(value):
    return "ASSISTANT_TOOL: click_action " + json.dumps({"value": value})


WS_RESULTS = _ws_obs("Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] [PRODUCT_ID] [SEP] Lana Wool "
                     "Sweater - Warm Knit [SEP] $30.00 [SEP] [PRODUCT_ID] [SEP] Tono Cotton Shirt - Slim Fit [SEP] $20.00",
                     ["back to search", "next >", "[PRODUCT_ID]", "[PRODUCT_ID]"])


def _ws_product(title="Lana Wool Sweater - Warm Knit", price="30.00"):
    return _ws_obs(f"Back to Search [SEP] < Prev [SEP] color [SEP] navy [SEP] red [SEP] size [SEP] medium [SEP] large "
                   f"[SEP] {title} [SEP] Price: ${price} [SEP] Rating: 4.2 [SEP] Description [SEP] Features [SEP] "
                   "Reviews [SEP] Buy Now", NAV + ["navy", "red", "medium", "large"])


def _ws_trace(i, clicks_after_open, product=None, **signals):
    first = (f"OBSERVATION: The initial observation: WebShop [SEP] Instruction: [SEP] {WS_INSTRUCTION} [SEP] Search "
             "Available Actions: {'has_search_bar': True, 'clickables': ['search']}")
    lines = [first,
             'ASSISTANT_TOOL: search_action {"keywords": "wool sweater"}', WS_RESULTS, _ws_click("[PRODUCT_ID]"),
             product or _ws_product()]
    for v in clicks_after_open:
        lines += [_ws_click(v), product or _ws_product()]
    base = {"total_actions": 5, "searches": 1, "clicks": 4, "buy_now": 1, "text_only_turns": 0, "repeated": "none",
            "task_limit_reached": False}
    return {"task_id": f"g{i}", "index": i, "status": "completed", "reward": 0.5, "turns": 5, "messages": lines,
            "signals": {**base, **signals}, "task_type": "apparel"}


WS_PACKET = {"benchmark": "webshop", "failures": [
    _ws_trace(0, ["navy", "buy now"]),                                       # size group left unselected
    _ws_trace(1, ["navy", "large", "buy now"], _ws_product(price="80.00")),   # over the 50-dollar bound
    {**_ws_trace(2, ["navy", "large", "buy now"]), "messages": _ws_trace(2, [])["messages"][:3] + [
        _ws_click("Lana Wool Sweater - Warm Knit"), WS_RESULTS]},            # clicked a title, not a clickable
    _ws_trace(3, ["navy", "large", "buy now"], repeated="search[wool sweater] x4"),
    _ws_trace(4, ["navy", "medium", "buy now"]),                             # neighbouring size: a misread
    _ws_trace(5, ["navy", "large", "buy now"], _ws_product(title="Tono Cotton Shirt - Slim Fit")),
]}


def test_webshop_critic_attributes_the_characteristic_failures():
    atts = RuleCritic().attribute(WS_PACKET)
    got = [(a.category, a.signatures) for a in atts]
    assert got[0] == ("middleware_mismatch", ("buy_without_options",)) and atts[0].secondary == ("skill_missing",)
    assert got[1] == ("middleware_mismatch", ("over_budget",)) and atts[1].secondary == ("prompt_ambiguity",)
    assert got[2] == ("tool_schema_error", ("invalid_click",)) and atts[2].secondary == ("middleware_mismatch",)
    assert got[3][0] == "memory_overflow" and "search_loop" in got[3][1]
    assert got[4] == ("agent_error", ("wrong_option",)) and "intrinsic" in atts[4].reason
    assert got[5] == ("prompt_ambiguity", ("title_mismatch",))


def _alf_trace(i, goal, steps, texts=(), task_type="pick_heat_then_place_in_recep"):
    lines = [("USER: Here is your task. You are in the middle of a room. Looking quickly around you, you see a "
              f"cabinet 1, a countertop 1, a microwave 1, and a sinkbasin 1. Your task is to: {goal}. AVAILABLE "
              "ACTIONS: look")]
    for act, obs in steps:
        lines += ["ASSISTANT_TOOL: take_action " + json.dumps({"action": act}), f"OBSERVATION: {obs} AVAILABLE ACTIONS: look"]
    lines += [f"ASSISTANT_TEXT: {t}" for t in texts]
    signals = {"take_action_calls": len(steps), "nothing_happens": 0, "text_only_turns": len(texts),
               "repeated_actions": "none", "repeated_observations": "none"}
    return {"task_id": f"a{i}", "index": i, "status": "agent_invalid_action", "reward": 0.0, "turns": len(steps),
            "messages": lines, "signals": signals, "task_type": task_type}


TAKE_APPLE = ("take apple 1 from countertop 1", "You pick up the apple 1 from the countertop 1.")
PUT_APPLE = ("put apple 1 in/on countertop 1", "You put the apple 1 in/on the countertop 1.")
HEAT = ("heat apple 1 with microwave 1", "You heat the apple 1 using the microwave 1.")
DONE = ["I have completed the task."] * 3
ALF_PACKET = {"benchmark": "alfworld", "failures": [
    _alf_trace(0, "put a hot apple in countertop", [TAKE_APPLE, PUT_APPLE], DONE),
    _alf_trace(1, "put a hot apple in countertop", [("take tomato 1 from countertop 1",
                                                     "You pick up the tomato 1 from the countertop 1.")]),
    _alf_trace(2, "put two apple in countertop", [TAKE_APPLE, PUT_APPLE, TAKE_APPLE], task_type="pick_two_obj_and_place"),
    _alf_trace(3, "put a apple in countertop", [TAKE_APPLE, ("put apple 1 on countertop 1", "Nothing happens.")],
               task_type="pick_and_place_simple"),
    _alf_trace(4, "put a apple in countertop", [TAKE_APPLE], DONE, task_type="pick_and_place_simple"),
    _alf_trace(5, "put a hot apple in countertop", [TAKE_APPLE, HEAT, HEAT, HEAT]),
]}


def test_alfworld_critic_attributes_the_characteristic_failures():
    atts = RuleCritic().attribute(ALF_PACKET)
    got = [(a.category, a.signatures) for a in atts]
    assert got[0] == ("skill_missing", ("skip_transform",)) and atts[0].secondary == ("middleware_mismatch",)
    assert got[1] == ("middleware_mismatch", ("substitute_object",)) and atts[1].secondary == ("prompt_ambiguity",)
    assert got[2] == ("memory_overflow", ("retake_placed",)) and atts[2].secondary == ("middleware_mismatch",)
    assert got[3] == ("middleware_mismatch", ("invalid_grammar",)) and atts[3].secondary == ("tool_schema_error",)
    assert got[4] == ("agent_error", ("premature_done",))
    assert got[5][0] == "memory_overflow" and "transform_loop" in got[5][1]


@pytest.mark.parametrize(("packet", "trace", "expected"), [
    (WS_PACKET, 1, ["middleware_mismatch/over_budget", "prompt_ambiguity/over_budget"]),
    (ALF_PACKET, 0, ["skill_missing/skip_transform", "middleware_mismatch/skip_transform"]),
])
def test_proposals_follow_the_observed_signature(packet, trace, expected):
    """Only the fixes for what the packet shows are proposed, primary category first."""
    bench = packet["benchmark"]
    one = {"benchmark": bench, "failures": [packet["failures"][trace]]}
    cands = propose_candidates(get_benchmark(bench).default_harness(), RuleCritic().attribute(one))
    assert [f"{c.category}/{c.key}" for c in cands] == expected


# (env id, seed of a batch of 10 whose packet shows the failure, category that must be accepted)
LOOP_CASES = [("HarnessEdit-WebShop-v0", 1, "middleware_mismatch"), ("HarnessEdit-ALFWorld-v0", 4, "skill_missing")]


@pytest.mark.parametrize(("env_id", "seed", "category"), LOOP_CASES)
def test_loop_accepts_a_benchmark_specific_fix_on_a_small_batch(env_id, seed, category):
    res = run_co_harness(env_id, rounds=1, iterations_per_round=2, seed=seed, heldout_batch_size=10, log=None,
                         env_kwargs={"batch_size": 10})
    own = {f.description for f in rules_for(res.head.benchmark).fixes()}
    accepted = res.registry.versions(ACCEPTED)
    assert any(r.category == category for r in accepted), [(r.category, r.description) for r in accepted]
    for rec in accepted:
        assert rec.evidence["delta_in"] > 0 and rec.evidence["delta_out"] >= 0
        assert rec.description in own  # a WebShop/ALFWorld rule's edit, not a generic one
    first = res.log[1]
    assert first["event"] == "iteration" and first["attributions"].get(category, 0) > 0


def test_policy_gains_on_alfworld():
    env = gym.make("HarnessEdit-ALFWorld-v0")
    try:
        obs, info = env.reset(seed=4)
        patch = CoHarnessPolicy().propose([PolicyInput(obs, info["packet"], "alfworld")])[0][0]
        assert patch.startswith("--- ")
        _, reward, _, _, sinfo = env.step(patch)
        assert sinfo["patch_valid"], sinfo["patch_error"]
        assert reward > 0.05
    finally:
        env.close()


def _without_file(diff: str, path: str) -> str:
    """``diff`` with the sections that edit ``path`` dropped."""
    sections = re.split(r"(?m)^(?=--- )", diff)
    return "".join(s for s in sections if s and f"+++ b/{path}" not in s)


def test_policy_prompt_rewrite_costs_more_than_the_hooks_alone_on_the_calibrated_webshop_sim():
    """The WebShop sim charges for text as the real WebShop target does (docs/agreement_smol.md): the same
    co-harness patch without its rewrite of the system prompt's trained rules does better than with it.
    (Whether the whole patch gains is the sim's call per batch: on the real target co-harness's patches
    gained +0.02…+0.06 Δ success over nine batches.)"""
    env = gym.make("HarnessEdit-WebShop-v0")
    try:
        obs, info = env.reset(seed=1)
        patch = CoHarnessPolicy().propose([PolicyInput(obs, info["packet"], "webshop")])[0][0]
        hooks_only = _without_file(patch, "system_prompt.md")
        assert "+++ b/system_prompt.md" in patch and "+++ b/system_prompt.md" not in hooks_only
        assert "+++ b/hooks/" in hooks_only
        env.reset(seed=1)
        _, full, _, _, sinfo = env.step(patch)
        env.reset(seed=1)
        _, lean, _, _, linfo = env.step(hooks_only)
        assert sinfo["patch_valid"] and linfo["patch_valid"], (sinfo["patch_error"], linfo["patch_error"])
        assert lean > full, (full, lean)
    finally:
        env.close()


# signature -> sim flaws it may stand for (the sims' seeded catalogues, docs/sim_webshop.md, docs/sim_alfworld.md)
FLAWS_OF = {
    "webshop": {"buy_without_options": {"skip_options"}, "over_budget": {"over_budget"},
                "invalid_click": {"invalid_click"}, "search_loop": {"search_loop"}, "repeat_click": {"repeat_click"},
                "stall": {"stall"}, "wrong_option": {"wrong_option"}},
    "alfworld": {"skip_transform": {"skip_transform"}, "substitute_object": {"substitute_object"},
                 "retake_placed": {"retake_placed"}, "not_opening": {"not_opening"},
                 "examine_instead": {"examine_instead", "misread_goal"}, "transform_loop": {"transform_loop"},
                 "idle_look": {"poor_search"}},
}


@pytest.mark.parametrize(("env_id", "bench"), [("HarnessEdit-WebShop-v0", "webshop"), ("HarnessEdit-ALFWorld-v0", "alfworld")])
def test_signatures_agree_with_the_sims_drawn_flaws(env_id, bench):
    """Reference check: on real sim packets, a signature points at a flaw the sim actually drew."""
    persona = importlib.import_module(f"harness_gym.benchmarks.{bench}.sim").Persona
    env = gym.make(env_id)
    hits = total = 0
    try:
        for seed in range(4):
            _, info = env.reset(seed=seed)
            u = env.unwrapped
            for att in RuleCritic().attribute(info["packet"]):
                flaws = persona.draw(u._batch[att.index], u._seeds[att.index]).flaws
                for sig in att.signatures:
                    if sig in FLAWS_OF[bench]:
                        total += 1
                        hits += bool(FLAWS_OF[bench][sig] & flaws)
    finally:
        env.close()
    assert total >= 10 and hits / total >= 0.9, (hits, total)


def test_policy_edits_an_edited_alfworld_harness_again():
    """The second packet comes from a harness with co-harness hook files; the policy rebuilds it
    from the observation and its next diff applies on top."""
    env = gym.make("HarnessEdit-ALFWorld-v0", max_edits=3)
    try:
        obs, info = env.reset(seed=4)
        pol = CoHarnessPolicy()
        obs2, _, _, _, sinfo = env.step(pol.propose([PolicyInput(obs, info["packet"], "alfworld")])[0][0])
        assert any(q.startswith("hooks/") for q in env.unwrapped._base.files)
        p2 = PolicyInput(obs2, sinfo["packet"], "alfworld")
        assert harness_for_packet(p2).version == sinfo["harness_version"]
        _, _, _, _, sinfo2 = env.step(pol.propose([p2])[0][0])
        assert sinfo2["patch_valid"], sinfo2["patch_error"]
    finally:
        env.close()
