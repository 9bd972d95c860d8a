"""The official `openai` Python package against TextGateway's /v1 (make test-openai).

Starts mock-upstream and text-gateway from the debug build on loopback ephemeral ports,
then, with the SDK pointed at the gateway and a gateway-side model alias:
lists models, completes a chat with history, streams a chat, and checks that an unknown
model raises the SDK's BadRequestError with code model_not_found.
Prints 'N passed, N failed' and exits non-zero on any failure.
"""
import os
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

        try:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
            check("unknown model is refused", False)
        except openai.BadRequestError as error:
            check("unknown model is refused with model_not_found", error.code == "model_not_found")

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
