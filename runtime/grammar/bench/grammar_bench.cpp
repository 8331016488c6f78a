// dynamo-grammar-bench: the cost of the structured-output token mask, printed
// as JSON next to the CPU engine's batch-1 decode step measured in the same
// run. For json_object, a realistic schema, a parallel tool-call grammar and
// pretty-printed JSON (flexible whitespace),
// at the SmolLM2 vocabulary (49,152) and the Qwen2 one (151,936): grammar
// compile time, mask time per token (median, p99, max) with a cold cache
// (first request) and warm (later requests), full precompute time and size;
// then decode steps without and with a mask per step.
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/matcher.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace dynamo;
using clock_type = std::chrono::steady_clock;

const char* usage =
    "usage: dynamo-grammar-bench [--model PATH] [--qwen-vocab PATH] [--threads N] [--steps N] [--repeat N] [--smoke]\n"
    "Prints JSON: per grammar and vocabulary, compile time and mask time per token (cold and warm cache),\n"
    "and the CPU engine's batch-1 decode step (SmolLM2) without and with a mask per step.\n"
    "Defaults: $DYNAMO_MODEL_PATH or ~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf,\n"
    "~/.cache/dynamo/llama.cpp-vocab/ggml-vocab-qwen2.gguf. --smoke: SmolLM2 vocab only, few steps.\n";

struct options {
  std::string model, qwen;
  unsigned threads = 0;
  uint32_t steps = 48;
  int repeat = 5;
  bool smoke = false;
};

std::string home() {
  const char* h = std::getenv("HOME");
  return h != nullptr ? h : "";
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

struct stats {
  double median = 0, p99 = 0, max = 0, mean = 0;
};

stats summarize(std::vector<double> v) {
  stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, size_t(double(v.size()) * 0.99))];
  s.max = v.back();
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  return s;
}

std::string json_stats(const stats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"median\": %.4f, \"p99\": %.4f, \"max\": %.4f, \"mean\": %.4f}", s.median, s.p99,
                s.max, s.mean);
  return buf;
}

const char* order_schema = R"({"type":"object","properties":{
  "order_id":{"type":"string","format":"uuid"},
  "customer":{"type":"object","properties":{"name":{"type":"string","maxLength":80},"email":{"type":"string","format":"email"},
              "vip":{"type":"boolean"}},"required":["name","email"]},
  "items":{"type":"array","minItems":1,"items":{"type":"object","properties":{
           "sku":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},"qty":{"type":"integer","minimum":1,"maximum":100},
           "price":{"type":"number","minimum":0}},"required":["sku","qty","price"]}},
  "status":{"enum":["pending","shipped","delivered"]},
  "placed_at":{"type":"string","format":"date-time"},
  "notes":{"type":["string","null"],"description":"free text"}},
  "required":["order_id","customer","items","status","placed_at"]})";

const char* order_doc =
    R"({"order_id": "123e4567-e89b-12d3-a456-426614174000", "customer": {"name": "Ada Lovelace", "email": )"
    R"("ada@example.com", "vip": true}, "items": [{"sku": "ABC-1234", "qty": 2, "price": 19.99}, {"sku": "XYZ-0001", )"
    R"("qty": 1, "price": 5}], "status": "shipped", "placed_at": "2024-05-01T12:30:00Z", "notes": "Leave the parcel )"
    R"(at the door, please. Thanks a lot for the quick delivery!"})";

const char* object_doc =
    R"({"title": "Notes on the Analytical Engine", "year": 1843, "rating": 4.75, "tags": ["computing", "history", )"
    R"("mathematics"], "author": {"name": "Ada Lovelace", "born": 1815, "languages": ["en", "fr"]}, "summary": "The )"
    R"(engine might act upon other things besides number, were objects found whose mutual fundamental relations could )"
    R"(be expressed by those of the abstract science of operations.", "in_print": true, "isbn": null})";

const char* tools_doc =
    R"([{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}, {"name": "search", "arguments": )"
    R"({"query": "best croissants in Paris", "max_results": 5}}])";

const char* pretty_doc = "{\n  \"title\": \"Notes on the Analytical Engine\",\n  \"year\": 1843,\n  \"tags\": [\n"
                         "    \"computing\",\n    \"history\"\n  ],\n  \"author\": {\n    \"name\": \"Ada Lovelace\",\n"
                         "    \"born\": 1815\n  },\n  \"in_print\": true\n}";

