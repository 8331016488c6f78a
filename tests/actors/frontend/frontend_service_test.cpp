#include "actors/frontend/frontend_service.hpp"

#include "actors/core/type_ids.hpp"
#include "tests/actors/frontend/fake_llm_client.hpp"
#include "tests/support/http_client.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

using namespace dynamo;
using namespace dynamo::frontend;
using dynamo::test::fake_llm_client;
using dynamo::test::fake_options;
using dynamo::test::http_client;
using dynamo::test::sse_data;
using json = nlohmann::json;
using behaviour = fake_options::behaviour;

namespace {

const std::string reply = "Hello from the fake backend.";
const std::string chat_prompt = "user: hi\nassistant: "; // simple_chat_template of one "hi"

struct test_config : caf::actor_system_config {
  test_config() {
    set("scheduler.policy", caf::atom("sharing"));
    set("scheduler.max-threads", 2);
    actors::register_types(*this);
  }
};

struct fixture {
  test_config cfg;
  caf::actor_system sys{cfg};
  std::unique_ptr<frontend_service> svc;
  std::map<std::string, std::shared_ptr<fake_llm_client>> fakes;

  fixture() {
    spdlog::set_level(spdlog::level::warn);
    auto s = frontend_service::start(sys);
    BOOST_REQUIRE(s);
    svc = std::move(*s);
    add("fake", {});
    add("org/fake-slash", {});
    fake_options slow;
    slow.mode = behaviour::endless;
    slow.delay = std::chrono::milliseconds(2);
    add("fake-endless", slow);
    add("fake-fail-first", {.mode = behaviour::fail_first});
    add("fake-refuse", {.mode = behaviour::refuse});
    add("fake-error-chunk", {.mode = behaviour::error_chunk});
    add("fake-refuse-chunk", {.mode = behaviour::refuse_chunk}, 4096, nullptr, 8);
    add("fake-refuse-embed", {.mode = behaviour::refuse}, 4096, nullptr, 8);
    add("fake-fail-mid", {.mode = behaviour::fail_mid});
    add("fake-short-context", {}, 32);
    add("fake-silent", {.mode = behaviour::silent});
  }
  ~fixture() { svc->stop(); }

  /// `embedding_size` > 0: the model also serves /v1/embeddings.
  void add(const std::string& name, fake_options opts, uint32_t context = 4096,
           frontend_service* target = nullptr, uint32_t embedding_size = 0) {
    auto fake = std::make_shared<fake_llm_client>(opts);
    fakes[name] = fake;
    model_entry e;
    e.card.name = name;
    e.card.context_length = context;
    e.card.embedding_size = embedding_size;
    e.tokenizer = std::make_shared<tok::byte_tokenizer>();
    e.chat_template = std::make_shared<tok::simple_chat_template>();
    e.client = fake;
    BOOST_REQUIRE((target ? target : svc.get())->add_model(std::move(e)));
  }

