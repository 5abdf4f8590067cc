"""Discovery: health, models, capabilities, toolsets, ``/health/detailed``, ``/v1/skills`` and model
options (hermes-wire/42, 70).

``/v1/capabilities`` is static (byte-identical with tools on or off); ``/v1/toolsets`` reports
``enabled`` per toolset from the emulator's ``toolsets``; ``/health/detailed`` counts active runs.
"""

from __future__ import annotations

import copy
import os
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..routes import Route
from ..wire import HERMES_VERSION, JSONDict

if TYPE_CHECKING:
    from ..exchange import Exchange
    from ..state import EmulatorState
    from ..versions import Behaviour

# fmt: off
CAPABILITIES: JSONDict = {'object': 'hermes.api_server.capabilities',
 'platform': 'hermes-agent',
 'model': 'hermes-agent',
 'auth': {'type': 'bearer', 'required': True},
 'runtime': {'mode': 'server_agent',
             'tool_execution': 'server',
             'split_runtime': False,
             'description': 'The API server creates a server-side Hermes AIAgent; tools execute on the '
                            'API-server host unless a future explicit split-runtime mode is enabled.'},
 'features': {'chat_completions': True,
              'chat_completions_streaming': True,
              'responses_api': True,
              'responses_streaming': True,
              'run_submission': True,
              'run_status': True,
              'run_events_sse': True,
              'run_stop': True,
              'run_approval_response': True,
              'tool_progress_events': True,
              'approval_events': True,
              'session_resources': True,
              'session_chat': True,
              'session_chat_streaming': True,
              'session_fork': True,
              'admin_config_rw': False,
              'jobs_admin': False,
              'memory_write_api': False,
              'skills_api': True,
              'audio_api': False,
              'realtime_voice': False,
              'session_continuity_header': 'X-Hermes-Session-Id',
              'session_key_header': 'X-Hermes-Session-Key',
              'cors': False},
 'endpoints': {'health': {'method': 'GET', 'path': '/health'},
               'health_detailed': {'method': 'GET', 'path': '/health/detailed'},
               'models': {'method': 'GET', 'path': '/v1/models'},
               'chat_completions': {'method': 'POST', 'path': '/v1/chat/completions'},
               'responses': {'method': 'POST', 'path': '/v1/responses'},
               'runs': {'method': 'POST', 'path': '/v1/runs'},
               'run_status': {'method': 'GET', 'path': '/v1/runs/{run_id}'},
               'run_events': {'method': 'GET', 'path': '/v1/runs/{run_id}/events'},
               'run_approval': {'method': 'POST', 'path': '/v1/runs/{run_id}/approval'},
               'run_stop': {'method': 'POST', 'path': '/v1/runs/{run_id}/stop'},
               'skills': {'method': 'GET', 'path': '/v1/skills'},
               'toolsets': {'method': 'GET', 'path': '/v1/toolsets'},
               'sessions': {'method': 'GET', 'path': '/api/sessions'},
               'session_create': {'method': 'POST', 'path': '/api/sessions'},
               'session': {'method': 'GET', 'path': '/api/sessions/{session_id}'},
               'session_update': {'method': 'PATCH', 'path': '/api/sessions/{session_id}'},
               'session_delete': {'method': 'DELETE', 'path': '/api/sessions/{session_id}'},
               'session_messages': {'method': 'GET', 'path': '/api/sessions/{session_id}/messages'},
               'session_fork': {'method': 'POST', 'path': '/api/sessions/{session_id}/fork'},
               'session_chat': {'method': 'POST', 'path': '/api/sessions/{session_id}/chat'},
               'session_chat_stream': {'method': 'POST', 'path': '/api/sessions/{session_id}/chat/stream'}}}

