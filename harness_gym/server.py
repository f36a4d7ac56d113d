"""``harness-gym serve``: any ``HarnessEdit-*`` env over OpenEnv's protocol, for trainers on other machines.

The server is ``openenv-core``'s FastAPI app (``/ws`` WebSocket sessions, plus ``/reset``,
``/step``, ``/state``, ``/health``, ``/schema``): every WebSocket session gets its own env
(``gym.make(env_id, **env_kwargs)``), closed when the session ends; at most
``max_sessions`` run at once and a session over the limit is refused with OpenEnv's
``CAPACITY_REACHED`` error. ``GET /sessions`` reports the open sessions and envs.

A trainer uses ``HarnessEditClient`` (an OpenEnv ``EnvClient``)::

    with HarnessEditClient(base_url="http://127.0.0.1:8000").sync() as env:
        r = env.reset(seed=0)                       # r.observation.text: the packet observation
        r = env.step(HarnessEditAction(patch=text))  # r.reward: Δ_B; r.observation.info: the step info

``reset(seed=s)`` gives the packet a local ``gym.make(env_id).reset(seed=s)`` gives. The
plain HTTP ``/reset`` and ``/step`` are OpenEnv's stateless endpoints (a fresh env per
request): use a WebSocket session for episodes. Needs ``pip install 'harness-gym[openenv]'``.
"""
from __future__ import annotations

import functools
import threading
from typing import Any

from harness_gym.errors import ConfigError, one_line

OPENENV_EXTRA = "pip install 'harness-gym[openenv]' (openenv-core)"

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as exc:  # the extra is optional; say how to get it
    raise ConfigError(f"harness-gym serve needs openenv-core: {OPENENV_EXTRA} ({exc})") from None


class HarnessEditAction(Action):
    """A patch: Harness-R1 JSON, a unified diff or a hook module (as ``HarnessEditEnv.step``)."""

    patch: str


class HarnessEditObservation(Observation):
    """The observation text and the env's ``info`` dict (packet, scores, patch error …)."""

    text: str = ""
    info: dict[str, Any] = {}


class HarnessEditState(State):
    env_id: str = ""
    edits: int = 0
    batch_digest: str = ""


class _Counter:
    """Envs open in this process (sessions release theirs on close)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open = 0

    def add(self, k: int) -> None:
        with self.lock:
            self.open += k


OPEN_ENVS = _Counter()


class HarnessEditEnvironment(Environment):
    """One session's ``HarnessEdit-*`` env behind OpenEnv's ``Environment`` interface."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session owns its env, evaluator and sandbox

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        import gymnasium as gym

        import harness_gym  # noqa: F401 - registers the env ids

        self.env_id = env_id
        self.env = gym.make(env_id, **(env_kwargs or {}))
        self._closed = False
        OPEN_ENVS.add(1)
        self._state = HarnessEditState(env_id=env_id)
        self._reset_done = False

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              options: dict[str, Any] | None = None, **kwargs: Any) -> HarnessEditObservation:
        text, info = self.env.reset(seed=seed, options=options)
        self._reset_done = True
        self._state = HarnessEditState(env_id=self.env_id, episode_id=episode_id, step_count=0,
                                       batch_digest=info["batch_digest"])
        return HarnessEditObservation(text=text, info=info, done=False, reward=None)

    def step(self, action: HarnessEditAction, timeout_s: float | None = None, **kwargs: Any) -> HarnessEditObservation:
        if not self._reset_done:
            msg = ("reset first: this env has no batch yet (OpenEnv's HTTP /step makes a fresh env per request; "
                   "run episodes over a WebSocket session, e.g. harness_gym.server.HarnessEditClient)")
            return HarnessEditObservation(text="", info={"error": msg}, done=True, reward=None)
        text, reward, terminated, truncated, info = self.env.step(action.patch)
        self._state.step_count += 1
        self._state.edits += 1
        return HarnessEditObservation(text=text, info=info, done=bool(terminated or truncated), reward=float(reward))

    @property
    def state(self) -> HarnessEditState:
        return self._state

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            OPEN_ENVS.add(-1)
            self.env.close()


def create_app(env_id: str, *, max_sessions: int = 4, env_kwargs: dict[str, Any] | None = None) -> Any:
    """The FastAPI app serving ``env_id`` (checked here: an unknown id or bad kwargs fail before serving)."""
    import gymnasium as gym

    import harness_gym  # noqa: F401

    if not env_id.startswith("HarnessEdit-") or env_id not in gym.registry:
        from harness_gym.envs.registration import ENV_IDS

        raise ConfigError(f"--env {env_id!r}: expected a registered HarnessEdit env id, one of {list(ENV_IDS)}")
    if max_sessions < 1:
        raise ConfigError(f"--max-sessions {max_sessions}: expected an integer >= 1")
    probe = HarnessEditEnvironment(env_id, env_kwargs)  # bad kwargs raise here, once, with the env's message
    probe.close()
    from fastapi import FastAPI

    factory = functools.partial(HarnessEditEnvironment, env_id, dict(env_kwargs or {}))
    server = HTTPEnvServer(factory, HarnessEditAction, HarnessEditObservation, max_concurrent_envs=max_sessions)
    app = FastAPI(title=f"harness-gym: {env_id}", description=__doc__.splitlines()[0])
    server.register_routes(app)

    @app.get("/sessions")
    def sessions() -> dict[str, Any]:
        """Open WebSocket sessions, the limit, and envs still open in this process."""
        return {"env_id": env_id, "active_sessions": server.active_sessions, "max_sessions": max_sessions,
                "open_envs": OPEN_ENVS.open}

    return app


def serve(env_id: str, *, host: str = "127.0.0.1", port: int = 8000, max_sessions: int = 4,
          env_kwargs: dict[str, Any] | None = None) -> int:
    """Serve ``env_id`` until interrupted (``harness-gym serve``)."""
    import uvicorn

    app = create_app(env_id, max_sessions=max_sessions, env_kwargs=env_kwargs)
    print(f"harness-gym: serving {env_id} on http://{host}:{port} (WebSocket /ws, at most {max_sessions} sessions)",
          flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0


class HarnessEditClient(EnvClient[HarnessEditAction, HarnessEditObservation, HarnessEditState]):
    """OpenEnv client of a ``harness-gym serve`` server: one WebSocket session, one env."""

    def _step_payload(self, action: HarnessEditAction) -> dict[str, Any]:
        return {"patch": action.patch}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[HarnessEditObservation]:
        obs = payload.get("observation", {})
        observation = HarnessEditObservation(text=obs.get("text", ""), info=obs.get("info", {}),
                                             done=payload.get("done", False), reward=payload.get("reward"))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> HarnessEditState:
        return HarnessEditState(**payload)

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        """As ``EnvClient``'s, but a session the server refused on connect (its error is already queued,
        the socket closed) reads as that error, and server errors read as one line with the fix."""
        from websockets.exceptions import ConnectionClosed

        try:
            await self._send(message)
        except ConnectionClosed:
            pass  # a refused session: the server's error message is still queued
        try:
            response = await self._receive()
        except ConnectionClosed as exc:
            raise ConnectionError(f"the harness-gym server at {self._ws_url} closed the session ({exc})") from None
        if response.get("type") == "error":
            data = response.get("data", {})
            code = data.get("code", "UNKNOWN")
            fix = ("; close a session or start the server with a larger --max-sessions"
                   if code == "CAPACITY_REACHED" else "")
            raise RuntimeError(one_line(f"Server error: {data.get('message', 'unknown error')} (code: {code}){fix}"))
        return response