std::vector<gram::tool_function> tools() {
  return {{"get_weather", R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]}},
                             "required":["city"]})"},
          {"search", R"({"type":"object","properties":{"query":{"type":"string"},
                        "max_results":{"type":"integer","minimum":1,"maximum":20}},"required":["query"]})"},
          {"send_email", R"({"type":"object","properties":{"to":{"type":"string","format":"email"},"subject":{"type":"string"},
                            "body":{"type":"string"}},"required":["to","subject","body"]})"}};
}

struct workload {
  std::string name;
  gram::grammar g;
  std::string doc;
};

std::vector<workload> workloads() {
  std::vector<workload> w;
  w.push_back({"json_object", gram::json_object_grammar(), object_doc});
  w.push_back({"order_schema", *gram::json_schema_grammar(order_schema), order_doc});
  w.push_back({"tool_calls", *gram::tool_call_grammar(tools(), true), tools_doc});
  // Pretty-printed output needs the flexible whitespace policy.
  const gram::json_options flexible{.whitespace = gram::json_whitespace::flexible};
  w.push_back({"json_object_flexible_ws", gram::json_object_grammar(flexible), pretty_doc});
  return w;
}

/// Mask times (ms) for one pass over `ids`, accepting each token.
std::vector<double> run_pass(const std::shared_ptr<const gram::compiled_grammar>& g, const std::vector<uint32_t>& ids) {
  gram::matcher m(g);
  std::vector<uint64_t> mask(m.mask_words());
  std::vector<double> t;
  for (uint32_t id : ids) {
    const auto t0 = clock_type::now();
    m.fill_next_token_bitmask(mask);
    t.push_back(ms_since(t0));
    if (!((mask[id >> 6] >> (id & 63)) & 1) || !m.accept_token(id)) {
      std::fprintf(stderr, "the document's token %u is not allowed by the grammar\n", id);
      std::exit(1);
    }
  }
  return t;
}

struct vocab_result {
  std::string json;
  std::vector<uint32_t> ids; // of the order document (for the decode loop)
  std::shared_ptr<const gram::compiled_grammar> order;
};

vocab_result bench_vocab(const std::string& path, const options& o) {
  auto f = gguf::file::open(path);
  if (!f) throw std::runtime_error("cannot open " + path + ": " + describe(f.error()));
  auto t = tok::load_tokenizer(**f);
  if (!t) throw std::runtime_error("no tokenizer in " + path + ": " + describe(t.error()));
  const auto t0 = clock_type::now();
  auto v = gram::token_vocab::from_tokenizer(**t);
  if (!v) throw std::runtime_error(describe(v.error()));
  const double vocab_ms = ms_since(t0);
  std::ostringstream js;
  js << "{\"file\": \"" << std::filesystem::path(path).filename().string() << "\", \"vocab\": " << (*v)->size()
     << ", \"vocab_index_ms\": " << vocab_ms << ", \"grammars\": {";
  vocab_result out;
  bool first = true;
  for (workload& w : workloads()) {
    const std::vector<uint32_t> ids = (*t)->encode(w.doc, false);
    const auto c0 = clock_type::now();
    auto cg = gram::compiled_grammar::compile(w.g, *v);
    const double compile_ms = ms_since(c0);
    if (!cg) throw std::runtime_error(describe(cg.error()));
    const stats cold = summarize(run_pass(*cg, ids));
    std::vector<double> warm;
    for (int r = 0; r < o.repeat; ++r) {
      auto p = run_pass(*cg, ids);
      warm.insert(warm.end(), p.begin(), p.end());
    }
    auto fresh = gram::compiled_grammar::compile(w.g, *v);
    const auto p0 = clock_type::now();
    (*fresh)->precompute();
    const double precompute_ms = ms_since(p0);
    js << (first ? "" : ", ") << "\"" << w.name << "\": {\"doc_tokens\": " << ids.size()
       << ", \"states\": " << (*cg)->rules().state_count() << ", \"compile_ms\": " << compile_ms
       << ", \"mask_ms_cold\": " << json_stats(cold) << ", \"mask_ms_warm\": " << json_stats(summarize(warm))
       << ", \"precompute_all_ms\": " << precompute_ms << ", \"cache_mib_all_states\": "
       << double((*fresh)->cached_bytes()) / (1 << 20) << "}";
    first = false;
    if (w.name == "order_schema") out.ids = ids, out.order = *cg;
  }
  js << "}}";
  out.json = js.str();
  return out;
}

