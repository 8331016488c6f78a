#include "runtime/openai/openapi.hpp"

namespace dynamo::openai {

namespace {

// Keep in step with request.cpp (chat_request_fields / completion_request_fields):
// tests/runtime/openai/openapi_test.cpp compares them.
constexpr std::string_view document = R"json({
  "openapi": "3.0.3",
  "info": {
    "title": "dynamo-cpp OpenAI-compatible API",
    "version": "0.1.0",
    "description": "Chat and text completions, streamed as server-sent events or returned whole. Errors use OpenAI's body {\"error\":{\"message\",\"type\",\"param\",\"code\"}}. Fields marked 'neutral only' are accepted at their neutral value and rejected with 400 unsupported_value otherwise. Unknown top-level fields are ignored."
  },
  "paths": {
    "/v1/chat/completions": {
      "post": {
        "summary": "Create a chat completion",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletionRequest"}}}},
        "responses": {
          "200": {"description": "A chat.completion object, or with stream=true an event stream of chat.completion.chunk objects ending with 'data: [DONE]'", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletion"}}, "text/event-stream": {"schema": {"$ref": "#/components/schemas/ChatCompletionChunk"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"},
          "415": {"$ref": "#/components/responses/Error"},
          "499": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"},
          "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/completions": {
      "post": {
        "summary": "Create a text completion",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CompletionRequest"}}}},
        "responses": {
          "200": {"description": "A text_completion object, or with stream=true an event stream of text_completion chunks ending with 'data: [DONE]'", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Completion"}}, "text/event-stream": {"schema": {"$ref": "#/components/schemas/Completion"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"},
          "415": {"$ref": "#/components/responses/Error"},
          "499": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"},
          "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/responses": {
      "post": {
        "summary": "Create a response (OpenAI Responses API), served as a translation over chat completions; nothing is stored (see docs/ENDPOINTS.md)",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["model", "input"], "properties": {"model": {"type": "string"}, "input": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]}, "instructions": {"type": "string"}, "tools": {"type": "array", "items": {"type": "object"}}, "tool_choice": {}, "text": {"type": "object"}, "max_output_tokens": {"type": "integer", "minimum": 1}, "temperature": {"type": "number"}, "top_p": {"type": "number"}, "stream": {"type": "boolean"}, "metadata": {"type": "object"}}}}}},
        "responses": {
          "200": {"description": "A response object, or with stream=true the typed events response.created ... response.completed (no [DONE])"},
          "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"},
          "415": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"},
          "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/embeddings": {
      "post": {
        "summary": "Create embeddings: the served model's final hidden state of each input's last token, L2-normalized (vLLM's last-token pooling of decoder models)",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["model", "input"], "properties": {"model": {"type": "string", "minLength": 1}, "input": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1, "maxItems": 2048, "items": {"type": "string", "minLength": 1}}, {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}}, {"type": "array", "minItems": 1, "maxItems": 2048, "items": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}}}]}, "encoding_format": {"type": "string", "enum": ["float", "base64"], "default": "float"}, "dimensions": {"type": "integer", "minimum": 1, "description": "Only the model's own width (no Matryoshka truncation)."}, "user": {"type": "string"}}}}}},
        "responses": {
          "200": {"description": "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,\"embedding\":[...] or base64}],\"model\":..,\"usage\":{\"prompt_tokens\":N,\"total_tokens\":N}}"},
          "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"},
          "415": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"},
          "503": {"$ref": "#/components/responses/Error"}, "504": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/tokenize": {
      "post": {
        "summary": "Tokenize a prompt or chat messages with the model's tokenizer (vLLM's shape)",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["model"], "properties": {"model": {"type": "string"}, "prompt": {"type": "string"}, "messages": {"type": "array", "items": {"$ref": "#/components/schemas/ChatMessage"}}, "add_special_tokens": {"type": "boolean"}, "add_generation_prompt": {"type": "boolean"}}}}}},
        "responses": {"200": {"description": "{\"count\":N,\"max_model_len\":C,\"tokens\":[...],\"token_strs\":null}"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}
      }
    },
    "/detokenize": {
      "post": {
        "summary": "Token ids back to text, special tokens included (vLLM's shape)",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["model", "tokens"], "properties": {"model": {"type": "string"}, "tokens": {"type": "array", "items": {"type": "integer", "minimum": 0}}}}}}},
        "responses": {"200": {"description": "{\"prompt\":\"...\"}"}, "400": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}
      }
    },
    "/v1/models": {
      "get": {"summary": "List served models", "responses": {"200": {"description": "The model list", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ModelList"}}}}}}
    },
    "/v1/models/{model_id}": {
      "get": {
        "summary": "One served model (the id may contain slashes)",
        "parameters": [{"name": "model_id", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": {"200": {"description": "The model", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Model"}}}}, "404": {"$ref": "#/components/responses/Error"}}
      }
    },
    "/health": {
      "get": {"summary": "Ready to serve: 200 when at least one model is registered, else 503", "responses": {"200": {"description": "{\"status\":\"healthy\",\"models\":[...]}"}, "503": {"description": "{\"status\":\"unhealthy\",\"models\":[]}"}}}
    },
    "/live": {
      "get": {"summary": "The process is alive", "responses": {"200": {"description": "{\"status\":\"live\",\"message\":\"Service is live\"}"}}}
    },
    "/metrics": {
      "get": {"summary": "Prometheus metrics (text format 0.0.4)", "responses": {"200": {"description": "dynamo_frontend_* metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}}}
    },
    "/openapi.json": {
      "get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3 document"}}}
    }
  },
  "components": {
    "responses": {
      "Error": {"description": "An error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    },
    "schemas": {
      "ChatCompletionRequest": {
        "type": "object",
        "required": ["model", "messages"],
        "properties": {
          "model": {"type": "string", "minLength": 1},
          "messages": {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/ChatMessage"}},
          "max_tokens": {"type": "integer", "minimum": 1, "description": "Default: the rest of the context. prompt + max_tokens must fit the context."},
          "max_completion_tokens": {"type": "integer", "minimum": 1, "description": "Wins over max_tokens."},
          "min_tokens": {"type": "integer", "minimum": 0},
          "temperature": {"type": "number", "minimum": 0, "maximum": 2, "default": 1},
          "top_p": {"type": "number", "minimum": 0, "maximum": 1, "default": 1},
          "top_k": {"type": "integer", "description": "-1 (off) or >= 1"},
          "seed": {"type": "integer"},
          "stop": {"$ref": "#/components/schemas/Stop"},
          "n": {"type": "integer", "minimum": 1, "maximum": 128, "default": 1, "description": "Choices; the prompt is computed once and its KV blocks shared. Seeded choice c draws as seed + c."},
          "stream": {"type": "boolean", "default": false},
          "stream_options": {"$ref": "#/components/schemas/StreamOptions"},
          "ignore_eos": {"type": "boolean", "default": false},
          "user": {"type": "string", "minLength": 1},
          "frequency_penalty": {"type": "number", "minimum": -2, "maximum": 2, "default": 0, "description": "Minus this times the token's count among generated tokens."},
          "presence_penalty": {"type": "number", "minimum": -2, "maximum": 2, "default": 0, "description": "Minus this for every token generated before."},
          "repetition_penalty": {"type": "number", "exclusiveMinimum": 0, "maximum": 2, "default": 1, "description": "Divides positive (multiplies other) logits of prompt and generated tokens (vLLM)."},
          "min_p": {"type": "number", "minimum": 0, "maximum": 1, "default": 0, "description": "Drops tokens less likely than min_p times the most likely one."},
          "logit_bias": {"type": "object", "maxProperties": 1024, "additionalProperties": {"type": "number", "minimum": -100, "maximum": 100}, "description": "Token id (in the vocabulary) -> bias added to its logit before the penalties."},
          "stop_token_ids": {"type": "array", "maxItems": 32, "items": {"type": "integer", "minimum": 0}, "description": "More token ids that end generation (kept with ignore_eos), as vLLM."},
          "logprobs": {"type": "boolean", "default": false, "description": "Log-probabilities of the sampled distribution (after logit_bias, penalties and temperature; before top-k/top-p/min-p)."},
          "top_logprobs": {"type": "integer", "minimum": 0, "maximum": 20, "description": "Alternatives per token; requires logprobs=true."},
          "tools": {"type": "array", "items": {"type": "object", "required": ["type", "function"], "properties": {"type": {"type": "string", "enum": ["function"]}, "function": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"}, "description": {"type": "string"}, "parameters": {"type": "object"}, "strict": {"type": "boolean"}}}}}, "description": "Rendered through the model's chat template; calls are parsed from the output (docs/TOOLS.md)."},
          "tool_choice": {"oneOf": [{"type": "string", "enum": ["none", "auto", "required"]}, {"type": "object", "required": ["type", "function"], "properties": {"type": {"type": "string", "enum": ["function"]}, "function": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}], "description": "required / named: decoding is constrained to a call (guided decoding)."},
          "chat_template_kwargs": {"type": "object", "description": "Extra chat template variables, e.g. {\"enable_thinking\": false}."},
          "response_format": {"$ref": "#/components/schemas/ResponseFormat"},
          "guided_json": {"description": "A JSON Schema (object or JSON text) the output must validate against (vLLM/Dynamo extension).", "oneOf": [{"type": "object"}, {"type": "string"}]},
          "guided_regex": {"type": "string", "minLength": 1, "description": "The output matches this regex in full (vLLM/Dynamo extension)."},
          "guided_choice": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}, "description": "The output is exactly one of these strings (vLLM/Dynamo extension)."},
          "guided_grammar": {"type": "string", "minLength": 1, "description": "A llama.cpp GBNF grammar the output follows (vLLM/Dynamo extension)."},
          "nvext": {"type": "object", "description": "Dynamo extensions: guided_json, guided_regex, guided_choice, guided_grammar as above; other keys are ignored."},
          "parallel_tool_calls": {"type": "boolean", "default": true, "description": "false: at most one call."}
        }
      },
      "CompletionRequest": {
        "type": "object",
        "required": ["model", "prompt"],
        "properties": {
          "model": {"type": "string", "minLength": 1},
          "prompt": {"description": "One prompt: text, [text], token ids, or [token ids]. Several prompts per request are unsupported.", "oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "minItems": 1, "maxItems": 1, "items": {"type": "string", "minLength": 1}},
            {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
            {"type": "array", "minItems": 1, "maxItems": 1, "items": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}}}
          ]},
          "max_tokens": {"type": "integer", "minimum": 0, "description": "Default: the rest of the context. 0 only with echo (the prompt alone)."},
          "min_tokens": {"type": "integer", "minimum": 0},
          "temperature": {"type": "number", "minimum": 0, "maximum": 2, "default": 1},
          "top_p": {"type": "number", "minimum": 0, "maximum": 1, "default": 1},
          "top_k": {"type": "integer", "description": "-1 (off) or >= 1"},
          "seed": {"type": "integer"},
          "stop": {"$ref": "#/components/schemas/Stop"},
          "n": {"type": "integer", "minimum": 1, "maximum": 128, "default": 1, "description": "Choices; the prompt is computed once and its KV blocks shared. Seeded choice c draws as seed + c."},
          "stream": {"type": "boolean", "default": false},
          "stream_options": {"$ref": "#/components/schemas/StreamOptions"},
          "ignore_eos": {"type": "boolean", "default": false},
          "user": {"type": "string", "minLength": 1},
          "frequency_penalty": {"type": "number", "minimum": -2, "maximum": 2, "default": 0, "description": "Minus this times the token's count among generated tokens."},
          "presence_penalty": {"type": "number", "minimum": -2, "maximum": 2, "default": 0, "description": "Minus this for every token generated before."},
          "repetition_penalty": {"type": "number", "exclusiveMinimum": 0, "maximum": 2, "default": 1, "description": "Divides positive (multiplies other) logits of prompt and generated tokens (vLLM)."},
          "min_p": {"type": "number", "minimum": 0, "maximum": 1, "default": 0, "description": "Drops tokens less likely than min_p times the most likely one."},
          "logit_bias": {"type": "object", "maxProperties": 1024, "additionalProperties": {"type": "number", "minimum": -100, "maximum": 100}, "description": "Token id (in the vocabulary) -> bias added to its logit before the penalties."},
          "stop_token_ids": {"type": "array", "maxItems": 32, "items": {"type": "integer", "minimum": 0}, "description": "More token ids that end generation (kept with ignore_eos), as vLLM."},
          "logprobs": {"type": "integer", "minimum": 0, "maximum": 5, "description": "Log-probabilities of the chosen token and this many alternatives. With echo also of every prompt token under the model's raw distribution (the first one's are null), for loglikelihood scoring."},
          "response_format": {"$ref": "#/components/schemas/ResponseFormat"},
          "guided_json": {"description": "A JSON Schema (object or JSON text) the output must validate against (vLLM/Dynamo extension).", "oneOf": [{"type": "object"}, {"type": "string"}]},
          "guided_regex": {"type": "string", "minLength": 1, "description": "The output matches this regex in full (vLLM/Dynamo extension)."},
          "guided_choice": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}, "description": "The output is exactly one of these strings (vLLM/Dynamo extension)."},
          "guided_grammar": {"type": "string", "minLength": 1, "description": "A llama.cpp GBNF grammar the output follows (vLLM/Dynamo extension)."},
          "nvext": {"type": "object", "description": "Dynamo extensions: guided_json, guided_regex, guided_choice, guided_grammar as above; other keys are ignored."},
          "echo": {"type": "boolean", "default": false, "description": "The text (and logprobs) start with the prompt; streamed as its own first chunk. n must be 1. Not served by the CUDA engine with logprobs (an error, never wrong values)."},
          "best_of": {"type": "integer", "minimum": 1, "description": "Only equal to n."},
          "suffix": {"type": "string", "description": "Neutral only: empty."}
        }
      },
      "ChatMessage": {
        "type": "object",
        "required": ["role"],
        "properties": {
          "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
          "content": {"description": "Required except for assistant turns; text parts are joined with a newline.", "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"$ref": "#/components/schemas/TextPart"}}
          ]},
          "name": {"type": "string"}
        }
      },
      "TextPart": {
        "type": "object", "required": ["type", "text"],
        "properties": {"type": {"type": "string", "enum": ["text"]}, "text": {"type": "string"}}
      },
      "Stop": {
        "oneOf": [{"type": "string"}, {"type": "array", "maxItems": 32, "items": {"type": "string"}}]
      },
      "ResponseFormat": {
        "type": "object",
        "required": ["type"],
        "description": "Structured outputs by grammar-constrained decoding (docs/STRUCTURED_OUTPUTS.md lists the JSON Schema subset; other keywords are 400). At most one of response_format (non-text) and the guided_* fields.",
        "properties": {
          "type": {"type": "string", "enum": ["text", "json_object", "json_schema"]},
          "json_schema": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "description": {"type": "string"}, "schema": {"type": "object"}, "strict": {"type": "boolean"}}}
        }
      },
      "StreamOptions": {
        "type": "object", "description": "Only with stream=true.",
        "properties": {"include_usage": {"type": "boolean", "default": false}}
      },
      "Usage": {
        "type": "object",
        "properties": {
          "prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"},
          "prompt_tokens_details": {"type": "object", "properties": {"cached_tokens": {"type": "integer"}}}
        }
      },
      "ChatCompletion": {
        "type": "object",
        "properties": {
          "id": {"type": "string"}, "object": {"type": "string", "enum": ["chat.completion"]},
          "created": {"type": "integer"}, "model": {"type": "string"},
          "choices": {"type": "array", "items": {"type": "object", "properties": {
            "index": {"type": "integer"},
            "message": {"type": "object", "properties": {"role": {"type": "string"}, "content": {"type": "string"}}},
            "logprobs": {"nullable": true},
            "finish_reason": {"type": "string", "enum": ["stop", "length"]}}}},
          "usage": {"$ref": "#/components/schemas/Usage"}
        }
      },
      "ChatCompletionChunk": {
        "type": "object",
        "properties": {
          "id": {"type": "string"}, "object": {"type": "string", "enum": ["chat.completion.chunk"]},
          "created": {"type": "integer"}, "model": {"type": "string"},
          "choices": {"type": "array", "items": {"type": "object", "properties": {
            "index": {"type": "integer"},
            "delta": {"type": "object", "properties": {"role": {"type": "string"}, "content": {"type": "string"}}},
            "logprobs": {"nullable": true},
            "finish_reason": {"type": "string", "nullable": true, "enum": ["stop", "length"]}}}},
          "usage": {"allOf": [{"$ref": "#/components/schemas/Usage"}], "nullable": true}
        }
      },
      "Completion": {
        "type": "object",
        "properties": {
          "id": {"type": "string"}, "object": {"type": "string", "enum": ["text_completion"]},
          "created": {"type": "integer"}, "model": {"type": "string"},
          "choices": {"type": "array", "items": {"type": "object", "properties": {
            "index": {"type": "integer"}, "text": {"type": "string"},
            "logprobs": {"type": "object", "nullable": true, "description": "With echo the prompt's tokens come first; the first one's token_logprobs and top_logprobs entries are null.", "properties": {
              "tokens": {"type": "array", "items": {"type": "string"}},
              "token_logprobs": {"type": "array", "items": {"type": "number", "nullable": true}},
              "top_logprobs": {"type": "array", "items": {"type": "object", "nullable": true, "additionalProperties": {"type": "number"}}},
              "text_offset": {"type": "array", "items": {"type": "integer"}}}},
            "finish_reason": {"type": "string", "nullable": true, "enum": ["stop", "length"]}}}},
          "usage": {"allOf": [{"$ref": "#/components/schemas/Usage"}], "nullable": true}
        }
      },
      "Model": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "object": {"type": "string", "enum": ["model"]}, "created": {"type": "integer"}, "owned_by": {"type": "string"}}
      },
      "ModelList": {
        "type": "object",
        "properties": {"object": {"type": "string", "enum": ["list"]}, "data": {"type": "array", "items": {"$ref": "#/components/schemas/Model"}}}
      },
      "Error": {
        "type": "object",
        "properties": {"error": {"type": "object", "properties": {
          "message": {"type": "string"},
          "type": {"type": "string", "enum": ["invalid_request_error", "request_cancelled", "server_error", "service_unavailable", "timeout"]},
          "param": {"type": "string", "nullable": true},
          "code": {"type": "string", "nullable": true}}}}
      }
    }
  }
})json";

} // namespace

std::string_view openapi_json() noexcept { return document; }

} // namespace dynamo::openai
