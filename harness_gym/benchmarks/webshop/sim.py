"""The simulated WebShop target: a competent shopper with a seeded catalogue of flaws.

It reads the conversation like an LLM (observations, available actions, hints, blocks) and
answers with one structured ``search_action``/``click_action`` call through the same
runtime path a real model uses. Its knowledge is the task's goal (target product,
attributes, options, price bound) and the catalogue; its failures come from the flaws
below, drawn per episode from (task identity, episode seed) so baseline and patched runs
are paired. See ``docs/sim_webshop.md`` for the catalogue of flaws, which hook fixes each,
and how the sim reacts to blocks, rewrites and hints.
"""
from __future__ import annotations

import ast
import hashlib
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from rapidfuzz import fuzz

from harness_gym.models.base import ChatRequest
from harness_gym.benchmarks.sim_reading import (
    Advice,
    TextCost,
    blank,
    clause_without,
    discourages,
    draw_against,
    is_notice,
    mentions,
    own_words,
    unnegated,
    vocabulary,
)
from harness_gym.benchmarks.webshop.catalog import Catalogue, get_catalog
from harness_gym.benchmarks.webshop.products import Product
from harness_gym.benchmarks.webshop.reward import goal_option_values
from harness_gym.benchmarks.webshop.tasks import WebShopTask
from harness_gym.types import Message, ToolCall, assistant_message

CONCEPTS: dict[str, re.Pattern[str]] = {
    "select_options": re.compile(r"(select|choose|pick|click)\w*\b.{0,40}\b(option|colou?r|size|attribute|variant|flavor|scent)s?\b|required (option|attribute)|unselected|before (buying|you buy|buy now|purchas)|(select|choose|pick|click)\w* .{0,60}\b(before|then) .{0,25}\b(buy|purchas)", re.IGNORECASE),
    "budget": re.compile(r"budget|too expensive|cheaper|over (the )?(price|limit)|price (limit|bound|cap)|costs? more than|exceeds? the price|above (the |your )?(limit|price|maximum)|price .{0,20}(above|over|higher than) ", re.IGNORECASE),
    "search_loop": re.compile(r"same (search|query|keywords)|search\w* (again|repeatedly|many times|several times)|stop searching|(different|simpler) (keywords|query)|search loop", re.IGNORECASE),
    "stall": re.compile(r"\bstuck\b|too long|make a decision|decide (now)?|stalled|stop browsing|(go ahead and|just) (buy|click .?buy now)|do not keep (reading|browsing)", re.IGNORECASE),
    "exact_click": re.compile(r"exact(ly)?\b.{0,40}\b(clickable|available|value)|available (actions|clickables)|not (a )?clickable|(valid|product) (click )?(id|value)s?\b|one of the clickables", re.IGNORECASE),
    "repeat_click": re.compile(r"already (clicked|selected)|same (click|option|button)|clicked .{0,30} again|repeat\w* (click|the same)", re.IGNORECASE),
    "match_title": re.compile(r"title|all (the )?key terms|match\w* (all|every|the) (requirement|attribute|term)s?", re.IGNORECASE),
}

# a clause with no negation nor condition before the point: "if it costs more, pick another" is for the budget, "it
# is pointless to read every review" for deciding
_UNNEGATED = unnegated("if", "when", "whenever", "unless", "pointless", "useless", "needless", "unnecessary")
# ... with no condition before the point: "once it matches, don't decide yet" refuses nothing for good
_UNCONDITIONED = clause_without("if", "when", "whenever", "unless", "once", "after", "until")
# an order: at a clause's start, perhaps after "always", "just", "now", "then" or "so"
_ORDER = r"(?:(?<![^.;:!?\n,\u2014-])|[:,\u2014-]|\b(?:and|then|so) )\s*(?:(?:always|just|now|then|so|also) )*"
# an option it has selected
_SELECTED = (r"(same|last|previous|selected|already selected) (options?|values?|sizes?|colou?rs?|buttons?|selections?|"
             r"clicks?)\b")
# a sentence about this product: "on each new product page, redo the same selections" is about the next one
_ON_THIS_PRODUCT = unnegated(absent=r"\b(?:next|new|another|other|each|every) (?:product|item|page)s?\b")
# ... that nothing later in its clause makes a condition, a reason against, another product or an answer "no"
_UNQUALIFIED = (r"(?![^.;!?\n]*\b(?:until|unless|only|if|when|once|waste\w*|nothing|next|new|another|other|each "
                r"product)\b)(?![^.;!\n]*\?\s*(?:no|never|nope)\b)")
# a verb another one stops is no instruction to do it: "stop paying more than the budget"
_VERB = r"\b(?<!stop )(?<!quit )(?<!stopped )"
# ... and none between the verb and what it prefers: "take the cheaper one, not the more expensive one", "pick another
# item if this one costs more" are for it
_BETWEEN = (r"(?:(?!\b(?:never|not|no|don't|without|rather|instead|than|over|cheap\w*|less|lower|if|when|whenever|"
            r"unless|another|other)\b)[^.;!?\n]){0,30}")
