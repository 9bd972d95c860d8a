#!/usr/bin/env python3
"""Print the spans a Phoenix (scripts/phoenix.sh start) stored, one JSON object a line.

    scripts/phoenix_spans.py --url "$PHOENIX_URL" [--project NAME] [--wait-count N --timeout S]

Reads Phoenix's own REST API, GET /v1/projects/{project}/spans (pages of 1000, oldest
inserted first), stdlib only. Each line holds trace_id, span_id, parent_id (lowercase hex;
parent_id null for a root), name, span_kind, start_time, end_time (ISO 8601 UTC, microsecond
precision: Phoenix drops the nanoseconds), status_code (OK / ERROR / UNSET), status_message,
attributes (flat dict: dotted key -> value, types kept: str, int, float, bool, lists) and
events (name, timestamp, attributes).

What Phoenix (arize-phoenix 20.26.1) does with an OTLP/HTTP export, found by test:
- Project: the `x-project-name` request header, else the resource attribute
  `openinference.project.name`, else "default". `service.name` plays no part. The project
  appears on its first span; until then GET .../spans answers 404 (counted here as no span).
- span_kind is OpenInference's kind (LLM, CHAIN, TOOL, ..., UNKNOWN), from the attribute
  `openinference.span.kind`, or LLM when Phoenix recognises gen_ai.* attributes; the OTLP
  kind (SERVER, CLIENT, ...) is not stored.
- Not stored at all: span links, the OTLP kind, resource attributes (other than the project
  name), the instrumentation scope, dropped counts, trace state, flags.
- gen_ai.* attributes are kept as given (gen_ai.request.model, gen_ai.usage.input_tokens, ...
  with their types), and Phoenix adds OpenInference attributes it derives from them:
  llm.model_name, llm.provider, llm.system, llm.token_count.prompt / .completion / .total,
  llm.invocation_parameters (JSON string of gen_ai.request.* settings).
- A span whose span_id is already stored is dropped silently (insert, on conflict nothing).
- Ingestion is asynchronous: /v1/traces answers 200 before the spans are visible, hence
  --wait-count.
"""
import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def flat(value, prefix, out):
    """Nested dicts (OTLP kvlist values) as dotted keys, so attributes are one flat dict."""
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            flat(inner, f"{prefix}.{key}" if prefix else key, out)
    else:
        out[prefix] = value
    return out


def fetch_spans(url, project):
    """All spans of the project (a list of Phoenix's span objects), or None when the project
    does not exist yet."""
    spans, cursor = [], None
    base = f"{url.rstrip('/')}/v1/projects/{urllib.parse.quote(project, safe='')}/spans"
    while True:
        query = {"limit": 1000, "sort": "id", "order": "asc"}
        if cursor:
            query["cursor"] = cursor
        try:
            with urllib.request.urlopen(f"{base}?{urllib.parse.urlencode(query)}", timeout=30) as response:
                page = json.load(response)
        except urllib.error.HTTPError as error:
            if error.code == 404 and not spans:
                return None
            raise SystemExit(f"phoenix_spans.py: GET {base} answered {error.code}: {error.read()[:300]!r}")
        spans.extend(page["data"])
        cursor = page.get("next_cursor")
        if not cursor:
            return spans


def projects(url):
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/v1/projects", timeout=10) as response:
            return [p["name"] for p in json.load(response)["data"]]
    except (urllib.error.URLError, OSError, ValueError, KeyError) as error:
        return [f"(could not list: {error})"]


def line(span):
    return {
        "trace_id": span["context"]["trace_id"],
        "span_id": span["context"]["span_id"],
        "parent_id": span.get("parent_id"),
        "name": span["name"],
        "span_kind": span["span_kind"],
        "start_time": span["start_time"],
        "end_time": span["end_time"],
        "status_code": span["status_code"],
        "status_message": span.get("status_message", ""),
        "attributes": flat(span.get("attributes") or {}, "", {}),
        "events": [
            {"name": e["name"], "timestamp": e["timestamp"], "attributes": flat(e.get("attributes") or {}, "", {})}
            for e in span.get("events") or []
        ],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", required=True, help="Phoenix's base URL (PHOENIX_URL of scripts/phoenix.sh start)")
    parser.add_argument("--project", default="default", help="project name (default: default)")
    parser.add_argument("--wait-count", type=int, default=0, help="poll until at least N spans are visible")
    parser.add_argument("--timeout", type=float, default=30, help="seconds to wait for --wait-count (default 30)")
    args = parser.parse_args()

    deadline = time.monotonic() + args.timeout
    while True:
        try:
            spans = fetch_spans(args.url, args.project)
        except (urllib.error.URLError, OSError) as error:
            raise SystemExit(f"phoenix_spans.py: cannot reach Phoenix at {args.url}: {error}")
        count = len(spans or [])
        if count >= args.wait_count:
            break
        if time.monotonic() >= deadline:
            state = "does not exist" if spans is None else f"has {count} span(s)"
            raise SystemExit(
                f"phoenix_spans.py: waited {args.timeout:g} s for {args.wait_count} span(s) in project "
                f"{args.project!r}, which {state}; projects: {', '.join(projects(args.url))}"
            )
        time.sleep(0.2)
    for span in spans or []:
        print(json.dumps(line(span), sort_keys=False))


if __name__ == "__main__":
    main()