/// Batch-1 decode step times (ms) of the CPU engine; with `g`, a mask is
/// filled (and the next document token accepted) after every step.
std::vector<double> decode_steps(model::cpu_executor& ex, uint32_t steps, const vocab_result* g) {
  const uint32_t prompt = 128, vocab = ex.model().config().n_vocab;
  std::mt19937 rng(7);
  engine::batch_entry e;
  e.seq_id = 0;
  for (uint32_t i = 0; i < prompt; ++i) e.tokens.push_back(rng() % vocab);
  for (uint32_t b = 0; b < (prompt + steps + 16) / 16 + 1; ++b) e.block_table.push_back(b);
  e.sample = true;
  e.sampling.temperature = 0.0f;
  e.sample_position = prompt;
  auto run = [&]() {
    engine::batch b;
    b.entries = {e};
    b.num_tokens = static_cast<uint32_t>(e.tokens.size());
    auto r = ex.execute(b);
    if (!r) throw std::runtime_error(describe(r.error()));
    return *r->sampled[0];
  };
  uint32_t next = run();
  e.start_pos = prompt;
  std::unique_ptr<gram::matcher> m;
  std::vector<uint64_t> mask;
  size_t pos = 0;
  if (g != nullptr) m = std::make_unique<gram::matcher>(g->order), mask.resize(m->mask_words());
  std::vector<double> t;
  for (uint32_t s = 0; s < steps; ++s) {
    e.tokens = {next};
    e.sample_position = e.start_pos + 1;
    const auto t0 = clock_type::now();
    next = run();
    if (m) {
      m->fill_next_token_bitmask(mask);
      if (pos == g->ids.size()) m->reset(), pos = 0;
      (void)m->accept_token(g->ids[pos++]);
    }
    t.push_back(ms_since(t0));
    e.start_pos += 1;
  }
  return t;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  o.model = std::getenv("DYNAMO_MODEL_PATH") != nullptr && *std::getenv("DYNAMO_MODEL_PATH")
                ? std::getenv("DYNAMO_MODEL_PATH")
                : home() + "/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  o.qwen = home() + "/.cache/dynamo/llama.cpp-vocab/ggml-vocab-qwen2.gguf";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (a == "--model") o.model = next();
    else if (a == "--qwen-vocab") o.qwen = next();
    else if (a == "--threads") o.threads = static_cast<unsigned>(std::atoi(next().c_str()));
    else if (a == "--steps") o.steps = static_cast<uint32_t>(std::max(4, std::atoi(next().c_str())));
    else if (a == "--repeat") o.repeat = std::max(1, std::atoi(next().c_str()));
    else if (a == "--smoke") o.smoke = true, o.steps = 4, o.repeat = 1;
    else {
      std::fprintf(stderr, "unknown argument %s\n%s", a.c_str(), usage);
      return 2;
    }
  }
  if (!std::filesystem::is_regular_file(o.model)) {
    if (o.smoke) {
      std::puts("{\"skipped\": \"model file not found\"}");
      return 0;
    }
    std::fprintf(stderr, "model file not found: %s\n", o.model.c_str());
    return 1;
  }
  try {
    const vocab_result smol = bench_vocab(o.model, o);
    std::string qwen_json = "null";
    if (!o.smoke && std::filesystem::is_regular_file(o.qwen)) qwen_json = bench_vocab(o.qwen, o).json;
    model::cpu_executor_config cfg;
    cfg.model_path = o.model;
    cfg.threads = o.threads;
    cfg.num_blocks = (128 + o.steps + 16) / 16 + 2;
    auto ex = model::cpu_executor::create(cfg);
    if (!ex) throw std::runtime_error("cannot load " + o.model + ": " + describe(ex.error()));
    (void)decode_steps(**ex, 4, nullptr); // warm-up
    std::vector<double> without, with;
    for (int r = 0; r < (o.smoke ? 1 : 3); ++r) { // interleaved, so both see the same machine load
      auto a = decode_steps(**ex, o.steps, nullptr);
      auto b = decode_steps(**ex, o.steps, &smol);
      without.insert(without.end(), a.begin(), a.end());
      with.insert(with.end(), b.begin(), b.end());
    }
    const stats sw = summarize(without), sm = summarize(with);
    double load = -1;
    std::ifstream("/proc/loadavg") >> load;
    std::printf("{\n  \"smollm2\": %s,\n  \"qwen2\": %s,\n  \"decode_step_ms\": {\"model\": \"%s\", \"threads\": %u, "
                "\"without_mask\": %s, \"with_mask\": %s, \"with_over_without_median\": %.4f},\n"
                "  \"load_average_1m\": %.2f\n}\n",
                smol.json.c_str(), qwen_json.c_str(), std::filesystem::path(o.model).filename().c_str(),
                (*ex)->threads(), json_stats(sw).c_str(), json_stats(sm).c_str(),
                sw.median > 0 ? sm.median / sw.median : 0.0, load);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "benchmark failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