# Instructions against a concept: never help for it, and followed as harm (sim_reading, "Advice works both ways")
AGAINST: dict[str, re.Pattern[str]] = {
    "select_options": discourages(r"\b(options?|sizes?|colou?rs?|variants?|attributes?|groups?)\b"),
    # the price itself ignored or exceeded (not "ignore products over the budget": what is ignored is the product),
    # or the pricier product preferred; "pay more attention" is no overspending (review of stop 52)
    "budget": re.compile(
        _UNNEGATED + r"(" + _VERB + r"(ignore|disregard|forget|never mind|(don't|do not) (worry|care) about)\s+(about )?"
        r"(the |your |any |all |its |this |that )?(price|budget|cost)|" + _VERB + r"(exceed\w*|overspend\w*|blow\w*|"
        r"go(ing)? (over|above|beyond))\s+(the |your |its )?(budget|price|limit|bound|cap)|" + _VERB + r"(prefer|choose|"
        r"pick|buy|take|select|go for|get|purchase|opt for|favou?r)\w*\b" + _BETWEEN + r"\b(costs? more|(more|most) "
        r"expensive|expensive (one|item|product|option)s?|pricier|priciest|higher[- ]priced?|premium|(above|over|"
        r"beyond) (the |your |its )?(budget|price|limit|bound|cap|\$))|" + _VERB + r"(spend|pay)\w*\b" + _BETWEEN + r"\bmore\b"
        r"(?!\s+(attention|time|care|effort|thought|heed|carefully|closely)))|\bnever (stay|keep|remain)\w*\s+(within|"
        r"under|below|in)\b[^.;!?\n]{0,15}\b(budget|price|limit|bound)|\b(no (point|sense|use) in|no (need|reason) to|"
        r"skip\w*|pay no attention to)\s+(check\w*|respect\w*|stay\w* (within|under|below|in)|mind\w*|watch\w*|"
        r"think\w* about)?\s*(the |your |any |its )?(budget|price (limit|bound|cap))\b", re.I),
    # against deciding at all, said as an order that ends its clause ("never decide now", "don't commit to a
    # product;", "do not decide yet - go back"; not "never decide on a product over the budget"), or to keep browsing
    # or read every tab or review, said as an order that starts its clause ("keep browsing:", not "users who keep
    # browsing run out of turns", "read every tab? No") with no condition after it: followed, it reads each tab once
    # (``stalls``; review of stop 52: "Never decide now: click < prev" was stall help)
    "stall": re.compile(
        _UNCONDITIONED + r"(?<!not )(?<!n't )\b(never|don't|do not|no need to|not necessary to|no reason to|no point in)"
        r"\s+((make|take) (a|any) )?(decid\w*|decisions?|commit\w*( to (a|any|the) (product|item|purchase))?)( (now|"
        r"yet|at all|ever|anymore))?\s*(?=[.;:!?\n,\u2014-]|$)|" + _UNNEGATED + _ORDER + r"((keep|continue) (on )?"
        r"(browsing|reading|scrolling)\s*(?=[.,;:!\n]|$)|(keep|continue) (on )?(browsing|reading|checking|opening) (the |"
        r"every |each |all (the )?)?(tabs?|reviews?|descriptions?|features|product pages?)\b|read (every|each|all)( of)?"
        r"( the)? (tabs?|reviews?)\b)" + _UNQUALIFIED, re.I),
    # to click an option it has selected again, said as an order that starts its clause, on this product: followed, it
    # clicks it once more (``repeats``; "click buy now again" after a refusal, "repeat it for each option group", "clicking the
    # same option again wastes a turn", "pick the same size again on the next product" are no such order)
    "repeat_click": re.compile(
        _ON_THIS_PRODUCT + _ORDER + r"((repeat|redo)\w* (the |your |that )?(same|last|previous) (clicks?|options?|"
        r"selections?)\b|(click|select|press|pick|choose|hit|tap|re-?click|reselect)\w* (on )?(the |that |this |your )?"
        + _SELECTED + r" (again|twice|repeatedly|once more|more than once|several times|many times)\b|(re-?click|"
        r"reselect)\w* (the |that |your )?" + _SELECTED + r"|keep (re-?)?(clicking|selecting|pressing) (the )?(same|"
        r"selected)\b)" + _UNQUALIFIED, re.I),
}
# drawn in this order: the draws of concepts added later come after every earlier draw (``Persona.draw``)
AGAINST_DRAWS = (("select_options", "budget"), ("stall", "repeat_click"))