TOOLSETS: list[JSONDict] = [{'name': 'web',
  'label': '🔍 Web Search & Scraping',
  'description': 'web_search, web_extract',
  'configured': True,
  'tools': ['web_extract', 'web_search']},
 {'name': 'browser',
  'label': '🌐 Browser Automation',
  'description': 'navigate, click, type, scroll',
  'configured': True,
  'tools': ['browser_back',
            'browser_cdp',
            'browser_click',
            'browser_console',
            'browser_dialog',
            'browser_get_images',
            'browser_navigate',
            'browser_press',
            'browser_scroll',
            'browser_snapshot',
            'browser_type',
            'browser_vision',
            'web_search']},
 {'name': 'terminal',
  'label': '💻 Terminal & Processes',
  'description': 'terminal, process',
  'configured': True,
  'tools': ['close_terminal', 'process', 'read_terminal', 'terminal']},
 {'name': 'file',
  'label': '📁 File Operations',
  'description': 'read, write, patch, search',
  'configured': True,
  'tools': ['patch', 'read_file', 'search_files', 'write_file']},
 {'name': 'code_execution',
  'label': '⚡ Code Execution',
  'description': 'execute_code',
  'configured': True,
  'tools': ['execute_code']},
 {'name': 'vision',
  'label': '👁️  Vision / Image Analysis',
  'description': 'vision_analyze',
  'configured': True,
  'tools': ['vision_analyze']},
 {'name': 'video',
  'label': '🎬 Video Analysis',
  'description': 'video_analyze (requires video-capable model)',
  'configured': True,
  'tools': ['video_analyze']},
 {'name': 'image_gen',
  'label': '🎨 Image Generation',
  'description': 'image_generate',
  'configured': True,
  'tools': ['image_generate']},
 {'name': 'video_gen',
  'label': '🎬 Video Generation',
  'description': 'video_generate (text/image/reference)',
  'configured': True,
  'tools': ['video_generate', 'xai_video_edit', 'xai_video_extend']},
 {'name': 'x_search',
  'label': '🐦 X (Twitter) Search',
  'description': 'x_search (requires xAI OAuth or XAI_API_KEY)',
  'configured': True,
  'tools': ['x_search']},
 {'name': 'tts',
  'label': '🔊 Text-to-Speech',
  'description': 'text_to_speech',
  'configured': True,
  'tools': ['text_to_speech']},
 {'name': 'skills',
  'label': '📚 Skills',
  'description': 'list, view, manage',
  'configured': True,
  'tools': ['skill_manage', 'skill_view', 'skills_list']},
 {'name': 'todo', 'label': '📋 Task Planning', 'description': 'todo', 'configured': True, 'tools': ['todo']},
 {'name': 'memory',
  'label': '💾 Memory',
  'description': 'persistent memory across sessions',
  'configured': True,
  'tools': ['memory']},
 {'name': 'context_engine',
  'label': '🧩 Context Engine',
  'description': 'runtime tools from the active context engine',
  'configured': True,
  'tools': []},
 {'name': 'session_search',
  'label': '🔎 Session Search',
  'description': 'search past conversations',
  'configured': True,
  'tools': ['session_search']},
 {'name': 'clarify',
  'label': '❓ Clarifying Questions',
  'description': 'clarify',
  'configured': True,
  'tools': ['clarify']},
 {'name': 'delegation',
  'label': '👥 Task Delegation',
  'description': 'delegate_task',
  'configured': True,
  'tools': ['delegate_task']},
 {'name': 'cronjob',
  'label': '⏰ Cron Jobs',
  'description': 'create/list/update/pause/resume/run, with optional attached skills',
  'configured': True,
  'tools': ['cronjob']},
 {'name': 'homeassistant',
  'label': '🏠 Home Assistant',
  'description': 'smart home device control',
  'configured': False,
  'tools': ['ha_call_service', 'ha_get_state', 'ha_list_entities', 'ha_list_services']},
 {'name': 'spotify',
  'label': '🎵 Spotify',
  'description': 'playback, search, playlists, library',
  'configured': True,
  'tools': ['spotify_albums',
            'spotify_devices',
            'spotify_library',
            'spotify_playback',
            'spotify_playlists',
            'spotify_queue',
            'spotify_search']},
 {'name': 'discord',
  'label': '💬 Discord (read/participate)',
  'description': 'fetch messages, search members, create thread',
  'configured': True,
  'tools': ['discord']},
 {'name': 'discord_admin',
  'label': '🛡️  Discord Server Admin',
  'description': 'list channels/roles, pin, assign roles',
  'configured': True,
  'tools': ['discord_admin']},
 {'name': 'yuanbao',
  'label': '🤖 Yuanbao',
  'description': 'group info, member queries, DM',
  'configured': True,
  'tools': ['yb_query_group_info',
            'yb_query_group_members',
            'yb_search_sticker',
            'yb_send_dm',
            'yb_send_sticker']},
 {'name': 'computer_use',
  'label': '🖱️  Computer Use (macOS/Windows/Linux)',
  'description': 'background desktop control via cua-driver',
  'configured': True,
  'tools': ['computer_use']}]
# fmt: on

_STARTED = datetime.now(timezone.utc).isoformat()


def capabilities(behaviour: Behaviour | None = None) -> JSONDict:
    """0.19's capabilities, plus the features and endpoints a newer ``behaviour`` adds."""
    caps = copy.deepcopy(CAPABILITIES)
    if behaviour is None:
        return caps
    features, endpoints = caps["features"], caps["endpoints"]
    assert isinstance(features, dict) and isinstance(endpoints, dict)  # CAPABILITIES' own objects
    if behaviour.steer:
        features.update(run_steer=True, model_options=True, session_model_lock=True)
        endpoints["run_steer"] = {"method": "POST", "path": "/v1/runs/{run_id}/steer"}
        endpoints["model_options"] = {"method": "GET", "path": "/api/model/options"}
        endpoints["session_model_lock"] = {"method": "POST", "path": "/api/sessions/{session_id}/model"}
    if behaviour.runs_idempotency:
        features["runs_idempotency"] = {"supported": True, "durable": True, "retention_seconds": 86400}
        features["reasoning_streaming"] = True
    return caps


