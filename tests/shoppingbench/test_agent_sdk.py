"""The agent SDK: steps, tool registry, proxy client over real HTTP, sloppy-output parsing, and that the
package runs alone the way the sandbox mounts it (standard library and httpx only)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from shoppingbench import agent_sdk
from shoppingbench.agent_sdk import (
    COMPAT_DIR,
    MAX_FIELD_CHARS,
    MAX_TOOL_CHARS,
    ProxyClient,
    ProxyError,
    Tool,
    ToolNotFoundError,
    compact_fields,
    create_dialogue_step,
    execute_tool_call,
    generate_tool_call_id,
    list_tools,
    parse_model_output,
    register_tool,
    tool_result_text,
)
from shoppingbench.dialogue import DialogueStep, ToolCall
from shoppingbench.dialogue import create_dialogue_step as host_create_dialogue_step
from shoppingbench.scoring.format import step_format
from shoppingbench.tools.serving import running_server

SDK_DIR = Path(agent_sdk.__file__).resolve().parent


# --- steps -------------------------------------------------------------------------------------


def test_a_step_has_the_contract_shape_and_full_format_credit() -> None:
    call = {"name": "find_product", "parameters": {"q": "kettle"}, "tool_call_id": "c1", "result": [{"a": 1}]}
    step = create_dialogue_step("looking", [call], "here you go", "a kettle", 3, timestamp=1.7e9)
    assert step["completion"]["message"] == {"think": "looking", "tool_call": [call],
                                             "response": "here you go"}
    assert step["completion"]["content"] == ('<think>looking</think>\n<tool_call>[{"name": "find_product", '
                                             '"parameters": {"q": "kettle"}}]</tool_call>\n'
                                             '<response>here you go</response>')
    assert step["extra_info"] == {"step": 3, "query": "a kettle", "timestamp": 1.7e9}
    assert step_format(step) == 1.0
    DialogueStep.model_validate(step)


def test_empty_parts_are_left_out_like_the_reference_and_odd_values_still_render() -> None:
    step = create_dialogue_step(think="", tool_results=[], response="", query="q", step=0)
    assert step["completion"]["content"] == "" and step["completion"]["message"] == {}
    assert step_format(step) == 0.0
    odd = create_dialogue_step("t", [{"name": "x", "parameters": {"when": object}}])
    assert "<class 'object'>" in odd["completion"]["content"]
    assert odd["extra_info"]["timestamp"] > 1.7e9


def test_the_host_builder_is_the_sdk_builder_with_typed_calls() -> None:
    done = {"status": "success"}
    typed = host_create_dialogue_step(2, "q", think="t", timestamp=5.0,
                                      tool_calls=[ToolCall(name="terminate", parameters=done)])
    plain = create_dialogue_step("t", [{"name": "terminate", "parameters": done}], None, "q", 2,
                                 timestamp=5.0)
    assert typed == plain


# --- tool registry -----------------------------------------------------------------------------


def test_tool_decorator_forms_and_execution_record() -> None:
    @Tool
    def sdk_test_add(a: int, b: int = 1) -> int:
        return a + b

    @Tool("sdk_test_named")
    def whatever(text: str) -> str:
        return text.upper()

    @Tool()
    def sdk_test_empty() -> str:
        return "ok"

    register_tool("sdk_test_lambda", lambda: 7)
    assert {"sdk_test_add", "sdk_test_named", "sdk_test_empty", "sdk_test_lambda"} <= set(list_tools())
    result = execute_tool_call("sdk_test_add", {"a": 2, "b": 3})
    assert result == {"name": "sdk_test_add", "parameters": {"a": 2, "b": 3},
                      "tool_call_id": generate_tool_call_id("sdk_test_add", {"a": 2, "b": 3}), "result": 5}
    assert execute_tool_call("sdk_test_named", {"text": "x"})["result"] == "X"
    assert whatever("y") == "Y" and sdk_test_empty() == "ok"
    assert generate_tool_call_id("a", {"x": 1}) == generate_tool_call_id("a", {"x": 1}) != \
        generate_tool_call_id("a", {"x": 2})
    assert len(generate_tool_call_id("a", {"x": "\ud800"}, length=12)) == 12
    with pytest.raises(ToolNotFoundError, match="sdk_test_add"):
        execute_tool_call("no_such_tool", {})
    with pytest.raises(TypeError):
        execute_tool_call("sdk_test_add", {"c": 1})
    own = {"sdk_test_add": lambda a: -a}  # an agent's own table wins over the shared registry
    assert execute_tool_call("sdk_test_add", {"a": 2}, own)["result"] == -2
    with pytest.raises(ToolNotFoundError, match=r"registered tools: sdk_test_add$"):
        execute_tool_call("sdk_test_named", {"text": "x"}, own)


# --- proxy client over real HTTP ---------------------------------------------------------------


class Flaky:
    """A proxy stand-in that fails the first ``failures`` calls of a path with ``status``."""

    def __init__(self) -> None:
        self.failures: dict[str, tuple[int, int]] = {}
        self.seen: list[tuple[str, str, dict[str, Any], Any]] = []
        self.lock = threading.Lock()

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.api_route("/{path:path}", methods=["GET", "POST"])
        async def anything(path: str, request: Request) -> Response:
            body = await request.json() if request.method == "POST" else None
            with self.lock:
                self.seen.append((request.method, f"/{path}", dict(request.query_params), body))
                left, status = self.failures.get(f"/{path}", (0, 200))
                if left:
                    self.failures[f"/{path}"] = (left - 1, status)
                    return PlainTextResponse("try later", status_code=status)
            if path == "bad":
                return PlainTextResponse("not json")
            if path == "inference/chat/completions":
                return JSONResponse({"choices": [{"message": {
                    "content": "<think>x</think>", "reasoning_content": "plan",
                    "tool_calls": [{"id": "c", "type": "function",
                                    "function": {"name": "terminate", "arguments": "{}"}}]},
                    "finish_reason": "tool_calls"}], "usage": {"completion_tokens": 3}})
            return JSONResponse([{"product_id": "1", "echo": dict(request.query_params)}])

        return app


@pytest.fixture
def flaky() -> Iterator[tuple[str, Flaky]]:
    server = Flaky()
    with running_server(server.app()) as url:
        yield url, server


def test_retries_server_errors_and_rate_limits_then_answers(flaky: tuple[str, Flaky]) -> None:
    url, server = flaky
    server.failures["/search/find_product"] = (2, 503)
    with ProxyClient(url, retry_delay=0.0, rate_limit_retry_delay=0.0) as client:
        hits = client.find_product("kettle", price="10-20", shop_id=None)
        assert hits[0]["echo"] == {"q": "kettle", "page": "1", "price": "10-20"}
        assert [s[1] for s in server.seen].count("/search/find_product") == 3
        server.failures["/search/view_product_information"] = (1, 429)
        assert client.view_product_information(["1", "2"])[0]["echo"] == {"product_ids": "1,2"}


def test_a_client_error_is_not_retried_and_get_post_answer_none_like_the_reference(
        flaky: tuple[str, Flaky]) -> None:
    url, server = flaky
    server.failures["/search/find_product"] = (5, 422)
    with ProxyClient(url, retry_delay=0.0) as client:
        with pytest.raises(ProxyError, match="422") as raised:
            client.find_product("x")
        assert raised.value.status == 422
        assert [s[1] for s in server.seen].count("/search/find_product") == 1
        assert client.get("/search/find_product", {"q": "x"}) is None
        server.failures["/anything"] = (5, 500)
        assert client.post("/anything", json_data={"a": 1}) is None
        assert [s[0] for s in server.seen[-3:]] == ["POST"] * 3  # 3 attempts in all
        with pytest.raises(ProxyError, match="not JSON"):
            client.request("GET", "/bad")


def test_connection_failures_are_retried_then_reported() -> None:
    with running_server(FastAPI()) as url:
        pass  # the port is closed again
    with ProxyClient(url, max_retries=2, retry_delay=0.0) as client:
        with pytest.raises(ProxyError, match="ConnectError"):
            client.find_product("x")
        assert client.get("/search/find_product", {"q": "x"}) is None


def test_the_url_and_models_come_from_the_sandbox_environment(flaky: tuple[str, Flaky],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    url, server = flaky
    monkeypatch.delenv("SANDBOX_PROXY_URL", raising=False)
    monkeypatch.delenv("SANDBOX_DEFAULT_MODEL", raising=False)
    monkeypatch.setenv("SANDBOX_ALLOWED_MODELS", "m-one, m-two")
    client = ProxyClient(retry_delay=0.0)  # created before the variable exists, as at an agent's import
    with pytest.raises(ProxyError, match="SANDBOX_PROXY_URL"):
        client.find_product("x")
    monkeypatch.setenv("SANDBOX_PROXY_URL", url + "/")
    reply = client.chat([{"role": "user", "content": "hi"}], max_tokens=5)
    method, path, _, body = server.seen[-1]
    assert (method, path) == ("POST", "/inference/chat/completions")
    assert body == {"model": "m-one", "messages": [{"role": "user", "content": "hi"}], "stream": False,
                    "temperature": 0.0, "max_tokens": 5}
    assert reply.content == "<think>x</think>" and reply.reasoning_content == "plan"
    assert reply.tool_calls[0]["function"]["name"] == "terminate" and reply.usage == {"completion_tokens": 3}
    monkeypatch.setenv("SANDBOX_DEFAULT_MODEL", "m-two")
    client.chat([{"role": "user", "content": "hi"}], tools=[{"type": "function"}])
    assert server.seen[-1][3]["model"] == "m-two" and server.seen[-1][3]["tools"] == [{"type": "function"}]
    with pytest.raises(ProxyError, match="not allowed") as refused:
        client.chat([{"role": "user", "content": "hi"}], model="gpt-huge")
    assert refused.value.status == 403
    client.close()


# --- parsing sloppy model output ---------------------------------------------------------------


@pytest.mark.parametrize(("content", "reasoning", "think", "calls", "response"), [
    ('<think>a</think><tool_call>[{"name": "f", "parameters": {"q": "x"}}]</tool_call>', None,
     "a", [("f", {"q": "x"})], None),
    ('<think>a</think>\n<tool_call>\n```json\n{"name": "f", "arguments": "{\\"q\\": 1}"}\n```\n</tool_call>',
     None, "a", [("f", {"q": 1})], None),
    ("<think>a</think><tool_call>[{'name': 'f', 'parameters': {'ok': True}},]", None,
     "a", [("f", {"ok": True})], None),
    ('plan it</think><tool_call>[{"name": "f", "parameters": {"a": 1,},},]</tool_call>', None,
     "plan it", [("f", {"a": 1})], None),
    ('<tool_call>{"name": "f"}</tool_call><tool_call>{"function": {"name": "g", "arguments": {}}}</tool_call>'
     "<response>done", "deep thought", "deep thought", [("f", {}), ("g", {})], "done"),
    ("Here is my answer: the red one.", "<think>why</think>", "why", [], "Here is my answer: the red one."),
    ('<think>t</think><tool_call>Sure: [{"name": "f", "parameters": {}}] hope this helps</tool_call>', None,
     "t", [("f", {})], None),
])
def test_sloppy_answers_are_read(content: str, reasoning: str | None, think: str,
                                 calls: list[tuple[str, dict[str, Any]]], response: str | None) -> None:
    parsed = parse_model_output(content, reasoning)
    assert parsed.think == think
    assert [(c["name"], c["parameters"]) for c in parsed.tool_calls] == calls
    assert parsed.response == response
    assert parsed.problems == []


def test_unreadable_calls_are_reported_and_native_calls_are_a_fallback() -> None:
    parsed = parse_model_output('<think>t</think><tool_call>[{"parameters": {}}, {"name": "f", '
                                '"arguments": "not json"}]</tool_call><tool_call>nonsense</tool_call>')
    assert parsed.tool_calls == [] and len(parsed.problems) == 3
    native = [{"id": "1", "type": "function",
               "function": {"name": "find_product", "arguments": '{"q": "mug"}'}}]
    parsed = parse_model_output("", "thinking", native)
    assert parsed.think == "thinking"
    assert parsed.tool_calls == [{"name": "find_product", "parameters": {"q": "mug"}}]
    assert parse_model_output(None).tool_calls == []
    deep = "<tool_call>" + "[" * 50_000 + "]" * 50_000 + "</tool_call>"
    assert parse_model_output(deep).tool_calls == []


# --- self-contained, as mounted in the sandbox --------------------------------------------------


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_sdk_imports_only_the_standard_library_httpx_and_itself() -> None:
    files = sorted(SDK_DIR.rglob("*.py"))
    assert len(files) >= 9
    for path in files:
        for name in _imported_modules(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top == "httpx" or \
                name.startswith("shoppingbench.agent_sdk"), f"{path.name} imports {name}"


def _sandbox_tree(root: Path) -> Path:
    """The mount layout the runner gives an agent: <sdk>/shoppingbench/agent_sdk and <sdk>/src, and no
    shoppingbench/__init__.py, so nothing else of the package exists."""
    (root / "shoppingbench").mkdir(parents=True)
    (root / "shoppingbench" / "agent_sdk").symlink_to(SDK_DIR)
    (root / "src").symlink_to(COMPAT_DIR / "src")
    return root


def run_isolated(code: str, sdk_root: Path,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter without site processing: the SDK tree and site-packages only."""
    site_packages = sysconfig.get_paths()["purelib"]
    prelude = f"import sys; sys.path[:0] = [{str(sdk_root)!r}, {site_packages!r}]\n"
    return subprocess.run([sys.executable, "-I", "-S", "-c", prelude + code], capture_output=True, text=True,
                          timeout=60, env={"PATH": os.environ.get("PATH", ""), **(env or {})}, check=False)