# skip_options 0.06 (was 0.18): the real WebShop target rarely buys with a required option unselected
# (the example buy guard, which blocks only that, fixed 2 of 100 real tasks) and its baseline is 45.5%
# of the 200 test tasks, where 0.18 gave the sim 38.5% and 0.06 gives 45.0% (docs/agreement_smol.md).
# wrong_option 0.40, near_miss 0.12 (0.18 and 0.30 before stop 33): 11 of the real target's 34 purchases in
# batches 5-8 had an option value the instruction does not name (the sim at 0.18: 3 of 35), and only 2 of its
# 12 failed purchases failed otherwise (a wrong product); the pair keeps the split's baseline at 45.0%.
FLAWS = {"skip_options": 0.06, "over_budget": 0.12, "near_miss": 0.12, "search_loop": 0.12, "stall": 0.09,
         "repeat_click": 0.06, "invalid_click": 0.08, "text_only": 0.06, "wrong_option": 0.40}
VOCAB = vocabulary(CONCEPTS)
OWN = own_words(CONCEPTS)
TABS = ("description", "features", "reviews")  # a product's pages beside its own
NAV = ("buy now", "< prev", "back to search", "next >", *TABS)
_GO_BACK = re.compile(r"< ?prev|\bback\b|\bresults?\b|return to|another (product|item|one)|other (product|item)|cheaper|in-budget", re.IGNORECASE)
# a page to go to, as advice names one: "back" alone or "cheaper" (a budget word) names none ("put budget back")
_NAVIGATE = re.compile(r"< ?prev|\b(go|going|went|click|navigate|head|return)\w* back\b|back to (the )?(search|results?|list)|"
                       r"\b(search )?results (page|list)|return to|(another|other|different) (product|item)", re.IGNORECASE)
_ASK_VALUES = re.compile(r"\b(select|choose|pick|click|set|set up)\w*\b.{0,60}\b(values?|options?|variants?|colou?rs?|sizes?|groups?|materials?|flavou?rs?)\b", re.IGNORECASE)
MAX_SAME_BLOCK = 2  # a blocked call is retried at most once; then the sim does something else admissible
RESPONSIVENESS = 0.7     # chance a focused, relevant hint is followed
BLOCK_RESPONSIVENESS = 0.1  # chance a block (or a rewrite) that names the fix is followed
BLOCK_REPEAT = 1.0  # not following it, chance it sends the refused call again (the real target: every time, stop 31)
TITLE_RESPONSIVENESS = 0.25  # near-miss picks are mostly intrinsic
# A message placed right before its turn (a pre-hint) that names nothing it can click here takes the turn:
# the real 135M target answers it instead of the page (its words become the click or search; on a product
# page, an early 'buy now') — in every turn of every episode under a pre-hint each turn (docs/agreement_smol.md,
# "Stop 31")
PREHINT_HIJACK = 0.9
MAX_PAGES = 2
# unfamiliar text: calibrated on the real WebShop target (docs/agreement_smol.md, "Text costs")
# (skills are free: on 3 real batches six skill-only patches, nonsense ones included, fixed 14 tasks and
# broke 8 where the same nonsense lines in the prompt broke 9 and fixed 2)
TEXT_COST = TextCost(per_word=0.03, cap=0.9, skills=0.0)
SKILL_WEIGHT = 0.0  # ... and unread: a misleading skill broke 2 and fixed 3 of 90 real tasks
NUDGE = "You must call a tool! NEVER respond with only text."  # the default harness's text-only nudge (trained with)
# the runtime's page message: its own ``Available Actions`` block ends it, so the last one is the world's (an
# observation slot can hold patch text — the text-only nudge — and with it a block of its own; a patched nudge is
# read as advice, ``read_history``)
_OBS = re.compile(r"^(?:Action: (?P<action>.*?)\n\n)?(?:The initial observation|Observation):\n(?P<obs>.*)\n\nAvailable Actions:\n(?P<aa>.*)$", re.DOTALL)
_PRICE = re.compile(r"\$([\d,]+(?:\.\d+)?)")
_FILLER = re.compile(r"\b(i'm|i am|i need|i want to buy|i want|looking for|find me|that is|which is|with|and|a|an|the|in|color|size|flavor|scent)\b", re.IGNORECASE)