def handle_model_options(ex: Exchange) -> None:
    """``GET /api/model/options`` (0.20+): the configured provider and its one model."""
    ex.send_json(200, {"providers": [{"slug": "custom", "name": "Custom endpoint", "is_current": True,
                                      "is_user_defined": True, "models": ["fake-model"], "total_models": 1,
                                      "source": "config", "authenticated": True}]})


def toolsets(enabled: tuple[str, ...]) -> JSONDict:
    data = []
    for entry in TOOLSETS:
        tools = entry["tools"]
        assert isinstance(tools, list)  # TOOLSETS' own lists
        item: JSONDict = {"name": entry["name"], "label": entry["label"], "description": entry["description"]}
        item.update(enabled=entry["name"] in enabled, configured=entry["configured"], tools=list(tools))
        data.append(item)
    return {"object": "list", "platform": "api_server", "data": data}


def health_detailed(active_api_runs: int, version: str = HERMES_VERSION) -> JSONDict:
    """Shape of hermes-wire/42; ``active_api_runs`` counts queued, running and waiting runs."""
    return {
        "status": "ok",
        "readiness": {
            "status": "ok",
            "checks": {
                "state_db": {"status": "ok"},
                "config": {"status": "ok"},
                "model": {"status": "ok"},
                "disk": {"status": "ok", "used_percent": 9.3, "free_bytes": 83732107264},
                "gateway": {"status": "ok", "state": "running", "connected_platforms": 1, "platforms": 1},
                "background_queues": {
                    "status": "ok",
                    "active_api_runs": active_api_runs,
                    "process_completions": 0,
                    "active_delegations": 0,
                },
            },
        },
        "platform": "hermes-agent",
        "version": version,
        "gateway_state": "running",
        "platforms": {
            "api_server": {
                "state": "connected",
                "error_code": None,
                "error_message": None,
                "updated_at": _STARTED,
            }
        },
        "active_agents": active_api_runs,
        "gateway_busy": active_api_runs > 0,
        "gateway_drainable": True,
        "exit_reason": None,
        "updated_at": datetime.fromtimestamp(time.time(), timezone.utc).isoformat(),
        "pid": os.getpid(),
    }


def skills(entries: list[dict[str, object]]) -> JSONDict:
    """``GET /v1/skills`` (hermes-wire/70): name, description, category; sorted by (category or "", name)."""
    data: list[JSONDict] = [
        {"name": str(e["name"]), "description": str(e.get("description") or ""), "category": e.get("category")}
        for e in entries
    ]
    # a category is a skills/ directory name (str) or None; name is a str above
    data.sort(key=lambda e: (str(e["category"] or ""), str(e["name"])))
    return {"object": "list", "data": data}


def models() -> JSONDict:
    """``GET /v1/models``: the one model, ``hermes-agent``."""
    return {
        "object": "list",
        "data": [
            {
                "id": "hermes-agent",
                "object": "model",
                "created": int(time.time()),
                "owned_by": "hermes",
                "permission": [],
                "root": "hermes-agent",
                "parent": None,
            }
        ],
    }


def _health(ex: Exchange) -> None:
    ex.send_json(200, {"status": "ok", "platform": "hermes-agent", "version": ex.state.behaviour.reported})


def _models(ex: Exchange) -> None:
    ex.send_json(200, models())


def _capabilities(ex: Exchange) -> None:
    ex.send_json(200, capabilities(ex.state.behaviour))


def _toolsets(ex: Exchange) -> None:
    ex.send_json(200, toolsets(ex.state.model.toolbox.toolsets))


def _health_detailed(ex: Exchange) -> None:
    ex.send_json(200, health_detailed(ex.state.active_api_runs, ex.state.behaviour.reported))


def _skills(ex: Exchange) -> None:
    ex.send_json(200, skills(ex.state.skills))


class DiscoveryControl:
    """``emulator.discovery``: the skills ``/v1/skills`` lists."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state

    @property
    def skills(self) -> list[dict[str, object]]:
        """``/v1/skills`` entries (``name``, ``description``, ``category``); mutable, cleared by ``reset()``."""
        return self._state.skills

    def add_skill(self, name: str, description: str = "", category: str | None = None) -> None:
        """Install a skill, as a ``HERMES_HOME/skills/[category/]name/SKILL.md`` would."""
        self._state.skills.append({"name": name, "description": description, "category": category})


def reset(state: EmulatorState) -> None:
    """Uninstall every skill."""
    state.skills.clear()


_GET = ("GET", "HEAD")
ROUTES = (
    Route(_GET, "/health", _health, auth=False),
    Route(_GET, "/v1/health", _health, auth=False),
    Route(_GET, "/v1/models", _models),
    Route(_GET, "/v1/capabilities", _capabilities),
    Route(_GET, "/v1/toolsets", _toolsets),
    Route(_GET, "/health/detailed", _health_detailed),
    Route(("GET",), "/v1/skills", _skills),
    Route(("GET",), "/api/model/options", handle_model_options, since="model_options"),
)

CONTROL = DiscoveryControl
