"""Original-format loading, download over HTTP, server mode and task identity."""
from __future__ import annotations

import functools
import http.server
import socket
import threading
from pathlib import Path

import pytest

from harness_gym.errors import ConfigError, TaskDataError, WorldError
from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.evaluation.evaluator import Evaluator
from harness_gym.models.factory import make_backend
from harness_gym.benchmarks.base import digest
from harness_gym.benchmarks.webshop import data
from harness_gym.benchmarks.webshop.catalog import get_catalog, load_split
from harness_gym.benchmarks.webshop.client import HTTPWorld, world_factory
from harness_gym.benchmarks.webshop.server import make_server
from harness_gym.benchmarks.webshop.world import WebShopWorld

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "webshop"


def test_loader_builds_human_goals_the_original_way():
    tasks = load_split("test", FIXTURES)
    cat = get_catalog(tasks[0].catalog)
    assert len(cat.products) == 4  # the duplicate asin is skipped
    lotion = cat.products["B000VOHH8I"]
    assert lotion.options == (("size", ("2.5 fl oz", "6.76 fl oz (pack of 1)")), ("scent", ("lavender", "unscented")))
    assert lotion.attributes == ("paraben free", "dry skin") and cat.products["B09HOODIE2"].attributes == ("DUMMY_ATTR",)
    assert cat.products["B08ABCDEF1"].options[0] == ("color", ("black", "navy | blue"))
    assert cat.products["B09HOODIE2"].pricing == (100.0,)
    assert len(tasks) == 3  # one instruction with empty attributes is skipped
    for t in tasks:
        g = t.goal
        price = cat.prices[g["asin"]]
        bounds = [10.0 * i for i in range(1, 100) if 10.0 * i > price][:4]
        if len(bounds) >= 2:
            assert g["price_upper"] in bounds[1:] and g["instruction_text"].endswith(f", and price lower than {g['price_upper']:.2f} dollars")
        assert not g["instruction_text"].split(", and price")[0].endswith(".")
    assert 5.49 <= cat.prices["B07XYZ1234"] <= 9.99
    assert load_split("valid", FIXTURES) == [] and load_split("train", FIXTURES) == []


def test_task_identity_is_the_harness_r1_manifest():
    t = load_split("test", None)[3]
    m = t.manifest()
    payload = {k: v for k, v in m.items() if k != "sha256"}
    assert m["protocol"] == "webshop_task_manifest_v1" and m["goal_seed"] == 233 and m["index"] == 3
    assert m["instruction_sha256"] == digest(t.instruction) and m["goal_sha256"] == digest(t.goal)
    assert t.identity() == m["sha256"] == digest(payload)
    assert m["product_prices_sha256"] == digest(get_catalog(t.catalog).prices)
    assert len({x.identity() for x in load_split("test", None)}) == 200


def test_missing_data_gives_clear_errors(tmp_path: Path):
    with pytest.raises(TaskDataError, match="items_shuffle"):
        load_split("test", tmp_path)
    with pytest.raises(TaskDataError, match="split"):
        load_split("dev", None)
    with pytest.raises(ConfigError, match="backend"):
        world_factory("postgres://x")


def _serve_dir(directory: Path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *a, **k: None  # type: ignore[assignment]
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_download_from_a_configurable_url(tmp_path: Path):
    srv = _serve_dir(FIXTURES)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        assert data.main_download(url, tmp_path / "ws") == 0
        for name in data.FILES:
            assert (tmp_path / "ws" / name).read_bytes() == (FIXTURES / name).read_bytes()
        assert not (tmp_path / "ws" / "items_shuffle.json").exists()  # the full set is optional
        assert data.main_download(url + "/missing", tmp_path / "x") == 1
    finally:
        srv.shutdown()
    assert data.main_download(None, tmp_path / "y") == 2


@pytest.fixture()
def server():
    assert get_catalog(load_split("test", None)[0].catalog).engine is not None  # build the index before timing sessions
    srv = make_server(port=0, session_timeout=1.0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", srv
    srv.shutdown()
    srv.server_close()


def test_server_sessions_match_the_local_world_and_are_reclaimed(server):
    url, srv = server
    task = load_split("test", None)[1]
    local, remote = WebShopWorld(), HTTPWorld(url)
    assert local.reset(task) == remote.reset(task)
    other = HTTPWorld(url)
    other.reset(load_split("test", None)[2])
    from harness_gym.types import ToolCall

    for action in ("search[" + task.goal["query"] + "]", "click[next >]", "click[< prev]"):
        a, b = local.act(action), remote.step(ToolCall("1", "action", {"action": action}))
        assert a.observation == b.observation and remote.available_actions() == local.available_actions()
    assert len(srv.store) == 2
    import time

    time.sleep(2.0)
    assert len(srv.store) == 0  # idle sessions reclaimed
    with pytest.raises(WorldError, match="unknown or expired session"):
        remote.step(ToolCall("1", "action", {"action": "click[next >]"}))


def test_env_runs_through_the_server_and_a_dead_server_is_an_env_error(server):
    url, _ = server
    spec = get_benchmark("webshop")
    tasks = spec.load_tasks("test", None)[:4]
    ev_local = Evaluator(spec, make_backend("sim"), world_backend="local")
    ev_http = Evaluator(spec, make_backend("sim"), world_backend=url)
    try:
        a = ev_local.evaluate(spec.default_harness(), tasks, [0, 1, 2, 3])
        b = ev_http.evaluate(spec.default_harness(), tasks, [0, 1, 2, 3])
        assert [r.reward for r in a] == [r.reward for r in b] and [r.messages for r in a] == [r.messages for r in b]
    finally:
        ev_local.close()
        ev_http.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(WorldError) as err:
        HTTPWorld(dead, timeout=2).reset(tasks[0])
    assert "unreachable" in str(err.value) and "\n" not in str(err.value)
    ev = Evaluator(spec, make_backend("sim"), world_backend=dead, retries=1)
    try:
        res = ev.evaluate(spec.default_harness(), tasks[:1], [0])
    finally:
        ev.close()
    assert res[0].is_env_error and "unreachable" in res[0].error


def test_verify_command_on_the_embedded_default():
    assert data.main_verify("valid", None) == 0