  test::http_reply post(const std::string& path, const std::string& body) {
    http_client c{svc->port()};
    return c.request("POST", path, body);
  }
  test::http_reply get(const std::string& path) {
    http_client c{svc->port()};
    return c.request("GET", path);
  }
};

std::string chat_body(const std::string& model, const std::string& extra = "") {
  return R"({"model":")" + model + R"(","messages":[{"role":"user","content":"hi"}])" +
         (extra.empty() ? "" : "," + extra) + "}";
}

std::string completion_body(const std::string& model, const std::string& extra = "") {
  return R"({"model":")" + model + R"(","prompt":"Say hi")" + (extra.empty() ? "" : "," + extra) +
         "}";
}

/// Parses every SSE data payload except [DONE] as JSON.
std::vector<json> chunks_of(const std::string& body) {
  std::vector<json> out;
  for (const auto& d : sse_data(body))
    if (d != "[DONE]")
      out.push_back(json::parse(d));
  return out;
}

std::string chat_text(const std::vector<json>& chunks) {
  std::string text;
  for (const auto& c : chunks)
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content"))
      text += c["choices"][0]["delta"]["content"].get<std::string>();
  return text;
}

void check_error(const test::http_reply& r, unsigned status, const std::string& param,
                 const std::string& code) {
  BOOST_TEST(r.status == status);
  BOOST_TEST(r.header("content-type") == "application/json");
  auto j = json::parse(r.body);
  BOOST_REQUIRE(j.contains("error"));
  BOOST_TEST(!j["error"]["message"].get<std::string>().empty());
  BOOST_TEST((param.empty() ? j["error"]["param"].is_null() : j["error"]["param"] == param));
  BOOST_TEST((code.empty() ? j["error"]["code"].is_null() : j["error"]["code"] == code));
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(frontend_service_suite, fixture)

BOOST_AUTO_TEST_CASE(chat_returns_the_whole_reply_with_usage) {
  auto r = post("/v1/chat/completions", chat_body("fake"));
  BOOST_REQUIRE_EQUAL(r.status, 200u);
  BOOST_TEST(r.header("content-type") == "application/json");
  auto j = json::parse(r.body);
  BOOST_TEST(j["object"] == "chat.completion");
  BOOST_TEST(j["id"].get<std::string>().starts_with("chatcmpl-"));
  BOOST_TEST(r.header("x-request-id") == j["id"].get<std::string>().substr(9));
  BOOST_TEST(j["model"] == "fake");
  BOOST_TEST(j["choices"][0]["message"]["role"] == "assistant");
  BOOST_TEST(j["choices"][0]["message"]["content"] == reply);
  BOOST_TEST(j["choices"][0]["finish_reason"] == "stop");
  BOOST_TEST(j["usage"]["prompt_tokens"] == chat_prompt.size());
  BOOST_TEST(j["usage"]["completion_tokens"] == reply.size() + 1); // + EOS
  BOOST_TEST(j["usage"]["total_tokens"] == chat_prompt.size() + reply.size() + 1);
  BOOST_TEST(j["usage"]["prompt_tokens_details"]["cached_tokens"] == 0);
  // What reached the backend: the templated prompt, EOS as stop token, the rest of the context.
  auto sent = fakes["fake"]->last_request();
  BOOST_TEST(tok::byte_tokenizer{}.decode(sent.token_ids) == chat_prompt);
  BOOST_TEST(sent.stop.stop_token_ids == std::vector<uint32_t>{tok::byte_tokenizer::eos_id});
  BOOST_TEST(sent.stop.max_tokens == 4096 - chat_prompt.size());
}

BOOST_AUTO_TEST_CASE(chat_stream_sends_role_deltas_finish_and_done) {
  auto r = post("/v1/chat/completions", chat_body("fake", R"("stream":true)"));
  BOOST_REQUIRE_EQUAL(r.status, 200u);
  BOOST_TEST(r.header("content-type") == "text/event-stream");
  BOOST_TEST(r.chunked);
  auto data = sse_data(r.body);
  BOOST_REQUIRE(data.size() >= 3u);
  BOOST_TEST(data.back() == "[DONE]");
  auto chunks = chunks_of(r.body);
  BOOST_TEST(chunks.front()["object"] == "chat.completion.chunk");
  BOOST_TEST(chunks.front()["choices"][0]["delta"]["role"] == "assistant");
  BOOST_TEST(chunks.front()["choices"][0]["delta"]["content"] == "");
  BOOST_TEST(chat_text(chunks) == reply);
  BOOST_TEST(chunks.back()["choices"][0]["finish_reason"] == "stop");
  BOOST_TEST(chunks.back()["choices"][0]["delta"].empty());
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    BOOST_TEST(chunks[i]["choices"][0]["finish_reason"].is_null());
    BOOST_TEST(chunks[i]["id"] == chunks.back()["id"]);
    BOOST_TEST(!chunks[i].contains("usage"));
  }
}

BOOST_AUTO_TEST_CASE(include_usage_adds_null_usage_and_a_final_usage_chunk) {
  auto r = post("/v1/chat/completions",
                chat_body("fake", R"("stream":true,"stream_options":{"include_usage":true})"));
  auto chunks = chunks_of(r.body);
  BOOST_REQUIRE(chunks.size() >= 3u);
  for (size_t i = 0; i + 1 < chunks.size(); ++i)
    BOOST_TEST(chunks[i]["usage"].is_null());
  const auto& last = chunks.back();
  BOOST_TEST(last["choices"].empty());
  BOOST_TEST(last["usage"]["completion_tokens"] == reply.size() + 1);
  BOOST_TEST(last["usage"]["prompt_tokens"] == chat_prompt.size());
  BOOST_TEST(sse_data(r.body).back() == "[DONE]");
}

BOOST_AUTO_TEST_CASE(completions_whole_and_streamed) {
  auto r = post("/v1/completions", completion_body("fake"));
  BOOST_REQUIRE_EQUAL(r.status, 200u);
  auto j = json::parse(r.body);
  BOOST_TEST(j["object"] == "text_completion");
  BOOST_TEST(j["id"].get<std::string>().starts_with("cmpl-"));
  BOOST_TEST(j["choices"][0]["text"] == reply);
  BOOST_TEST(j["usage"]["prompt_tokens"] == 6); // "Say hi"
  auto s = post("/v1/completions", completion_body("fake", R"("stream":true)"));
  auto chunks = chunks_of(s.body);
  std::string text;
  for (const auto& c : chunks)
    text += c["choices"][0]["text"].get<std::string>();
  BOOST_TEST(text == reply);
  BOOST_TEST(chunks.back()["object"] == "text_completion");
  BOOST_TEST(chunks.back()["choices"][0]["finish_reason"] == "stop");
  BOOST_TEST(sse_data(s.body).back() == "[DONE]");
}

BOOST_AUTO_TEST_CASE(token_id_prompts_reach_the_backend_unchanged) {
  auto r = post("/v1/completions", R"({"model":"fake","prompt":[72,105],"max_tokens":3})");
  BOOST_REQUIRE_EQUAL(r.status, 200u);
  BOOST_TEST(fakes["fake"]->last_request().token_ids == (std::vector<uint32_t>{72, 105}));
  BOOST_TEST(json::parse(r.body)["choices"][0]["text"] == "Hel");
}

BOOST_AUTO_TEST_CASE(max_tokens_cuts_with_finish_reason_length) {
  auto r = post("/v1/chat/completions", chat_body("fake", R"("max_tokens":5)"));
  auto j = json::parse(r.body);
  BOOST_TEST(j["choices"][0]["message"]["content"] == reply.substr(0, 5));
  BOOST_TEST(j["choices"][0]["finish_reason"] == "length");
  BOOST_TEST(j["usage"]["completion_tokens"] == 5);
  BOOST_TEST(fakes["fake"]->last_request().stop.max_tokens == 5u);
}

BOOST_AUTO_TEST_CASE(ignore_eos_runs_to_max_tokens) {
  auto r = post("/v1/completions", completion_body("fake", R"("max_tokens":40,"ignore_eos":true)"));
  auto j = json::parse(r.body);
  BOOST_TEST(j["choices"][0]["text"] == (reply + reply).substr(0, 40));
  BOOST_TEST(j["choices"][0]["finish_reason"] == "length");
  BOOST_TEST(fakes["fake"]->last_request().stop.stop_token_ids.empty());
}

BOOST_AUTO_TEST_CASE(stop_string_cuts_the_output_and_cancels_the_generation) {
  auto r = post("/v1/chat/completions", chat_body("fake", R"("stop":["fake"])"));
  auto j = json::parse(r.body);
  BOOST_TEST(j["choices"][0]["message"]["content"] == "Hello from the ");
  BOOST_TEST(j["choices"][0]["finish_reason"] == "stop");
  BOOST_TEST(fakes["fake"]->wait_for_cancellations(1));
  auto s = post("/v1/chat/completions", chat_body("fake", R"("stop":"from","stream":true)"));
  auto chunks = chunks_of(s.body);
  BOOST_TEST(chat_text(chunks) == "Hello ");
  BOOST_TEST(chunks.back()["choices"][0]["finish_reason"] == "stop");
  BOOST_TEST(fakes["fake"]->wait_for_cancellations(2));
}

BOOST_AUTO_TEST_CASE(unknown_model_is_404_model_not_found) {
  auto r = post("/v1/chat/completions", chat_body("nope"));
  check_error(r, 404, "model", "model_not_found");
  BOOST_TEST(json::parse(r.body)["error"]["type"] == "invalid_request_error");
}

BOOST_AUTO_TEST_CASE(invalid_bodies_are_400) {
  check_error(post("/v1/chat/completions", "{not json"), 400, "", "invalid_json");
  check_error(post("/v1/chat/completions", chat_body("fake", R"("temperature":5)")), 400,
              "temperature", "invalid_value");
  check_error(post("/v1/chat/completions", R"({"model":"fake","messages":[]})"), 400, "messages",
              "invalid_value");
  check_error(post("/v1/completions", R"({"model":"fake","prompt":[]})"), 400, "prompt",
              "invalid_value");
  check_error(post("/v1/chat/completions", chat_body("fake", R"("n":129)")), 400, "n",
              "invalid_value");
  check_error(post("/v1/chat/completions", chat_body("fake", R"("logit_bias":{"999":1})")), 400,
              "logit_bias", "invalid_value"); // the fake model's vocabulary has 257 tokens
  check_error(post("/v1/completions", completion_body("fake", R"("stop_token_ids":[3,257])")), 400,
              "stop_token_ids[1]", "invalid_value");
  check_error(post("/v1/completions", R"({"model":"fake","prompt":[1,999]})"), 400, "prompt",
              "invalid_value");
}

BOOST_AUTO_TEST_CASE(non_json_content_types_are_415_with_an_openai_error) {
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    const auto body = std::string{path} == "/v1/completions" ? completion_body("fake") : chat_body("fake");
    for (const char* type : {"application/x-www-form-urlencoded", "text/plain", "multipart/form-data"}) {
      BOOST_TEST_CONTEXT(path << " " << type) {
        http_client c{svc->port()};
        auto r = c.request("POST", path, body, {{"Content-Type", type}});
        check_error(r, 415, "", "");
        BOOST_TEST(json::parse(r.body)["error"]["type"] == "invalid_request_error");
        BOOST_TEST(json::parse(r.body)["error"]["message"].get<std::string>().find(type) != std::string::npos);
      }
    }
    for (const char* type : {"application/json; charset=utf-8", "Application/JSON"}) {
      BOOST_TEST_CONTEXT(path << " " << type) {
        http_client c{svc->port()};
        BOOST_TEST(c.request("POST", path, body, {{"Content-Type", type}}).status == 200u);
      }
    }
  }
  // No Content-Type at all is not JSON either (as Dynamo's axum frontend answers).
  http_client c{svc->port()};
  const auto body = chat_body("fake");
  auto raw = c.raw("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body);
  BOOST_TEST(raw.rfind("HTTP/1.1 415 ", 0) == 0u);
  BOOST_TEST(fakes["fake"]->started() == 4u); // only the JSON ones reached the backend
}

BOOST_AUTO_TEST_CASE(prompt_too_long_is_400_context_length_exceeded) {
  auto r = post("/v1/completions", completion_body("fake-short-context", R"("max_tokens":1)"));
  BOOST_TEST(r.status == 200u);
  std::string big(40, 'x');
  check_error(post("/v1/completions", R"({"model":"fake-short-context","prompt":")" + big + "\"}"),
              400, "prompt", "context_length_exceeded");
  check_error(post("/v1/completions", completion_body("fake-short-context", R"("max_tokens":30)")),
              400, "max_tokens", "context_length_exceeded");
}

