"""The official `openai` Python package against TextGateway's /v1 (make test-openai).

Starts mock-upstream and text-gateway from the debug build on loopback ephemeral ports,
then, with the SDK pointed at the gateway and a gateway-side model alias:
lists models, completes a chat with history, streams a chat, calls a tool (streamed and
not), asks for two choices (streamed and not), checks that the fields the SDK sends beyond
plain chat (tools, seed, logit_bias, response_format, a tool-call history, an image part)
reach the upstream as sent, and that an unknown model raises the SDK's NotFoundError with
code model_not_found, `n` over MAX_CHOICES a BadRequestError, and an unknown `tgk_` key an
AuthenticationError (the placeholder key is a guest, the gateway's own formats never are).
Prints 'N passed, N failed' and exits non-zero on any failure.
"""
import os
import json
import re
import socket
import subprocess
import sys
import tempfile
import time

import openai

BIN = os.path.join(os.path.dirname(__file__), "..", "..", ".build", "debug")
MOCK_ANSWER = "این یک پاسخ آزمایشی از سرویس شبیه‌سازی‌شده است که برای آزمون دروازه ساخته شده است."


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError("timed out waiting")


def main():
    processes = []
    workdir = tempfile.mkdtemp(prefix="textgateway-openai-")
    try:
        mock_log = open(os.path.join(workdir, "mock.log"), "w+")
        mock = subprocess.Popen([os.path.join(BIN, "mock-upstream"), "--port", "0", "--api-key", "sdk-key"],
                                stdout=mock_log, stderr=subprocess.STDOUT)
        processes.append(mock)

        def mock_url():
            mock_log.seek(0)
            match = re.search(r"listening on (\S+)", mock_log.read())
            return match.group(1) if match else None

        upstream = wait_for(mock_url)
        port = free_port()
        environment = {
            "PATH": "/usr/bin:/bin",
            "DARVAREH_API_KEY": "sdk-key",
            "DARVAREH_MODEL_ID": "upstream-default",
            "DARVAREH_BASE_URL": upstream,
            "GATEWAY_MODELS": "chat-small=upstream-small,chat-large=upstream-large",
            "PORT": str(port),
            "LOG_LEVEL": "warning",
        }
        gateway = subprocess.Popen([os.path.join(BIN, "text-gateway"), "serve"], cwd=workdir, env=environment,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(gateway)

        def ready():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return True
            except OSError:
                return False

        wait_for(ready)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="not-needed", timeout=20, max_retries=0)
        results = []

        def check(name, condition):
            results.append(bool(condition))
            print(("PASS  " if condition else "FAIL  ") + name)

        models = [model.id for model in client.models.list()]
        check("models.list gives the aliases", models == ["chat-small", "chat-large"])

        completion = client.chat.completions.create(
            model="chat-large",
            messages=[
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hi!"},
                {"role": "user", "content": "Summarise our talk."},
            ],
            max_tokens=50,
        )
        check("chat with history completes", completion.choices[0].message.content == MOCK_ANSWER)
        check("chat reports usage", completion.usage is not None and completion.usage.total_tokens > 0)

        pieces = []
        usage = None
        stream = client.chat.completions.create(
            model="chat-small",
            messages=[{"role": "user", "content": "Stream it [mock:deltas=10]"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
            if chunk.usage:
                usage = chunk.usage
        check("streamed chat arrives piece by piece", len(pieces) >= 5 and "".join(pieces) == MOCK_ANSWER)
        check("streamed chat ends with usage", usage is not None and usage.total_tokens > 0)

        def attempt(name, body):
            # An SDK error (say a 400 for a field the gateway refused) is a failed check, not the end of the run.
            try:
                body()
            except Exception as error:
                check(f"{name} ({type(error).__name__}: {error})", False)

        tools = [
            {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                              "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                             "required": ["city"]}}},
        ]

        def tool_calling():
            called = client.chat.completions.create(
                model="chat-small", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=tools, tool_choice="auto")
            calls = called.choices[0].message.tool_calls
            check("tool calling returns tool_calls", calls is not None and len(calls) == 1 and calls[0].function.name == "get_weather")
            check("tool calling finishes with tool_calls", called.choices[0].finish_reason == "tool_calls")
            check("tool calling reports usage", called.usage is not None and called.usage.total_tokens > 0)
        attempt("tool calling", tool_calling)

        def streamed_tool_calling():
            names, arguments, finish = [], [], None
            for chunk in client.chat.completions.create(
                    model="chat-small", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=tools, stream=True):
                if not chunk.choices:
                    continue
                for call in chunk.choices[0].delta.tool_calls or []:
                    if call.function and call.function.name:
                        names.append(call.function.name)
                    if call.function and call.function.arguments:
                        arguments.append(call.function.arguments)
                finish = chunk.choices[0].finish_reason or finish
            check("streamed tool calling returns tool_calls", names == ["get_weather"] and "".join(arguments) == "{}")
            check("streamed tool calling finishes with tool_calls", finish == "tool_calls")
        attempt("streamed tool calling", streamed_tool_calling)

        def two_choices():
            two = client.chat.completions.create(model="chat-small", messages=[{"role": "user", "content": "Two"}], n=2)
            check("n=2 gives two choices", [choice.index for choice in two.choices] == [0, 1]
                  and all(choice.message.content == MOCK_ANSWER for choice in two.choices))
        attempt("n=2 gives two choices", two_choices)

        def streamed_two_choices():
            texts = {}
            for chunk in client.chat.completions.create(
                    model="chat-small", messages=[{"role": "user", "content": "Two [mock:deltas=4]"}], n=2, stream=True):
                for choice in chunk.choices:
                    texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
            check("streamed n=2 gives two choices", texts == {0: MOCK_ANSWER, 1: MOCK_ANSWER})
        attempt("streamed n=2 gives two choices", streamed_two_choices)

        def fields_arrive():
            history = [
                {"role": "user", "content": [
                    {"type": "text", "text": "What is in this photo? [mock:echo-request=on]"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
                ]},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "21.5"},
            ]
            # The mock answers with the body it received (echo-request).
            echoed = client.chat.completions.create(
                model="chat-large", messages=history, tools=tools, tool_choice="none", parallel_tool_calls=False,
                seed=42, logit_bias={"50256": -100}, logprobs=True, top_logprobs=2, temperature=1e-7,
                response_format={"type": "json_object"}, max_tokens=99999)
            sent = json.loads(echoed.choices[0].message.content)
            check("the image part and tool-call history reach the upstream as sent", sent["messages"] == history)
            check("tools, seed, logit_bias, logprobs and response_format reach the upstream as sent",
                  sent["tools"] == tools and sent["tool_choice"] == "none" and sent["parallel_tool_calls"] is False
                  and sent["seed"] == 42 and sent["logit_bias"] == {"50256": -100} and sent["logprobs"] is True
                  and sent["top_logprobs"] == 2 and sent["temperature"] == 1e-7
                  and sent["response_format"] == {"type": "json_object"})
            check("the alias is rewritten and max_tokens capped upstream", sent["model"] == "upstream-large" and sent["max_tokens"] == 1200)
        attempt("fields reach the upstream as sent", fields_arrive)

        try:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
            check("unknown model is refused", False)
        except openai.NotFoundError as error:
            check("unknown model is refused with 404 model_not_found", error.code == "model_not_found")

        try:
            client.chat.completions.create(model="chat-large", n=5, messages=[{"role": "user", "content": "x"}])
            check("n over MAX_CHOICES is refused", False)
        except openai.BadRequestError as error:
            check("n over MAX_CHOICES is refused with 400, param n", error.status_code == 400 and (error.body or {}).get("param") == "n")

        # An open gateway takes the SDK's placeholder key on /v1 as a guest, but never a key
        # in the gateway's own formats that it does not know.
        revoked = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="tgk_" + "A" * 43, timeout=20, max_retries=0)
        try:
            revoked.models.list()
            check("an unknown tgk_ key is refused", False)
        except openai.AuthenticationError as error:
            check("an unknown tgk_ key is refused with 401", error.status_code == 401)

        passed = sum(results)
        failed = len(results) - passed
        print(f"openai-sdk: {passed} passed, {failed} failed")
        return 0 if failed == 0 else 1
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
