"""Leaderboards: an honest submission verifies; every class of forged submission is rejected in one line;
verification is a separate record; render lets no submitted string add rows, cells, links, images or HTML."""
from __future__ import annotations

import ast
import builtins
import copy
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness_gym.leaderboard import (
    SubmissionError,
    build_submission,
    load_submission,
    protocol_violation,
    save_submission,
    table_for,
    validate,
    verify_submission,
)
from harness_gym.leaderboard.cli import main as lb_main
from harness_gym.leaderboard.protocol import TABLES, protocol_text
from harness_gym.leaderboard.records import status, write_record
from harness_gym.leaderboard.render import code, render
from harness_gym.leaderboard.schema import SCHEMA, schema_text
from harness_gym.leaderboard.submission import make_env, make_kwargs, packet_sha256
from harness_gym.leaderboard.verify import OTHER_VERSION, REJECTED, REPRODUCED

ROOT = Path(__file__).resolve().parents[1]
ENV = "HarnessEdit-DBBench-v0"
TABLE = table_for(ENV, "sim")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    import harness_gym  # noqa: F401
    from harness_gym.bench import run_bench

    out = tmp_path_factory.mktemp("lb") / "bench.jsonl"
    return run_bench([ENV], ["noop", "template"], TABLE.episodes, out, seed=TABLE.base_seed,
                     env_kwargs=make_kwargs(TABLE), progress=False).rows


@pytest.fixture(scope="module")
def honest(rows: list[dict]) -> dict:
    return build_submission(rows, name="t-template", policy="template", env_id=ENV, target="sim")


@pytest.fixture
def forge(honest: dict) -> Callable[[Callable[[dict], Any]], dict]:
    def make(mutate: Callable[[dict], Any]) -> dict:
        sub = copy.deepcopy(honest)
        mutate(sub)
        return sub
    return make


def _rejected(sub: dict, *, starts: str) -> str:
    """verify's one-line reason (schema errors raise, protocol and rerun errors are verdicts)."""
    try:
        verdict = verify_submission(sub)
    except SubmissionError as exc:
        message = f"rejected: {exc}"
    else:
        assert verdict.outcome == REJECTED, verdict.message
        message = verdict.message
    assert "\n" not in message
    assert message.startswith(starts), message
    return message


def _best(sub: dict) -> int:
    return max(range(len(sub["episodes"])), key=lambda i: sub["episodes"][i]["claimed"]["reward"])


# --- an honest submission ---------------------------------------------------------------------

def test_honest_submission_verifies_exactly(honest: dict) -> None:
    assert [e["seed"] for e in honest["episodes"]] == TABLE.seeds
    assert honest["env"]["kwargs"] == TABLE.env_kwargs() and "verified" not in honest
    assert any(e["claimed"]["reward"] != 0 for e in honest["episodes"]), "template should move some batch"
    verdict = verify_submission(honest)
    assert verdict.outcome == REPRODUCED and verdict.episodes_checked == TABLE.episodes, verdict.message
    assert verdict.message == f"accepted: t-template on {TABLE.key}: {TABLE.episodes} episodes reproduce exactly"


def test_submit_refuses_rows_from_other_settings(rows: list[dict], tmp_path: Path) -> None:
    from harness_gym.bench import run_bench

    other = run_bench([ENV], ["template"], TABLE.episodes, tmp_path / "b.jsonl", progress=False,
                      env_kwargs={"batch_size": 6, "heldout_batch_size": TABLE.heldout_batch_size}).rows
    with pytest.raises(SubmissionError, match=r"^bench row seed 0: its batch is not the one table .* draws"):
        build_submission(other, name="x", policy="template", env_id=ENV)
    no_heldout = [{**r, "heldout_delta": None} for r in rows]
    with pytest.raises(SubmissionError, match=r"^bench rows have no held-out deltas; table .* needs --heldout-batch-size 10"):
        build_submission(no_heldout, name="x", policy="template", env_id=ENV)
    with pytest.raises(SubmissionError, match=r"lack seeds \[5, 6, 7, 8, 9\]; table .* needs seeds 0–9: run `harness-gym bench"):
        build_submission([r for r in rows if r["seed"] < 5], name="x", policy="template", env_id=ENV)
    with pytest.raises(SubmissionError, match=r"^no leaderboard for env 'HarnessEdit-DBBench-v0' with target 'vllm'"):
        build_submission(rows, name="x", policy="template", env_id=ENV, target="vllm")


# --- forged submissions, one test per class --------------------------------------------------

def test_best_episode_copied_under_one_seed(forge: Callable) -> None:
    def copy_best(s: dict) -> None:
        s["episodes"] = [copy.deepcopy(s["episodes"][_best(s)]) for _ in s["episodes"]]
    msg = _rejected(forge(copy_best), starts="rejected: episode ")
    assert "repeats episode 0's" in msg or "runs seed" in msg


def test_best_episode_copied_under_every_seed(forge: Callable, honest: dict) -> None:
    best = _best(honest)

    def relabel(s: dict) -> None:
        s["episodes"] = [{**copy.deepcopy(s["episodes"][best]), "seed": seed} for seed in TABLE.seeds]
    other = next(i for i in range(TABLE.episodes) if i != best)
    msg = _rejected(forge(relabel), starts=f"rejected: episode {min(other, 1 if best == 0 else 0)} (seed ")
    assert ": batch: claimed [" in msg and "the env draws" in msg