BOOST_AUTO_TEST_CASE(client_leaving_a_stream_cancels_the_generation) {
  auto& fake = *fakes["fake-endless"];
  {
    http_client c{svc->port()};
    c.send("POST", "/v1/chat/completions", chat_body("fake-endless", R"("stream":true)"));
    BOOST_REQUIRE_EQUAL(c.read_header().status, 200u);
    const std::string first = R"("content":"He")"; // the first delta of the reply
    BOOST_TEST(c.read_body_until(first).find(first) != std::string::npos);
    c.close();
  }
  BOOST_TEST(fake.wait_for_cancellations(1));
}

BOOST_AUTO_TEST_CASE(client_leaving_a_unary_request_cancels_the_generation) {
  auto& fake = *fakes["fake-endless"];
  {
    http_client c{svc->port()};
    c.send("POST", "/v1/completions", completion_body("fake-endless"));
    BOOST_REQUIRE(fake.wait_for_started(1));
    c.close();
  }
  BOOST_TEST(fake.wait_for_cancellations(1));
  // Recorded as a disconnect; the counter is incremented before the actor quits.
  http_client m{svc->port()};
  std::string text;
  for (int i = 0; i < 100 && text.find("dynamo_frontend_disconnected_clients 1") ==
                               std::string::npos; ++i) {
    text = m.request("GET", "/metrics").body;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_TEST(text.find("dynamo_frontend_disconnected_clients 1") != std::string::npos);
  BOOST_TEST(text.find("# TYPE dynamo_frontend_disconnected_clients counter\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(stream_headers_and_role_chunk_arrive_before_the_first_token) {
  // fake-silent never sends a token: whatever arrives came before the first one.
  auto& fake = *fakes["fake-silent"];
  http_client c{svc->port()};
  c.send("POST", "/v1/chat/completions", chat_body("fake-silent", R"("stream":true)"));
  auto head = c.read_header();
  BOOST_REQUIRE_EQUAL(head.status, 200u);
  BOOST_TEST(head.header("content-type") == "text/event-stream");
  BOOST_TEST(!head.header("x-request-id").empty());
  const std::string role = R"("role":"assistant")";
  auto body = c.read_body_until(role);
  BOOST_REQUIRE(body.find(role) != std::string::npos);
  auto chunks = chunks_of(body);
  BOOST_REQUIRE_EQUAL(chunks.size(), 1u);
  BOOST_TEST(chunks[0]["choices"][0]["delta"]["content"] == "");
  BOOST_TEST(chunks[0]["choices"][0]["finish_reason"].is_null());
  BOOST_TEST(!c.body_done());
  BOOST_TEST(fake.cancellations() == 0u);
  c.close(); // leaving before the first token cancels the generation too
  BOOST_TEST(fake.wait_for_cancellations(1));
}

BOOST_AUTO_TEST_CASE(completion_stream_headers_arrive_before_the_first_token) {
  http_client c{svc->port()};
  c.send("POST", "/v1/completions", completion_body("fake-silent", R"("stream":true)"));
  auto head = c.read_header();
  BOOST_TEST(head.status == 200u);
  BOOST_TEST(head.header("content-type") == "text/event-stream");
  BOOST_TEST(!c.body_done());
}

BOOST_AUTO_TEST_CASE(backend_error_before_any_token_is_an_http_error_when_unary) {
  check_error(post("/v1/chat/completions", chat_body("fake-fail-first")), 503, "", "");
  auto r = post("/v1/completions", completion_body("fake-error-chunk"));
  check_error(r, 500, "", "");
  BOOST_TEST(r.body.find("illegal memory") == std::string::npos); // details stay in the log
}

BOOST_AUTO_TEST_CASE(backend_error_before_any_token_of_a_stream_is_an_error_event) {
  // The headers went out when the request was accepted: the error is an SSE event.
  auto r = post("/v1/chat/completions", chat_body("fake-fail-first", R"("stream":true)"));
  BOOST_REQUIRE_EQUAL(r.status, 200u);
  auto role = r.body.find(R"("role":"assistant")");
  auto error = r.body.find("event: error\ndata: {\"error\":");
  BOOST_REQUIRE(role != std::string::npos);
  BOOST_REQUIRE(error != std::string::npos);
  BOOST_TEST(role < error);
  BOOST_TEST(r.body.find("[DONE]") == std::string::npos);
  auto event = sse_data(r.body.substr(error)).front();
  BOOST_TEST(json::parse(event)["error"]["type"] == "service_unavailable");
  auto c = post("/v1/completions", completion_body("fake-error-chunk", R"("stream":true)"));
  BOOST_REQUIRE_EQUAL(c.status, 200u);
  BOOST_TEST(c.body.find("event: error") != std::string::npos);
  BOOST_TEST(c.body.find("illegal memory") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_worker_refusing_a_prompt_too_long_for_it_is_400_context_length_exceeded) {
  // Unary: an HTTP 400 with the worker's reason, never a 200 without tokens.
  auto r = post("/v1/completions", completion_body("fake-refuse"));
  check_error(r, 400, "", "context_length_exceeded");
  BOOST_TEST(json::parse(r.body)["error"]["type"] == "invalid_request_error");
  BOOST_TEST(r.body.find("context length is 32") != std::string::npos);
  // Stream: the headers went out when the request was accepted, so the same
  // envelope comes as an SSE error event, without [DONE] or a finish_reason.
  auto s = post("/v1/chat/completions", chat_body("fake-refuse", R"("stream":true)"));
  BOOST_REQUIRE_EQUAL(s.status, 200u);
  auto error = s.body.find("event: error\n");
  BOOST_REQUIRE(error != std::string::npos);
  auto event = json::parse(sse_data(s.body.substr(error)).front());
  BOOST_TEST(event["error"]["code"] == "context_length_exceeded");
  BOOST_TEST(event["error"]["type"] == "invalid_request_error");
  BOOST_TEST(s.body.find("[DONE]") == std::string::npos);
  BOOST_TEST(s.body.find("\"finish_reason\":\"") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_workers_refusal_reads_the_same_for_embeddings_as_for_completions) {
  // As an error chunk (finish=error with the worker's code) and as the error
  // value routed_client makes of it: each one's 400 carries the same message
  // whichever endpoint asked.
  for (std::string model : {"fake-refuse-chunk", "fake-refuse-embed"}) {
    auto c = post("/v1/completions", completion_body(model));
    auto e = post("/v1/embeddings", R"({"model":")" + model + R"(","input":"hi"})");
    check_error(c, 400, "", "context_length_exceeded");
    check_error(e, 400, "", "context_length_exceeded");
    BOOST_TEST(json::parse(e.body)["error"]["message"] == json::parse(c.body)["error"]["message"], model);
    BOOST_TEST(e.body.find("context length is 32") != std::string::npos, model);
  }
  auto chunk = json::parse(post("/v1/embeddings", R"({"model":"fake-refuse-chunk","input":"hi"})").body);
  BOOST_TEST(chunk["error"]["message"].get<std::string>().starts_with("backend error: "));
}

BOOST_AUTO_TEST_CASE(backend_error_mid_stream_sends_an_error_event_without_done) {
  auto r = post("/v1/chat/completions", chat_body("fake-fail-mid", R"("stream":true)"));
  BOOST_REQUIRE_EQUAL(r.status, 200u);
  BOOST_TEST(r.body.find("event: error\ndata: {\"error\":") != std::string::npos);
  BOOST_TEST(r.body.find("[DONE]") == std::string::npos);
  BOOST_TEST(chat_text(chunks_of(r.body.substr(0, r.body.find("event: error")))) ==
             reply.substr(0, 4));
}

BOOST_AUTO_TEST_CASE(silent_backend_times_out_with_504_and_is_cancelled) {
  frontend_options opts;
  opts.backend_timeout = std::chrono::milliseconds(100);
  auto quick = frontend_service::start(sys, opts);
  BOOST_REQUIRE(quick);
  add("fake-silent", {.mode = behaviour::silent}, 4096, quick->get());
  http_client c{(*quick)->port()};
  auto r = c.request("POST", "/v1/chat/completions", chat_body("fake-silent"));
  check_error(r, 504, "", "");
  BOOST_TEST(json::parse(r.body)["error"]["type"] == "timeout");
  BOOST_TEST(fakes["fake-silent"]->wait_for_cancellations(1));
  auto m = c.request("GET", "/metrics").body;
  BOOST_TEST(m.find(R"(dynamo_frontend_requests_total{model="fake-silent",)"
                    R"(endpoint="chat_completions",request_type="unary",status="error",)"
                    R"(error_type="response_timeout"} 1)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(metrics_count_requests_after_they_complete) {
  BOOST_TEST(post("/v1/chat/completions", chat_body("fake")).status == 200u);
  BOOST_TEST(post("/v1/completions", completion_body("fake", R"("stream":true)")).status == 200u);
  BOOST_TEST(post("/v1/chat/completions", chat_body("nope")).status == 404u);
  auto r = get("/metrics");
  BOOST_TEST(r.status == 200u);
  BOOST_TEST(r.header("content-type") == "text/plain; version=0.0.4; charset=utf-8");
  const auto& t = r.body;
  auto has = [&](const std::string& line) {
    BOOST_TEST_CONTEXT(line) { BOOST_TEST(t.find(line + "\n") != std::string::npos); }
  };
  has(R"(dynamo_frontend_requests_total{model="fake",endpoint="chat_completions",)"
      R"(request_type="unary",status="success",error_type=""} 1)");
  has(R"(dynamo_frontend_requests_total{model="fake",endpoint="completions",)"
      R"(request_type="stream",status="success",error_type=""} 1)");
  has(R"(dynamo_frontend_requests_total{model="",endpoint="chat_completions",)"
      R"(request_type="unary",status="error",error_type="not_found"} 1)");
  has(R"(dynamo_frontend_inflight_requests{model="fake"} 0)");
  has(R"(dynamo_frontend_queued_requests{model="fake"} 0)");
  has("dynamo_frontend_output_tokens_total{model=\"fake\"} " + std::to_string(2 * (reply.size() + 1)));
  has(R"(dynamo_frontend_time_to_first_token_seconds_count{model="fake"} 2)");
  has(R"(dynamo_frontend_input_sequence_tokens_sum{model="fake"} 26)"); // 20 + 6
  has(R"(dynamo_frontend_output_sequence_tokens_count{model="fake"} 2)");
  has(R"(dynamo_frontend_request_duration_seconds_count{model="fake"} 2)");
  has("dynamo_frontend_inter_token_latency_seconds_count{model=\"fake\"} " +
      std::to_string(2 * (reply.size() + 1 - 2))); // every token after the first chunk of two
}

BOOST_AUTO_TEST_CASE(models_are_listed_and_found_by_id) {
  auto list = json::parse(get("/v1/models").body);
  BOOST_TEST(list["object"] == "list");
  std::vector<std::string> ids;
  for (const auto& m : list["data"]) {
    ids.push_back(m["id"]);
    BOOST_TEST(m["object"] == "model");
    BOOST_TEST(m["owned_by"] == "dynamo");
    BOOST_TEST(m["created"].get<int64_t>() > 0);
  }
  BOOST_TEST(ids.size() == fakes.size());
  BOOST_TEST(std::is_sorted(ids.begin(), ids.end()));
  BOOST_TEST(json::parse(get("/v1/models/org/fake-slash").body)["id"] == "org/fake-slash");
  BOOST_TEST(json::parse(get("/v1/models/org%2Ffake-slash").body)["id"] == "org/fake-slash");
  check_error(get("/v1/models/unknown"), 404, "model", "model_not_found");
}

BOOST_AUTO_TEST_CASE(health_follows_the_registry_and_live_is_always_up) {
  auto h = get("/health");
  BOOST_TEST(h.status == 200u);
  BOOST_TEST(json::parse(h.body)["status"] == "healthy");
  for (const auto& [name, _] : fakes)
    BOOST_TEST(svc->remove_model(name));
  BOOST_TEST(!svc->remove_model("fake"));
  auto down = get("/health");
  BOOST_TEST(down.status == 503u);
  BOOST_TEST(json::parse(down.body)["status"] == "unhealthy");
  BOOST_TEST(json::parse(get("/live").body)["status"] == "live");
  check_error(post("/v1/chat/completions", chat_body("fake")), 404, "model", "model_not_found");
}

BOOST_AUTO_TEST_CASE(openapi_and_transport_errors_use_openai_bodies) {
  auto doc = get("/openapi.json");
  BOOST_TEST(doc.status == 200u);
  BOOST_TEST(json::parse(doc.body)["openapi"] == "3.0.3");
  auto wrong = get("/v1/chat/completions");
  check_error(wrong, 405, "", "");
  BOOST_TEST(wrong.header("allow") == "POST");
  check_error(get("/v2/nothing"), 404, "", "");
}

BOOST_AUTO_TEST_CASE(add_model_rejects_incomplete_entries) {
  model_entry e;
  e.card.name = "broken";
  e.card.context_length = 16;
  BOOST_TEST(!svc->add_model(e));
  e.tokenizer = std::make_shared<tok::byte_tokenizer>();
  e.chat_template = std::make_shared<tok::simple_chat_template>();
  e.client = fakes["fake"];
  e.card.context_length = 0;
  BOOST_TEST(!svc->add_model(e));
  e.card.context_length = 16;
  BOOST_TEST(static_cast<bool>(svc->add_model(e)));
}

BOOST_AUTO_TEST_CASE(many_concurrent_streams_all_complete) {
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&] {
      http_client c{svc->port()};
      for (int i = 0; i < 5; ++i) {
        auto r = c.request("POST", "/v1/chat/completions", chat_body("fake", R"("stream":true)"));
        if (chat_text(chunks_of(r.body)) == reply)
          ++ok;
      }
    });
  for (auto& t : clients)
    t.join();
  BOOST_TEST(ok.load() == 40);
}

BOOST_AUTO_TEST_SUITE_END()