def test_the_sdk_and_the_reference_paths_import_alone(tmp_path: Path) -> None:
    code = """
import shoppingbench.agent_sdk as sdk
from src.agent.agent_interface import Tool, create_dialogue_step, execute_tool_call, _TOOL_REGISTRY
from src.agent.proxy_client import ProxyClient

@Tool
def echo(text):
    return text

assert sdk.get_tool("echo") is _TOOL_REGISTRY["echo"]
result = execute_tool_call("echo", {"text": "hi"})
step = create_dialogue_step(think="t", tool_results=[result], response="", query="q", step=1)
assert step["completion"]["message"]["tool_call"][0]["result"] == "hi"
assert ProxyClient().get("/search/find_product", {"q": "x"}) is None  # nothing listens there
try:
    import shoppingbench.scoring
except ModuleNotFoundError:
    print("isolated")
"""
    done = run_isolated(code, _sandbox_tree(tmp_path),
                        {"SANDBOX_PROXY_URL": "http://127.0.0.1:9", "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "isolated"


def test_a_long_view_keeps_every_product_and_cuts_each_long_field() -> None:
    products = [{"product_id": f"70{i:02d}", "short_description": "short " * 200,
                 "description": "word " * 800,
                 "sku_options": {"1": {"color": "red"}}} for i in range(4)]
    text = tool_result_text(products)
    assert len(json.dumps(products)) > 5 * MAX_TOOL_CHARS and len(text) <= MAX_TOOL_CHARS
    shown = json.loads(text)  # four viewed products fit whole once each long field is cut
    assert [p["product_id"] for p in shown] == [p["product_id"] for p in products]
    assert all(len(p["description"]) == MAX_FIELD_CHARS + 3 and p["description"].endswith("...")
               for p in shown)
    assert shown[0]["sku_options"] == {"1": {"color": "red"}}
    assert len(tool_result_text("x" * 5000)) == MAX_TOOL_CHARS + 3
    assert compact_fields({"a": ["y" * 700, 3, None]}) == {"a": ["y" * MAX_FIELD_CHARS + "...", 3, None]}