def test_duplicated_and_skipped_seeds(forge: Callable) -> None:
    _rejected(forge(lambda s: s["episodes"][3].update(seed=2)), starts="rejected: episode 3: seed 2 repeats episode 2's")
    _rejected(forge(lambda s: s["episodes"][3].update(seed=17)),
              starts="rejected: episode 3: seed 17, but table HarnessEdit-DBBench-v0/sim's episode 3 runs seed 3")
    _rejected(forge(lambda s: s["episodes"].reverse()), starts="rejected: episode 0: seed 9, but")


def test_hand_picked_task_ids_with_honest_numbers(honest: dict) -> None:
    """A forger resets on chosen task ids (the env allows it) and claims exactly what that batch scores."""
    picked = list(dict.fromkeys(t for e in honest["episodes"] for t in e["batch"][:2]))[: TABLE.batch_size]
    forged = copy.deepcopy(honest)
    env = make_env(TABLE)
    try:
        obs, info = env.reset(seed=0, options={"task_ids": picked})
        _, reward, _, _, sinfo = env.step(forged["episodes"][0]["patch"])
    finally:
        env.close()
    forged["episodes"][0].update(batch=picked, batch_digest=info["batch_digest"], packet_sha256=packet_sha256(obs),
                                 claimed={"reward": reward, "baseline_score": sinfo["baseline_score"],
                                          "patched_score": sinfo["patched_score"], "heldout_delta": sinfo["heldout_delta"]})
    msg = _rejected(forged, starts="rejected: episode 0 (seed 0): batch: claimed [")
    assert "batches are not chosen, they are the seed's draw" in msg


def test_other_split(forge: Callable) -> None:
    _rejected(forge(lambda s: s["env"]["kwargs"].update(split="train")),
              starts="rejected: env.kwargs.split: table HarnessEdit-DBBench-v0/sim fixes 'test', the submission ran 'train'")


@pytest.mark.parametrize(("key", "value"), [("batch_size", 6), ("heldout_batch_size", 0), ("heldout_batch_size", 3),
                                            ("backend", "mysql"), ("metric", "success")])
def test_other_env_settings(forge: Callable, key: str, value: Any) -> None:
    _rejected(forge(lambda s: s["env"]["kwargs"].update({key: value})), starts=f"rejected: env.kwargs.{key}: table ")


def test_batch_of_other_size_under_the_right_kwargs(forge: Callable) -> None:
    _rejected(forge(lambda s: s["episodes"][4]["batch"].pop()),
              starts="rejected: episode 4: batch of 9 tasks, table HarnessEdit-DBBench-v0/sim runs batches of 10")


def test_too_few_and_too_many_episodes(forge: Callable) -> None:
    _rejected(forge(lambda s: s.update(episodes=s["episodes"][:3])),
              starts="rejected: too few episodes: 3, table HarnessEdit-DBBench-v0/sim takes exactly 10 (seeds 0–9")
    extra = lambda s: s["episodes"].append({**copy.deepcopy(s["episodes"][0]), "seed": 10})  # noqa: E731
    _rejected(forge(extra), starts="rejected: too many episodes: 11")


@pytest.mark.parametrize("kwarg", [{"data_dir": "/tmp/easy"}, {"max_edits": 5}, {"sandbox_isolation": "process"},
                                   {"target": "openai:http://attacker:8000/v1#m"}, {"invalid_patch_reward": 0.0}])
def test_unknown_env_kwarg(forge: Callable, kwarg: dict) -> None:
    (name,) = kwarg
    msg = _rejected(forge(lambda s: s["env"]["kwargs"].update(kwarg)), starts="rejected: schema: $.env.kwargs: ")
    assert f"'{name}' was unexpected" in msg


@pytest.mark.parametrize(("model", "starts"), [
    ("vllm", "rejected: no leaderboard for env 'HarnessEdit-DBBench-v0' with target 'vllm'"),
    ("openai:http://attacker:8000/v1#m", "rejected: schema: $.target.model: "),
])
def test_target_swap(forge: Callable, model: str, starts: str) -> None:
    _rejected(forge(lambda s: s["target"].update(model=model)), starts=starts)


def test_other_env_id(forge: Callable) -> None:
    _rejected(forge(lambda s: s["env"].update(id="HarnessEdit-Easy-v0")),
              starts="rejected: no leaderboard for env 'HarnessEdit-Easy-v0' with target 'sim'")
    _rejected(forge(lambda s: s["env"].update(id="os:HarnessEdit-DBBench-v0")), starts="rejected: schema: $.env.id: ")


@pytest.mark.parametrize(("key", "value"), [("temperature", 0.7), ("top_p", 0.5), ("max_tokens", 99999)])
def test_other_sampling(forge: Callable, key: str, value: Any) -> None:
    _rejected(forge(lambda s: s["target"]["sampling"].update({key: value})), starts=f"rejected: target.sampling.{key}: ")


def test_forged_version(forge: Callable) -> None:
    import harness_gym

    _rejected(forge(lambda s: s["package"].update(version="9.9.9")),
              starts=f"rejected: package.version 9.9.9 is newer than the verifier's harness-gym {harness_gym.__version__}")
    _rejected(forge(lambda s: s["package"].update(version=harness_gym.__version__ + ".post1")), starts="rejected: package.version ")
    _rejected(forge(lambda s: s["package"].update(version="1.x!!")), starts="rejected: package.version '1.x!!' is not a PEP 440")
    verdict = verify_submission(forge(lambda s: s["package"].update(version="0.0.1")))
    assert verdict.outcome == OTHER_VERSION, verdict.message
    assert verdict.message.endswith(f"(submitted as harness-gym 0.0.1, reproduced with {harness_gym.__version__})")