@lru_cache(maxsize=1)
def _base_prompt() -> str:
    return (Path(__file__).parent / "harness" / "system_prompt.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Persona:
    flaws: frozenset[str]
    u: dict[str, float]

    @classmethod
    def draw(cls, task: WebShopTask, episode_seed: int) -> Persona:
        rng = random.Random(hashlib.sha256(f"sim-webshop:{task.identity()}:{episode_seed}".encode()).digest())
        flaws = {name for name, p in FLAWS.items() if rng.random() < p}
        keys = (*CONCEPTS, "loop_len", "invalid_len", "text_len", "skip_mode", "distraction", "pick", "block")
        u = {k: rng.random() for k in keys}
        u.update(draw_against(rng, AGAINST_DRAWS[0]))
        u["repeat"] = rng.random()  # drawn after those: every earlier draw stays what it was
        u.update(draw_against(rng, AGAINST_DRAWS[1]))  # likewise
        return cls(frozenset(flaws), u)


# --- reading the conversation ----------------------------------------------------------------
@dataclass
class Turn:
    obs: str
    clickables: list[str]
    tool: str | None = None
    value: str = ""
    executed: str | None = None
    after_obs: str | None = None
    advice: list[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        return f"{'search' if self.tool == 'search_action' else 'click'}[{self.value}]" if self.tool else ""

    @property
    def rewritten(self) -> bool:
        """A call a hook replaced: the world ran another action (silently or with a message) — the page
        shows the model what was done instead."""
        return bool(self.tool) and self.executed is not None and self.executed.lower() != self.action.lower()

    @property
    def blocked(self) -> bool:
        """A call whose observation did not change while a hook spoke (block or guard)."""
        return bool(self.tool) and self.after_obs == self.obs and bool(self.advice) and self.executed == self.action


def _parse_obs(text: str) -> tuple[str | None, str, list[str]] | None:
    m = _OBS.match(text)
    if not m:
        return None
    try:
        aa = ast.literal_eval(m.group("aa").strip())
        clickables = [str(c) for c in aa.get("clickables", [])]
    except (ValueError, SyntaxError, AttributeError):
        clickables = []
    return m.group("action"), m.group("obs"), clickables


def _pages(messages: list[Message]) -> list[tuple[str, Message, tuple[str | None, str, list[str]] | None]]:
    """Each message after the system prompt, as the runtime placed it: ``("page", msg, parsed)`` for a page the
    world showed, ``("hook", msg, None)`` for a hook's message (a hint, a block's or a rewrite's message), and
    ``("other", msg, None)`` for the model's turns and the runtime's notices.

    A page is every tool result, and a user message only where the runtime puts one: the initial page, and the page
    re-sent after a turn without an action (text only, an invalid call). A user message shaped like a page anywhere
    else was written by a patch: the model reads it as text; it shows nothing of the world (it cannot make a click
    that the page does not offer succeed, nor hide one it does)."""
    out: list[tuple[str, Message, tuple[str | None, str, list[str]] | None]] = []
    page_next = True  # the runtime's next user message is a page: the initial one
    for msg in messages[1:]:
        role, text = msg.get("role"), str(msg.get("content") or "")
        if role == "assistant":
            page_next = not _acts(msg)
            out.append(("other", msg, None))
            continue
        if role == "user" and is_notice(text):
            page_next = True  # a history window cut here: the first page-shaped message after the cut is read as one
            out.append(("other", msg, None))
            continue
        parsed = _parse_obs(text) if role == "tool" or (role == "user" and page_next) else None
        if parsed is not None:
            page_next = False
            out.append(("page", msg, parsed))
        elif role == "user" and text and not text.startswith(("No valid tool call", "Task limit")):
            out.append(("hook", msg, None))
        else:
            out.append(("other", msg, None))
    return out


def _acts(msg: Message) -> bool:
    """Does this assistant turn carry an action the runtime runs (a known tool with an argument)? After one that
    does not, the runtime re-sends the page as a user message."""
    calls = msg.get("tool_calls") or []
    if not calls:
        return False
    call = ToolCall.from_message_call(calls[0])
    args = call.arguments if isinstance(call.arguments, dict) else {}
    return call.name in ("search_action", "click_action") and bool(args) and "__unparsed__" not in args


def read_history(messages: list[Message]) -> tuple[list[Turn], str, list[str], list[str]]:
    """Turns so far, the current observation and clickables (from the world's pages only), and hook advice texts."""
    turns: list[Turn] = []
    obs, clickables = "", list[str]()
    advice: list[str] = []
    text_only = False  # the last model turn was text only: the runtime's next page has the nudge as its observation
    for kind, msg, parsed in _pages(messages):
        if parsed is not None:
            executed, obs, clickables = parsed
            if turns and turns[-1].after_obs is None:
                turns[-1].executed, turns[-1].after_obs = executed, obs
            if text_only and msg.get("role") == "user" and obs.strip() != NUDGE:
                advice.append(obs.strip())  # a patched nudge is text the model reads, as in the other two sims
            text_only = False
        elif msg.get("role") == "assistant":
            text_only = not msg.get("tool_calls")
            calls = msg.get("tool_calls") or []
            turn = Turn(obs, list(clickables))
            if calls:
                call = ToolCall.from_message_call(calls[0])
                args = call.arguments if isinstance(call.arguments, dict) else {}
                turn.tool, turn.value = call.name, str(next(iter(args.values()), "")) if args else ""
            turns.append(turn)
        elif kind == "hook":
            text = str(msg.get("content") or "")
            advice.append(text)
            if turns and turns[-1].after_obs is None:
                turns[-1].advice.append(text)
    return turns, obs, clickables, advice


def _advice(request: ChatRequest, hook_texts: list[str]) -> Advice:
    system = [m for m in request.messages[:1] if m.get("role") == "system"]
    adv = Advice.read(system, _base_prompt())
    adv.read_tools(request.tools, Path(__file__).parent / "harness")
    adv.skill_weight = SKILL_WEIGHT
    for text in hook_texts:
        adv.add(text)
    return adv


# --- the policy --------------------------------------------------------------------------------
def respond(request: ChatRequest) -> Message:
    task: WebShopTask = request.knowledge
    persona = Persona.draw(task, int(request.meta.get("episode_seed", 0)))
    turns, obs, clickables, hook_texts = read_history(request.messages)
    # a refused or replaced call's message is a refusal, read by ``told_by_block`` (BLOCK_RESPONSIVENESS), not
    # advice followed like a hint: the real agent ignored every one of them (stop 33, docs/sim_webshop.md)
    refusals = {a for t in turns if t.blocked or t.rewritten for a in t.advice}
    advice = _advice(request, [h for h in hook_texts if h not in refusals])
    agent = _Shopper(task, get_catalog(task.catalog), persona, turns, obs, clickables, advice,
                     int(request.meta.get("round", 0)))
    advice.vocab, advice.ground, advice.against = VOCAB, agent.grounds, AGAINST
    hint = _pre_hint(request.messages)
    if hint is not None and agent.hijacked_by(hint, int(request.meta.get("episode_seed", 0))):
        return agent.answer(hint)
    return agent.guarded(agent.act())


def _pre_hint(messages: list[Message]) -> str | None:
    """The text of a hook's message placed right before this turn (``make_pre_hint``), if the last message is one."""
    pages = _pages(messages)
    if not pages or pages[-1][0] != "hook":
        return None
    return str(pages[-1][1].get("content") or "")


def price_of(tag: str) -> float:
    m = _PRICE.search(tag)
    return float(m.group(1).replace(",", "")) if m else 0.0


class _Shopper:
    def __init__(self, task: WebShopTask, cat: Catalogue, persona: Persona, turns: list[Turn], obs: str,
                 clickables: list[str], advice: Advice, round_index: int) -> None:
        self.task, self.cat, self.p, self.turns, self.obs = task, cat, persona, turns, obs
        self.clickables, self.advice, self.round = clickables, advice, round_index
        self.goal = task.goal
        self.target = cat.products.get(self.goal["asin"])
        self.flaws = set(persona.flaws)

    # --- reading advice ---------------------------------------------------------------------
    def follows(self, concept: str, responsiveness: float = RESPONSIVENESS) -> bool:
        return self.advice.follows(concept, CONCEPTS, self.p.u[concept], responsiveness)

    def told_by_block(self, concept: str) -> bool:
        units = [a for t in self.turns if t.blocked or t.rewritten for a in t.advice]
        return Advice(units, ground=self.grounds, vocab=VOCAB, against=AGAINST).follows(
            concept, CONCEPTS, self.p.u["block"], BLOCK_RESPONSIVENESS)

    def slipped(self) -> bool:
        """Unfamiliar text made it lose track of the instruction this episode: it takes a look-alike
        product when the results show one, else forgets an option."""
        return self.p.u["distraction"] < self.advice.distraction(CONCEPTS, TEXT_COST)

    def told_value(self, value: str) -> bool:
        """Advice it follows names this very option value: it clicks that value, not a neighbour it misread."""
        return any(mentions(unit, value) for unit in self.advice.units) and self.follows("select_options")

    def hijacked_by(self, hint: str, episode_seed: int) -> bool:
        """Does the message just before this turn take the turn? Not when it names something clickable on this
        page (that is advice, read as any other); otherwise with ``PREHINT_HIJACK``, drawn per turn."""
        if any(mentions(hint, c) for c in self.clickables):
            return False
        key = f"sim-webshop-prehint:{self.task.identity()}:{episode_seed}:{self.round}"
        return random.Random(hashlib.sha256(key.encode()).digest()).random() < PREHINT_HIJACK

    def answer(self, hint: str) -> Message:
        """A turn taken by a message: on a product page it buys at once; elsewhere the message's words become
        the click (or, on the search page, the search)."""
        words = " ".join(hint.split())[:60]
        if self.page() == "item":
            return self.click("buy now", "Buying now.")
        if self.page() in ("search", "unknown"):
            return self._call("search_action", words, "Searching for that.")
        return self.click(words, "Clicking that.")

    def stalls(self, here: list[Turn]) -> bool:
        """It reads about the product instead of deciding, unless advice to decide is followed: under the drawn flaw
        until the rounds run out; told not to decide (an instruction against it followed), each tab once, as told."""
        if self.follows("stall"):
            return False
        read = sum(1 for t in here if t.value in TABS)
        return "stall" in self.flaws or (read < len(TABS) and self.told_against("stall"))

    def repeats(self, here: list[Turn], value: str) -> bool:
        """It clicks an option it selected again: under the drawn flaw until the rounds run out; told to (an
        instruction against the fix followed), once."""
        if self.follows("repeat_click"):
            return False
        again = sum(1 for t in here if t.value.lower() == value.lower()) > 1
        return "repeat_click" in self.flaws or (not again and self.told_against("repeat_click"))

    def told_against(self, concept: str) -> bool:
        """An instruction against ``concept`` is followed: the sim makes the mistake it prevents."""
        return self.advice.discouraged(concept, CONCEPTS, self.p.u, RESPONSIVENESS)

    def grounds(self, unit: str, concept: str) -> bool:
        """Does ``unit`` name something actionable now for ``concept``: a clickable, an option
        value or group on this page or in the instruction, a price, a page to go to?"""
        product = self.current_product()
        groups = [g for g, _ in product.options] if product else []
        values = [v for _, vals in product.options for v in vals] if product else []
        values += goal_option_values(self.goal)
        # the concept's own trigger words ground nothing (``blank``): "run cheaper", "use available actions"
        bare = blank(unit, OWN[concept]) if concept in OWN else unit
        named = lambda *phrases: any(mentions(bare, x) for x in phrases)  # noqa: E731
        if concept in ("select_options", "repeat_click"):
            return any(mentions(unit, v) for v in values) or named(*groups) \
                or (concept == "repeat_click" and named("buy now", "next option"))
        if concept == "budget":
            bound = float(self.goal["price_upper"])
            this_bound = any(abs(float(x) - bound) < 0.01 for x in re.findall(r"\d+(?:\.\d+)?", unit.replace(",", "")))
            return this_bound or bool(_NAVIGATE.search(bare))
        if concept == "search_loop":
            return named("result", "results", "next >", "product", "item", "click_action")
        if concept == "stall":
            return named("buy now", "back to search", "< prev", "click_action")
        if concept == "exact_click":
            return named("id", "ids", "product id", "clickables", "available actions", "click_action", "[product_id]")
        if concept == "match_title":
            return named("instruction", "brand", "keywords", *self.goal.get("attributes", []))
        return False

    # --- actions ------------------------------------------------------------------------------
    def _call(self, tool: str, value: str, thought: str) -> Message:
        return assistant_message(thought, [ToolCall(f"call_{self.round}_0", tool, {"keywords" if tool == "search_action" else "value": value})])

    def search(self, thought: str = "Let me search for the product.") -> Message:
        return self._call("search_action", self.keywords(), thought)

    def click(self, value: str, thought: str) -> Message:
        return self._call("click_action", value, thought)

    def keywords(self) -> str:
        text = self.goal["instruction_text"].split(", and price lower")[0]
        for v in goal_option_values(self.goal):
            text = text.replace(v, " ")
        return " ".join(_FILLER.sub(" ", text).split())

    # --- page reading -----------------------------------------------------------------------
    def page(self) -> str:
        c = self.clickables
        if c == ["search"]:
            return "search"
        if "buy now" in c:
            return "item"
        if "next >" in c:
            return "results"
        if "< prev" in c:
            return "sub"
        return "unknown"

    def current_product(self) -> Product | None:
        for t in reversed(self.turns):
            act = t.executed or t.action
            if act.startswith("click[") and t.after_obs is not None:
                v = act[6:-1].strip().upper()
                if v in self.cat.products:
                    return self.cat.products[v]
            if act.startswith("search[") or act == "click[back to search]":
                return None
        return None

    def turns_on_product(self) -> list[Turn]:
        """Turns since the last product was opened (inclusive of nothing before it)."""
        out: list[Turn] = []
        for t in reversed(self.turns):
            act = t.executed or t.action
            if act.startswith("click[") and act[6:-1].strip().upper() in self.cat.products:
                break
            out.append(t)
        return list(reversed(out))

    def visible_products(self) -> list[Product]:
        return [self.cat.products[c.upper()] for c in self.clickables if c.upper() in self.cat.products]

    # --- the decision -------------------------------------------------------------------------
    def act(self) -> Message:
        n_text = sum(1 for t in self.turns if t.tool is None)
        if "text_only" in self.flaws and n_text < 1 + int(self.p.u["text_len"] * 3) and self.page() == "item" \
                and not self.follows("stall"):
            return assistant_message("This product looks right. I think I should buy it after checking the options.")
        page = self.page()
        if page == "search" or page == "unknown":
            return self.search()
        if page == "results":
            return self.on_results()
        if page == "item":
            return self.on_item()
        return self.on_sub()

    def on_results(self) -> Message:
        searches = sum(1 for t in self.turns if t.tool == "search_action")
        loop_len = 3 + int(self.p.u["loop_len"] * 12)
        if "search_loop" in self.flaws and searches < loop_len and not self.follows("search_loop"):
            return self.search("The results do not look right; let me search again.")
        visible = self.visible_products()
        pick = self.choose(visible)
        page_no = sum(1 for t in self.turns if (t.executed or t.action) == "click[next >]")
        target_left = self.target is not None and self.target.asin in self.rejected()
        if pick is None and page_no < MAX_PAGES and "next >" in self.clickables and not target_left:
            return self.click("next >", "The product is not on this page; let me see the next page.")
        if pick is None:
            pick = self.fallback([p for p in visible if p.asin not in self.rejected()])
        if pick is None:
            return self.search("Nothing relevant; let me search again.")
        invalid = sum(1 for t in self.turns if t.tool == "click_action" and t.value.lower() == pick.name.lower())
        if "invalid_click" in self.flaws and invalid < 1 + int(self.p.u["invalid_len"] * 5) and not self.follows("exact_click"):
            return self.click(pick.name, "This title matches the instruction best.")
        return self.click(pick.asin.lower(), "This product matches the instruction.")

    def over_budget(self, p: Product) -> bool:
        return price_of(p.price_tag) > float(self.goal["price_upper"])

    def rejected(self) -> set[str]:
        """Products the sim left after a hook refused to let it buy them (it will not reopen them)."""
        out, current, refused = set(), None, False
        for t in self.turns:
            act = t.executed or t.action
            v = act[6:-1].strip().upper() if act.startswith("click[") else ""
            if v in self.cat.products:
                current, refused = v, False
            elif (t.blocked or t.rewritten) and t.value.lower() == "buy now":
                refused = True
            elif act in ("click[< prev]", "click[back to search]") or act.startswith("search["):
                if current and refused:
                    out.add(current)
                current, refused = None, False
        return out

    def choose(self, visible: list[Product]) -> Product | None:
        target = self.target
        rejected = self.rejected()
        visible = [p for p in visible if p.asin not in rejected]
        if target is None or target not in visible:
            return None
        budget_told = self.follows("budget") or self.told_by_block("budget")
        if ("over_budget" in self.flaws or self.told_against("budget")) and not budget_told:
            twins = [p for p in visible if p is not target and p.query == target.query and self.over_budget(p)]
            if twins:
                return max(twins, key=lambda p: (len(set(p.attributes) & set(target.attributes)), -visible.index(p)))
        if ("near_miss" in self.flaws and not self.follows("match_title", TITLE_RESPONSIVENESS)) or self.slipped():
            sibs = [p for p in visible if p is not target and p.query == target.query and not self.over_budget(p)]
            if sibs:
                return sibs[int(self.p.u["pick"] * len(sibs)) % len(sibs)]
        return target

    def fallback(self, visible: list[Product]) -> Product | None:
        """The target is not in the results: the closest-looking title within budget."""
        if not visible:
            return None
        instr = self.goal["instruction_text"]
        ok = [p for p in visible if not self.over_budget(p)] or visible
        return max(ok, key=lambda p: (fuzz.token_set_ratio(p.name.lower(), instr), -visible.index(p)))

    def wanted_options(self, product: Product, intrinsic_only: bool = False, reread: bool = False) -> list[str]:
        """Clickable values for the goal's options on this product (one per goal option);
        ``intrinsic_only``: without advice-driven slips; ``reread``: after being sent back to the
        instruction, without its misreading of an option either."""
        values = [v for _, vals in product.options for v in vals]
        out = []
        for g in goal_option_values(self.goal):
            best = max(values, key=lambda v: fuzz.token_set_ratio(v, g), default=None)
            if best is not None and fuzz.token_set_ratio(best, g) > 85 and best not in out:
                out.append(best)
        if "wrong_option" in self.flaws and out and not reread:
            i = int(self.p.u["pick"] * len(out)) % len(out)
            for _, vals in product.options if not self.told_value(out[i]) else ():
                if out[i] in vals and len(vals) > 1:
                    j = vals.index(out[i])
                    out[i] = vals[j + 1] if j + 1 < len(vals) else vals[j - 1]
                    break
        if out and not intrinsic_only and self.slipped() and not self.told_value(out[-1]):
            out = out[:-1]  # a slip: one option forgotten (not one the advice it follows names)
        return out

    def on_item(self) -> Message:
        product = self.current_product()
        if product is None:
            return self.click("buy now", "Buying this product.")
        here = self.turns_on_product()
        blocked_buys = [t for t in here if (t.blocked or t.rewritten) and t.value.lower() == "buy now"]
        clicked = [(t.executed or t.action)[6:-1].strip().lower() for t in here
                   if (t.executed or t.action).startswith("click[")]
        wanted = self.wanted_options(product)
        if blocked_buys:
            reply = self.under_block(product, blocked_buys, wanted, clicked)
            if reply is not None:
                return reply
        skip = ("skip_options" in self.flaws or self.told_against("select_options")) and not self.follows("select_options") and not (
            blocked_buys and self.told_by_block("select_options"))
        if skip:
            wanted = wanted[:1] if self.p.u["skip_mode"] < 0.4 else []
        for v in wanted:
            if v not in clicked:
                return self.click(v, f"Selecting the option '{v}'.")
        if wanted and not blocked_buys and not any(t.blocked for t in here) and self.repeats(here, wanted[-1]):
            return self.click(wanted[-1], f"Let me make sure '{wanted[-1]}' is selected.")
        if self.stalls(here) and not any(t.blocked for t in here):
            subs = [t.value for t in here if t.value in TABS]
            return self.click(TABS[len(subs) % len(TABS)], "Let me read more about this product first.")
        return self.click("buy now", "All options are selected; buying now.")

    def under_block(self, product: Product, blocked_buys: list[Turn], wanted: list[str], clicked: list[str]) -> Message | None:
        """A hook refused or replaced ``buy now`` on this page: do what its message and the page allow.

        Select the goal options still missing, go back for another product when told to (or
        when over budget), pick a value of an option group left empty; when nothing it can do
        here answers the message, look once at the details, then leave the product for
        another rather than repeating the refused click.
        """
        last = blocked_buys[-1]
        message = " ".join(last.advice)
        complies = self.complies()
        if last.rewritten:  # the action done in its place (an option clicked for it) says what the page needs
            message = " ".join([*last.advice, str(last.executed)[6:-1] if str(last.executed).startswith("click[") else ""])
        asks_options = complies and (bool(CONCEPTS["select_options"].search(message)) or bool(_ASK_VALUES.search(message))
                                     or self.grounds(message, "select_options"))
        asks_back = complies and (bool(_GO_BACK.search(message)) or bool(CONCEPTS["budget"].search(message)))
        if self.over_budget(product) and (asks_back or self.follows("budget")):
            return self.click("< prev", "This product is over my budget; let me go back to the results.")
        if self.stubborn():
            return self.click("buy now", "Buying this product.")
        selected: dict[str, str] = {}
        for c in clicked:
            for g, vals in product.options:
                if c in (v.lower() for v in vals):
                    selected[g] = c
        if asks_options:  # first the values the message itself names (or a goal value it names)
            goals = [g for g in goal_option_values(self.goal) if mentions(message, g)]
            for g, vals in product.options:
                named = [v for v in vals if mentions(message, v)]
                named += [v for v in vals for gv in goals if fuzz.token_set_ratio(v, gv) > 85 and v not in named]
                if named and selected.get(g) not in (v.lower() for v in named):
                    return self.click(named[0], f"Selecting '{named[0]}', as the message says.")
        if asks_options:
            reread = mentions(message, "instruction") or mentions(message, "task")  # it checks the instruction again
            for v in [w for w in self.wanted_options(product, intrinsic_only=True, reread=reread) if w not in clicked]:
                return self.click(v, f"Selecting the option '{v}' first.")
            empty = [vals for g, vals in product.options if g not in selected]
            if empty and asks_back:
                return self.click("< prev", "This product does not offer what the instruction asks for; back to the results.")
            if empty:
                pick = max(empty[0], key=lambda v: max((fuzz.token_set_ratio(v, g) for g in goal_option_values(self.goal)), default=0))
                return self.click(pick, f"Selecting '{pick}' as asked.")
            if len(blocked_buys) < MAX_SAME_BLOCK:
                return self.click("buy now", "Every option is selected now; buying.")
        if asks_back:
            return self.click("< prev", "The purchase was refused; let me pick another product.")
        looked = sum(1 for t in self.turns_on_product() if t.value in ("features", "description"))
        if len(blocked_buys) < MAX_SAME_BLOCK and looked < 1:
            return self.click("features", "The purchase did not go through; let me check the product details.")
        if len(blocked_buys) >= MAX_SAME_BLOCK:
            return self.click("< prev", "I cannot buy this one; let me choose another product.")
        return None

    def complies(self) -> bool:
        """This episode, it does what a refusal's message and the page allow (``BLOCK_RESPONSIVENESS``)."""
        return self.p.u["block"] < BLOCK_RESPONSIVENESS

    def stubborn(self) -> bool:
        """This episode, a refusal it does not follow is met by the same call again (``BLOCK_REPEAT``)."""
        return not self.complies() and self.p.u["repeat"] < BLOCK_REPEAT

    def guarded(self, reply: Message) -> Message:
        """Unless stubborn, never send a call refused twice on this very page again: do something else admissible."""
        calls = reply.get("tool_calls") or []
        if not calls or self.stubborn():
            return reply
        call = ToolCall.from_message_call(calls[0])
        value = str(next(iter(call.arguments.values()), "")) if isinstance(call.arguments, dict) else ""
        refused = [t for t in self.turns if t.blocked and t.obs == self.obs and t.tool == call.name
                   and t.value.lower() == value.lower()]
        if len(refused) < MAX_SAME_BLOCK:
            return reply
        page = self.page()
        if page == "results":
            ids = [p for p in self.visible_products() if p.asin not in self.rejected()]
            best = self.fallback(ids)
            if best is not None and best.asin.lower() != value.lower():
                return self.click(best.asin.lower(), "That click was refused; opening the closest product instead.")
            if "next >" in self.clickables and value != "next >":
                return self.click("next >", "That click was refused; trying the next page.")
            return self.click("back to search", "That click was refused; back to search.")
        if "< prev" in self.clickables and value != "< prev":
            return self.click("< prev", "That was refused; going back.")
        return self.click("back to search", "That was refused; starting over.")

    def on_sub(self) -> Message:
        here = self.turns_on_product()
        if self.stalls(here) and not any(t.blocked for t in here):
            return self.click("< prev", "Let me go back to the product page.")
        return self.click("< prev", "Back to the product page.")