def test_a_rerun_that_differs_names_another_address_layout(forge: Callable) -> None:
    """A submission carries the object-address fingerprint of the machine that built it; where a number does not
    reproduce and that fingerprint is not this machine's, the one line says addresses may be why (a patch can read
    them). Where they match, or the file has none (older files), it says nothing more."""
    from harness_gym.sandbox.pool import address_fingerprint

    here = address_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{16}", here or "") and forge(lambda s: None)["package"]["addresses"] == here

    def tampered(addresses: Any) -> Callable[[dict], Any]:
        def change(s: dict) -> None:
            s["episodes"][1]["claimed"]["reward"] += 0.5
            s["package"]["addresses"] = addresses
        return change

    other = _rejected(forge(tampered("0123456789abcdef")), starts="rejected: episode 1 (seed 1): reward: claimed ")
    assert other.endswith(f"(note: hooks on the submitter's machine saw other object addresses than here, fingerprint "
                          f"0123456789abcdef against {here}: a patch that reads addresses can score differently on "
                          "another kernel, libc or Python build)")
    for same in (here, None):
        assert "addresses" not in _rejected(forge(tampered(same)), starts="rejected: episode 1 (seed 1): reward: ")
    _rejected(forge(lambda s: s["package"].update(addresses="0x1234")), starts="rejected: schema: $.package.addresses: ")


def test_self_set_verified_flag(forge: Callable, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _rejected(forge(lambda s: s.update(verified=True)),
              starts="rejected: $.verified: a submission may not carry its own verified flag")
    path = save_submission(forge(lambda s: s.update(verified=True, name="v")), tmp_path / "v.json")
    assert lb_main(["leaderboard", "verify", "-q", str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"{path}: rejected: $.verified: ")


@pytest.mark.parametrize(("field", "delta"), [("reward", 0.5), ("baseline_score", -0.1), ("patched_score", 0.05),
                                              ("heldout_delta", 0.1)])
def test_tampered_numbers(forge: Callable, honest: dict, field: str, delta: float) -> None:
    i = _best(honest)
    truth = honest["episodes"][i]["claimed"][field]
    msg = _rejected(forge(lambda s: s["episodes"][i]["claimed"].update({field: truth + delta})),
                    starts=f"rejected: episode {i} (seed {i}): {field}: claimed ")
    assert msg.endswith(f"recomputed {truth!r}")


def test_tampered_patch_validity_and_patch(forge: Callable, honest: dict, rows: list[dict]) -> None:
    i = _best(honest)
    _rejected(forge(lambda s: s["episodes"][i].update(patch_valid=False)), starts=f"rejected: episode {i} (seed {i}): patch_valid: ")
    noop = next(r["patch"] for r in rows if r["policy"] == "noop")
    msg = _rejected(forge(lambda s: s["episodes"][i].update(patch=noop)), starts=f"rejected: episode {i} (seed {i}): reward: ")
    assert msg.endswith("recomputed 0.0")


@pytest.mark.parametrize(("text", "expected"), [
    (b'{"a": NaN}', "NaN is not a number JSON allows"),
    (b'{"name": "a", "name": "b"}', "key 'name' appears twice"),
    (b"\xff\xfe{", "not valid UTF-8 JSON"),
    (b"{", "not valid UTF-8 JSON"),
    (b'{"a": 1e999}', "1e999 overflows to inf"),
    (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    (b'{"seed": 1' + b"0" * 5000 + b"}", "is over 2\\*\\*53"),  # refused before int() meets its 4300-digit limit
    # integers a float cannot hold: float() in verify and render would overflow (OverflowError, not a verdict)
    (b'{"reward": 1' + b"0" * 400 + b"}", "integer 10000000000000000000… is over 2\\*\\*53"),
    (b'{"top_p": -1' + b"0" * 30 + b"}", "integer -1000000000000000000… is over 2\\*\\*53"),
    (b'{"seed": 9007199254740993}', "is over 2\\*\\*53"),
    (b'{"reward": 1e308}', "number 1e308 is over 2\\*\\*53 in magnitude"),
    (b'{"reward": -1.5e300}', "number -1.5e300 is over 2\\*\\*53 in magnitude"),
])
def test_unreadable_files(tmp_path: Path, text: bytes, expected: str) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(text)
    with pytest.raises(SubmissionError, match=f"^{path}: .*{expected}"):
        load_submission(path)


def test_symlinks_and_huge_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "x.json").symlink_to("/etc/hostname")
    with pytest.raises(SubmissionError, match="a symbolic link; a submission is a plain file"):
        load_submission(tmp_path / "x.json")
    (tmp_path / "big.json").write_bytes(b" " * (8 * 1024 * 1024 + 1))
    with pytest.raises(SubmissionError, match="8388609 bytes; a submission is at most 8388608 bytes"):
        load_submission(tmp_path / "big.json")


def test_render_survives_the_largest_claims_a_file_may_hold(tmp_path: Path) -> None:
    """Claims of +-2**53 (the most the parser lets through) render; +-1e308 made the t-interval overflow."""
    _tree(tmp_path, [_fake("extreme", [2.0 ** 53, -2.0 ** 53], [2.0 ** 53, -2.0 ** 53])])
    render(tmp_path)
    assert "[extreme](submissions/extreme.json)" in (tmp_path / f"{TABLE.slug}.md").read_text(encoding="utf-8")


def test_fifos_and_directories_are_refused(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "x.json")  # reading it would block verify/render forever
    with pytest.raises(SubmissionError, match="not a regular file"):
        load_submission(tmp_path / "x.json")
    (tmp_path / "d.json").mkdir()
    with pytest.raises(SubmissionError, match="a directory"):
        load_submission(tmp_path / "d.json")


@pytest.mark.parametrize(("where", "value"), [
    (("episodes", 0, "seed"), 0.0), (("attempts",), 1.0), (("env", "kwargs", "batch_size"), 10.0),
    (("target", "sampling", "max_tokens"), 4096.0), (("env", "kwargs", "heldout_batch_size"), 10.0),
    (("episodes", 0, "claimed", "reward"), 10 ** 400), (("target", "sampling", "temperature"), -10 ** 30),
    (("episodes", 0, "claimed", "heldout_delta"), float("nan")), (("target", "sampling", "top_p"), float("inf")),
    (("episodes", 0, "claimed", "reward"), 1e308), (("episodes", 0, "claimed", "patched_score"), -1e300),
])
def test_numbers_of_the_wrong_kind(forge: Callable, where: tuple, value: Any) -> None:
    """Integers written as floats (JSON Schema counts 1.0 as an integer) and numbers a float cannot hold,
    given as a dict (a file never gets this far: see test_unreadable_files): schema errors, never an exception."""
    def put(sub: dict) -> None:
        node = sub
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = value

    _rejected(forge(put), starts="rejected: schema: $." + ".".join(str(k) if isinstance(k, str) else "" for k in where).replace("..", "[0]."))


def test_name_must_be_the_file_name(honest: dict, tmp_path: Path) -> None:
    path = save_submission(honest, tmp_path / "other.json")
    with pytest.raises(SubmissionError, match="name 't-template' differs from the file name"):
        load_submission(path)


HOSTILE_HOOK = '''def hook(ctx, nb):
    nb["n"] = nb.get("n", 0) + 1
    return {"type": "block_and_prompt", "message": "HOSTILE-MARKER blocked " + str(nb["n"])}
'''
ESCAPE_HOOK = '''def hook(ctx, nb):
    import os
    os.system("touch {marker}")
    return None
'''


def _hr1(code_text: str) -> str:
    body = {"schema_version": "harness-r1-patch-v1", "benchmark": "dbbench", "description": "hostile",
            "actions": [{"type": "add_code_hook", "hook": "on_before_action", "code": code_text}]}
    return json.dumps(body)


def test_hostile_patches_verify_exactly_and_run_only_in_the_sandbox(honest: dict, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Honest claims for hostile patches reproduce, but their code never runs in the verifier's process."""
    marker = tmp_path / "escaped"
    patches = [_hr1(HOSTILE_HOOK), _hr1(ESCAPE_HOOK.format(marker=marker))]
    forged = copy.deepcopy(honest)
    env = make_env(TABLE)
    try:
        for i, patch in enumerate(patches):
            env.reset(seed=i)
            _, reward, _, _, sinfo = env.step(patch)
            forged["episodes"][i].update(patch=patch, patch_valid=sinfo["patch_valid"],
                                         claimed={"reward": reward, "baseline_score": sinfo["baseline_score"],
                                                  "patched_score": sinfo["patched_score"],
                                                  "heldout_delta": sinfo.get("heldout_delta")})
    finally:
        env.close()
    assert forged["episodes"][0]["patch_valid"] and forged["episodes"][0]["claimed"]["reward"] < 0, "the hook ran"
    assert not forged["episodes"][1]["patch_valid"], "the policy rejects an import"
    seen: list[str] = []
    real_exec, real_eval, real_compile = builtins.exec, builtins.eval, builtins.compile

    def spy(real: Callable) -> Callable:
        def call(source: Any, *args: Any, **kwargs: Any) -> Any:
            only_ast = (args[2] if len(args) > 2 else kwargs.get("flags", 0)) & ast.PyCF_ONLY_AST if real is real_compile else 0
            if not only_ast and "MARKER" in str(source) + str(getattr(source, "co_consts", "")):
                seen.append(real.__name__)
            return real(source, *args, **kwargs)
        return call

    for name, real in (("exec", real_exec), ("eval", real_eval), ("compile", real_compile)):
        monkeypatch.setattr(builtins, name, spy(real))
    verdict = verify_submission(forged, limit=2)
    monkeypatch.undo()
    assert verdict.accepted and verdict.episodes_checked == 2, verdict.message
    assert seen == [], f"hook code reached {seen} in the verifier's process"
    assert not marker.exists()


def test_leaderboard_code_never_executes_or_unpickles() -> None:
    """No module of the leaderboard package calls exec/eval/compile, pickle, marshal or imports by name."""
    banned_calls = {"exec", "eval", "compile", "__import__", "import_module", "loads", "load"}
    for path in sorted((ROOT / "harness_gym" / "leaderboard").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not {"pickle", "marshal", "shelve", "dill", "importlib", "yaml"} & set(names), (path.name, names)
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
                owner = fn.value.id if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) else ""
                if name in ("loads", "load"):
                    assert owner == "json", f"{path.name}:{node.lineno}: {owner}.{name}"
                else:
                    assert name not in banned_calls, f"{path.name}:{node.lineno}: {name}"


# --- records and render ----------------------------------------------------------------------------

def _tree(tmp_path: Path, subs: list[dict]) -> list[Path]:
    return [save_submission(s, tmp_path / "submissions" / f"{s['name']}.json") for s in subs]


def _fake(name: str, same: list[float], held: list[float] | None, policy: str | None = None) -> dict:
    eps = [{"seed": TABLE.base_seed + i, "batch": [f"gen-test:{j}" for j in range(TABLE.batch_size)],
            "batch_digest": "0" * 64, "packet_sha256": "0" * 64, "patch": "", "patch_valid": True,
            "claimed": {"reward": same[i % len(same)], "baseline_score": 0.5, "patched_score": 0.5,
                        "heldout_delta": None if held is None else held[i % len(held)]}}
           for i in range(TABLE.episodes)]
    return {"format": "harness-gym-submission-v2", "name": name, "policy": policy or name,
            "env": {"id": ENV, "kwargs": TABLE.env_kwargs()},
            "package": {"name": "harness-gym", "version": "0.1.0"},
            "target": {"model": "sim", "sampling": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 4096}},
            "attempts": 1, "episodes": eps}


def _draws(sub: dict, deltas: list[float] | None = None) -> tuple:
    """The verifier's held-out draws of a record, one per episode; the Δs default to the file's claimed ones."""
    from harness_gym.leaderboard.render import heldout_deltas
    from harness_gym.leaderboard.verify import HeldoutDraw

    deltas = heldout_deltas(sub) if deltas is None else deltas
    return tuple(HeldoutDraw(e["seed"], 1000 + i, e["patch_valid"], deltas[i]) for i, e in enumerate(sub["episodes"]))


def _record_all(tmp_path: Path, paths: list[Path]) -> None:
    """Records as the maintainers' rerun would write them (the fakes do not rerun; render reads only records),
    with verifier draws equal to the claims."""
    from harness_gym.leaderboard.verify import Verdict

    for path in paths:
        sub = load_submission(path)
        write_record(tmp_path, sub, Verdict(REPRODUCED, TABLE.episodes, "accepted", TABLE.key, _draws(sub.data)), TABLE)


def test_a_record_names_the_commit_its_rerun_started_on(honest: dict, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict reads the verifier's commit before the rerun; the record keeps it only if the checkout is still
    on it when the record is written (a rerun through a real target takes an hour, and a record once named the
    commit checked out at its end, not the code that ran)."""
    from harness_gym.leaderboard import records, verify

    path = save_submission(honest, tmp_path / "submissions" / "t-template.json")
    monkeypatch.setattr(verify, "_git_sha", lambda: "a" * 40)
    verdict = verify_submission(honest, limit=1)
    assert verdict.git_sha == "a" * 40
    verdict = replace(verdict, outcome=REJECTED)  # a record of a partial rerun is a rejection's (no draws needed)
    for now, kept in (("a" * 40, "a" * 40), ("b" * 40, None), (None, None)):
        monkeypatch.setattr(records, "_git_sha", lambda now=now: now)
        rec = json.loads(write_record(tmp_path, load_submission(path), verdict, TABLE).read_text(encoding="utf-8"))
        assert rec["verifier"]["git_sha"] == kept, now


def _ranked_rows(page: str) -> list[str]:
    return [line.split("|")[2].strip() for line in page.splitlines() if line.startswith("| ") and line[2].isdigit()]


def test_render_ranks_per_table_on_heldout_delta(tmp_path: Path) -> None:
    _record_all(tmp_path, _tree(tmp_path, [_fake("overfit", [0.5], [0.0, 0.1]), _fake("general", [0.2, 0.3], [0.2])]))
    written = render(tmp_path)
    assert [p.name for p in written] == ["README.md"] + [f"{p.slug}.md" for p in TABLES]
    page = (tmp_path / f"{TABLE.slug}.md").read_text(encoding="utf-8")
    assert _ranked_rows(page) == ["[general](submissions/general.json)", "[overfit](submissions/overfit.json)"]
    assert "+0.200 [+0.200, +0.200]" in page
    assert "No submissions yet." in (tmp_path / "HarnessEdit-DBBench-v0--smol.md").read_text(encoding="utf-8")
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "## Protocol" in readme and "base_seed + i" in readme


@pytest.mark.parametrize("state", ["unverified", "stale", "record_of_a_limited_rerun"])
def test_claims_nobody_reran_are_never_ranked(tmp_path: Path, state: str) -> None:
    """A forged file in submissions/ (perfect claims, no record; or a record of other bytes) is listed
    after the ✓ rows without a rank, whatever it claims: only a rerun ranks."""
    paths = _tree(tmp_path, [_fake("honest", [0.1], [0.05]), _fake("forged", [1.0], [1.0], policy="Best Policy")])
    _record_all(tmp_path, paths[:1])
    if state == "stale":
        _record_all(tmp_path, paths[1:])
        data = json.loads(paths[1].read_text())
        data["attempts"] = 2  # edited after the record
        paths[1].write_text(json.dumps(data), encoding="utf-8")
    elif state == "record_of_a_limited_rerun":
        from harness_gym.leaderboard.verify import Verdict

        write_record(tmp_path, load_submission(paths[1]), Verdict(REJECTED, 1, "rejected: episode 1", TABLE.key), TABLE)
    render(tmp_path)
    for page in (tmp_path / f"{TABLE.slug}.md", tmp_path / "README.md"):
        text = page.read_text(encoding="utf-8")
        assert _ranked_rows(text) == ["[honest](submissions/honest.json)"], page
        rows = [line for line in text.splitlines() if "[forged](submissions/forged.json)" in line and line.startswith("| –")]
        assert rows and "✓" not in rows[0], rows
        assert text.index("[honest](submissions/honest.json)") < text.index("[forged](submissions/forged.json)")


def test_check_mark_needs_a_record_matching_the_exact_bytes(tmp_path: Path, honest: dict) -> None:
    from harness_gym.leaderboard.verify import Verdict

    (path,) = _tree(tmp_path, [{**copy.deepcopy(honest), "name": "h"}])
    sub = load_submission(path)
    assert status(tmp_path, sub, TABLE).state == "unverified"
    write_record(tmp_path, sub, Verdict(REPRODUCED, TABLE.episodes, "accepted: h", TABLE.key, _draws(sub.data)), TABLE)
    assert status(tmp_path, sub, TABLE).state == "verified"
    render(tmp_path)
    assert "| ✓ |" in (tmp_path / f"{TABLE.slug}.md").read_text(encoding="utf-8")
    data = json.loads(path.read_text())
    data["episodes"][0]["claimed"]["reward"] += 0.25  # edited after its rerun
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    assert status(tmp_path, load_submission(path), TABLE).state == "stale"
    render(tmp_path)
    page = (tmp_path / f"{TABLE.slug}.md").read_text(encoding="utf-8")
    ranking = page.split("| rank |")[1].split("## Submissions")[0]
    assert "✓" not in ranking and "changed since its rerun" in ranking
    assert replace(TABLE, note="reworded").digest() == TABLE.digest()
    assert replace(TABLE, heldout_batch_size=5).digest() != TABLE.digest()  # new rules drop every ✓


def test_cli_record_and_render(tmp_path: Path, honest: dict, capsys: pytest.CaptureFixture) -> None:
    good = {**copy.deepcopy(honest), "name": "good"}
    bad = copy.deepcopy(good)
    bad["name"] = "bad"
    bad["episodes"][0]["claimed"]["baseline_score"] = 0.123
    paths = _tree(tmp_path, [good, bad])
    assert lb_main(["leaderboard", "verify", "-q", "--limit", "1", "--record", "--dir", str(tmp_path), str(paths[0])]) == 2
    capsys.readouterr()
    assert lb_main(["leaderboard", "verify", "-q", "--record", "--dir", str(tmp_path), *map(str, paths)]) == 1
    out = capsys.readouterr()
    assert f"{paths[1]}: rejected: episode 0 (seed 0): baseline_score: claimed 0.123, recomputed " in out.err
    assert out.err.count("\n") == 1
    records = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "verified").glob("*.json")}
    assert records["good"]["outcome"] == REPRODUCED and records["bad"]["outcome"] == REJECTED
    assert lb_main(["leaderboard", "render", "--dir", str(tmp_path)]) == 0
    page = (tmp_path / f"{TABLE.slug}.md").read_text(encoding="utf-8")
    assert "| 1 | [good](submissions/good.json) |" in page and "| – | [bad](submissions/bad.json) |" in page
    assert "✗ rejected" in page


HOSTILE = [
    "evil | x | y",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](http://evil.example/)",
    "![pixel](http://evil.example/p.png)",
    "see www.evil.example and https://evil.example/x and a@evil.example",
    "`code` ``x`` \\| \\\\| end\\",
    "a\u2028b\u202ec\u200bd\ufeffe",
    "&lt;script&gt; &#124; **bold** _em_ ~~s~~",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_code_spans_are_inert(text: str) -> None:
    s = code(text)
    assert s.startswith("`") and s.endswith("`") and s.count("`") == 2
    assert not set("|\\\n\r\u2028\u2029\u202e\u200b\ufeff") & set(s)


def test_render_hostile_strings_under_githubs_renderer(tmp_path: Path) -> None:
    """Render submissions with hostile policy names and descriptions; GitHub's cmark-gfm sees exactly our table."""
    from support import require_modules

    require_modules("cmarkgfm", install="pip install cmarkgfm  (in the test extra)")
    import cmarkgfm
    from cmarkgfm.cmark import Options

    subs = []
    for i, text in enumerate(HOSTILE):
        sub = _fake(f"h{i}", [0.1 * i], [0.1 * i], policy=text.replace("\u2028", " ").replace("\u202e", " "))
        sub["description"] = sub["policy"]
        validate(sub)
        subs.append(sub)
    newline_name = _fake("nl", [0.0], [0.0], policy="a\n| 1 | forged |")
    with pytest.raises(SubmissionError, match=r"^schema: \$\.policy: "):
        validate(newline_name)
    _tree(tmp_path, subs)
    render(tmp_path)
    for page in (tmp_path / f"{TABLE.slug}.md", tmp_path / "README.md"):
        html = cmarkgfm.github_flavored_markdown_to_html(page.read_text(encoding="utf-8"), options=Options.CMARK_OPT_UNSAFE)
        assert "<script" not in html and "<img" not in html and "evil.example/" not in html.split("<code>")[0]
        hrefs = [h.split('"')[0] for h in html.split('href="')[1:]]
        assert all(not h.startswith(("http", "mailto", "www")) and "evil" not in h for h in hrefs), hrefs
        # the page's ranking is its first table; in README.md the one after the table's heading
        after = html.split(f'href="{TABLE.slug}.md">')[-1] if page.name == "README.md" else html
        table_html = after.split("<table>")[1].split("</table>")[0]
        body_rows = table_html.split("<tbody>")[1].split("<tr>")[1:]
        assert len(body_rows) == len(HOSTILE)
        assert all(r.count("<td") == 11 for r in body_rows), body_rows
    page = (tmp_path / f"{TABLE.slug}.md").read_text(encoding="utf-8")
    assert "`<script>alert(1)</script>`" in page  # shown, as text


# --- the published files -------------------------------------------------------------------------

def test_published_schema_and_protocol_match_the_code() -> None:
    import jsonschema

    assert (ROOT / "leaderboards" / "schema" / "submission.schema.json").read_text(encoding="utf-8") == schema_text()
    assert (ROOT / "leaderboards" / "protocol.json").read_text(encoding="utf-8") == protocol_text()
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_committed_submissions_keep_the_protocol_and_have_records() -> None:
    """Every committed entry keeps its table's protocol and carries a record of its exact bytes: a ✓ record with
    the verifier's held-out draws for every sim entry. The real-target (smol) entries' records may predate the
    draws (outdated: listed unranked; their rerun costs ~40 min of 2 CPU cores: leaderboards/README.md)."""
    subs = sorted((ROOT / "leaderboards" / "submissions").glob("*.json"))
    assert subs, "the baseline entries are committed"
    for path in subs:
        sub = load_submission(path)
        assert protocol_violation(sub.data) is None, path
        table = table_for(sub.data["env"]["id"], sub.data["target"]["model"])
        state = status(ROOT / "leaderboards", sub, table)
        assert state.state == "verified" or (table.target != "sim" and state.state == "outdated"), (path, state)
        if state.state == "verified":
            assert state.draws is not None and len(state.draws) == table.episodes, path


def _drift_guarded(path: Path) -> bool:
    """Every sim entry; of the real-target (smol) entries, whose episode costs minutes on a CPU, the
    template one (the baseline runs and a patched run of the shipped adapter)."""
    return "-smol-" not in path.stem or path.stem.endswith("-template")


@pytest.mark.parametrize("path", [p for p in sorted((ROOT / "leaderboards" / "submissions").glob("*.json"))
                                  if _drift_guarded(p)], ids=lambda p: p.stem)
def test_committed_entries_still_reproduce(path: Path) -> None:
    """The first episode of a committed entry reproduces exactly (a drift guard; the full rerun is verify's)."""
    verdict = verify_submission(load_submission(path).data, limit=1)
    assert verdict.accepted, verdict.message


def test_rebuild_baselines_regenerates_verified_entries(tmp_path: Path) -> None:
    from harness_gym.leaderboard.rebuild import rebuild_baselines

    written = rebuild_baselines(tmp_path, "sim", policies=("noop",), env_ids=[ENV], runs=tmp_path / "runs",
                                say=lambda _m: None)
    entry = tmp_path / "submissions" / "dbbench-noop.json"
    assert entry in written and (tmp_path / "verified" / "dbbench-noop.json") in written
    assert status(tmp_path, load_submission(entry), TABLE).state == "verified"
    assert "| 1 | [dbbench-noop](submissions/dbbench-noop.json) |" in (tmp_path / f"{TABLE.slug}.md").read_text(encoding="utf-8")


# --- held-out Δ counts every episode; odd strings and records never crash, never lose a record -------

def _blank(ep: dict, reward: float) -> None:
    """Episode ``ep`` with its patch replaced by text that does not parse, claimed as the env scores it."""
    ep.update(patch="no patch here", patch_valid=False,
              claimed={"reward": reward, "baseline_score": ep["claimed"]["baseline_score"], "patched_score": None,
                       "heldout_delta": None})


def test_blanking_episodes_never_helps_the_heldout_mean(honest: dict) -> None:
    """A submitter who sees every episode's held-out Δ in bench output blanks the bad ones with an invalid
    patch: every claim is honest and reproduces, but each blanked episode counts on the held-out side at
    the env's own invalid-patch reward (as on the same-batch side), never drops out of the mean."""
    from harness_gym.leaderboard.records import Status
    from harness_gym.leaderboard.render import summarize

    env = make_env(TABLE)
    try:
        env.reset(seed=0)
        _, invalid, _, _, sinfo = env.step("no patch here")
    finally:
        env.close()
    assert sinfo["patch_valid"] is False and invalid < 0
    held = [e["claimed"]["heldout_delta"] for e in honest["episodes"]]
    keep = max(range(len(held)), key=held.__getitem__)
    cherry = copy.deepcopy(honest)
    for i, ep in enumerate(cherry["episodes"]):
        if i != keep:
            _blank(ep, invalid)
    assert verify_submission(cherry).outcome == REPRODUCED  # honest claims: only the summary can stop it
    row = summarize(cherry, Status("verified"))
    assert row.heldout is not None and row.heldout.n == TABLE.episodes
    assert row.heldout.mean == pytest.approx((held[keep] + invalid * (TABLE.episodes - 1)) / TABLE.episodes)


def test_cherry_picked_heldout_does_not_outrank_a_steady_entry(tmp_path: Path) -> None:
    cherry = _fake("cherry", [0.0], [0.5])
    for ep in cherry["episodes"][1:]:
        _blank(ep, -0.1)
    _record_all(tmp_path, _tree(tmp_path, [cherry, _fake("steady", [0.05], [0.05])]))
    render(tmp_path)
    page = (tmp_path / f"{TABLE.slug}.md").read_text(encoding="utf-8")
    assert _ranked_rows(page) == ["[steady](submissions/steady.json)", "[cherry](submissions/cherry.json)"]
    assert "| 10 | -0.040 [" in page  # (0.5 - 9 × 0.1) / 10, over all ten episodes


def test_valid_patch_without_heldout_delta_breaks_the_protocol(forge: Callable, tmp_path: Path) -> None:
    msg = _rejected(forge(lambda s: s["episodes"][2]["claimed"].update(heldout_delta=None)),
                    starts="rejected: episode 2: heldout_delta is null for a valid patch")
    assert "held-out batch of 10" in msg
    _tree(tmp_path, [_fake("no-heldout", [0.9], None)])
    with pytest.raises(SubmissionError, match=r"no-heldout\.json: episode 0: heldout_delta is null for a valid patch"):
        render(tmp_path)


def test_rows_of_a_table_without_heldout_batch_rank_on_same_batch_delta() -> None:
    from harness_gym.leaderboard.records import Status
    from harness_gym.leaderboard.render import summarize, table

    subs = [_fake("a", [0.1], [0.3]), _fake("b", [0.9], None)]
    for s in subs:
        s["env"]["kwargs"]["heldout_batch_size"] = 0
    rows = [summarize(s, Status("verified")) for s in subs]
    assert [r.heldout for r in rows] == [None, None]  # no held-out batch: a claimed number means nothing
    text = table(rows)
    assert text.index("| 1 | b |") < text.index("| 2 | a |") and "same-batch Δ (no held-out numbers)" in text


@pytest.mark.parametrize("item", ["\ud800gen-test:36", "x\nlb/submissions/x.json: accepted: all good", "a\x00b",
                                  "a\u2028b", "a\u202eb", "\udfff", "gen-test:36\n"])
def test_batch_items_are_one_line_of_text(forge: Callable, item: str) -> None:
    msg = _rejected(forge(lambda s: s["episodes"][0]["batch"].__setitem__(0, item)),
                    starts="rejected: schema: $.episodes[0].batch[0]: ")
    assert msg.isprintable() and msg.encode("utf-8")


@pytest.mark.parametrize(("where", "value"), [(("policy",), "noop\n"), (("package", "version"), "0.1.0\n"),
                                              (("description",), "x\ud800")])
def test_a_final_newline_or_lone_surrogate_breaks_one_line_fields(forge: Callable, where: tuple, value: str) -> None:
    """``$`` ends the string as in ECMA-262: Python's ``re`` also matched it before a final newline."""
    def put(s: dict) -> None:
        parent = s
        for key in where[:-1]:
            parent = parent[key]
        parent[where[-1]] = value
    _rejected(forge(put), starts=f"rejected: schema: $.{'.'.join(where)}: ")


@pytest.mark.parametrize("value", ["\ud800", "a\nb", "ok", "é–…", ["x\r\ny", "\udfff", "z", "w"], None, 0.5])
def test_quoted_strings_in_messages_are_one_printable_line(value: Any) -> None:
    from harness_gym.leaderboard.verify import _fmt

    s = _fmt(value)
    assert s.isprintable() and s.encode("utf-8"), s


def test_verify_record_of_an_odd_file_keeps_the_old_record(honest: dict, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    (path,) = _tree(tmp_path, [{**copy.deepcopy(honest), "name": "h"}])
    _record_all(tmp_path, [path])
    record = tmp_path / "verified" / "h.json"
    before = record.read_bytes()
    for item in ("\ud800gen-test:36", "x\nh.json: accepted: all good"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["episodes"][0]["batch"][0] = item
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")  # ensure_ascii: "\ud800" is valid JSON
        assert lb_main(["leaderboard", "verify", "-q", "--record", "--dir", str(tmp_path), str(path)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"{path}: rejected: ") and "\ud800" not in err, err
        assert record.read_bytes() == before


def test_a_failed_record_write_leaves_the_old_record(honest: dict, tmp_path: Path) -> None:
    from harness_gym.leaderboard.verify import Verdict

    (path,) = _tree(tmp_path, [{**copy.deepcopy(honest), "name": "h"}])
    _record_all(tmp_path, [path])
    record = tmp_path / "verified" / "h.json"
    before = record.read_bytes()
    with pytest.raises(UnicodeEncodeError):
        write_record(tmp_path, load_submission(path), Verdict(REJECTED, 0, "rejected: \ud800", TABLE.key), TABLE)
    assert record.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "verified").iterdir()) == ["h.json"]  # no temp file left behind


def test_verify_record_onto_a_directory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (path,) = _tree(tmp_path, [_fake("a", [0.1], [0.1])])  # rejected at episode 0's batch: a quick rerun
    (tmp_path / "verified" / "a.json").mkdir(parents=True)
    assert lb_main(["leaderboard", "verify", "-q", "--record", "--dir", str(tmp_path), str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[1].startswith(f"{path}: record {tmp_path / 'verified' / 'a.json'} not written ("), err
    assert [p.name for p in (tmp_path / "verified").iterdir()] == ["a.json"]


@pytest.mark.parametrize("breakage", ["verifier_empty", "verifier_version_list", "sha_list", "episodes_checked_text",
                                      "directory", "empty_file"])
def test_a_malformed_record_is_one_line_naming_the_file(tmp_path: Path, breakage: str,
                                                        capsys: pytest.CaptureFixture) -> None:
    """A record that parses but is not a record (or is not a file) stops render with one line naming it,
    like a record that is not JSON: records come only from the maintainers, so a broken one is theirs to fix."""
    paths = _tree(tmp_path, [_fake("a", [0.1], [0.1])])
    _record_all(tmp_path, paths)
    record = tmp_path / "verified" / "a.json"
    rec = json.loads(record.read_text(encoding="utf-8"))
    if breakage == "directory":
        record.unlink()
        record.mkdir()
    elif breakage == "empty_file":
        record.write_bytes(b"")
    else:
        if breakage == "verifier_empty":
            rec["verifier"] = {}
        elif breakage == "verifier_version_list":
            rec["verifier"]["version"] = ["0.1.0"]
        elif breakage == "sha_list":
            rec["submission_sha256"] = [rec["submission_sha256"]]
        else:
            rec["episodes_checked"] = "lots"
        record.write_text(json.dumps(rec), encoding="utf-8")
    with pytest.raises(SubmissionError, match=rf"^{re.escape(str(record))}: .*rerun"):
        render(tmp_path)
    assert lb_main(["leaderboard", "render", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(record) in err, err
