// dynamo-route-workload: writes a synthetic multi-turn, prefix-heavy trace as
// Mooncake-style JSONL (--out), or analyzes an existing one (--in), and prints
// a JSON summary (requests, mean lengths, duration, block reuse ratio).
#include "runtime/route/workload.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

using namespace dynamo;
using namespace dynamo::route;

namespace {

constexpr const char* usage =
    "dynamo-route-workload [--out trace.jsonl | --in trace.jsonl] [options]\n"
    "  --sessions 64  --system-prompts 4  --system-prompt-tokens 2048\n"
    "  --min-turns 2 --max-turns 6  --min-user-tokens 64 --max-user-tokens 512\n"
    "  --min-output-tokens 32 --max-output-tokens 256\n"
    "  --sessions-per-second 4  --mean-think-ms 2000  --trace-block-size 512  --seed 1\n"
    "Generates (or reads) a Mooncake-style trace and prints a JSON summary.";

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "%s (try --help)\n", why.c_str());
  std::exit(2);
}

template <class T>
T number(std::string_view flag, std::string_view text) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size())
    fail(fmt::format("{} needs a number, got '{}'", flag, text));
  return v;
}

bool set_option(workload_config& c, std::string_view f, std::string_view v) {
  if (f == "--sessions") c.sessions = number<uint32_t>(f, v);
  else if (f == "--system-prompts") c.system_prompts = number<uint32_t>(f, v);
  else if (f == "--system-prompt-tokens") c.system_prompt_tokens = number<uint32_t>(f, v);
  else if (f == "--min-turns") c.min_turns = number<uint32_t>(f, v);
  else if (f == "--max-turns") c.max_turns = number<uint32_t>(f, v);
  else if (f == "--min-user-tokens") c.min_user_tokens = number<uint32_t>(f, v);
  else if (f == "--max-user-tokens") c.max_user_tokens = number<uint32_t>(f, v);
  else if (f == "--min-output-tokens") c.min_output_tokens = number<uint32_t>(f, v);
  else if (f == "--max-output-tokens") c.max_output_tokens = number<uint32_t>(f, v);
  else if (f == "--sessions-per-second") c.sessions_per_second = number<double>(f, v);
  else if (f == "--mean-think-ms") c.mean_think_ms = number<double>(f, v);
  else if (f == "--trace-block-size") c.trace_block_size = number<uint32_t>(f, v);
  else if (f == "--seed") c.seed = number<uint64_t>(f, v);
  else return false;
  return true;
}

} // namespace

int main(int argc, char** argv) {
  workload_config config;
  std::string in, out;
  for (int i = 1; i < argc; ++i) {
    std::string_view f = argv[i];
    if (f == "--help" || f == "-h") {
      std::puts(usage);
      return 0;
    }
    if (i + 1 >= argc)
      fail(fmt::format("{} needs a value", f));
    std::string_view v = argv[++i];
    if (f == "--in")
      in = v;
    else if (f == "--out")
      out = v;
    else if (!set_option(config, f, v))
      fail(fmt::format("unknown option {}", f));
  }
  std::vector<trace_record> records;
  if (!in.empty()) {
    std::ifstream file(in);
    if (!file)
      fail("cannot open " + in);
    auto read = read_jsonl(file);
    if (!read)
      fail(describe(read.error()));
    records = std::move(*read);
  } else {
    records = generate_workload(config);
  }
  if (!out.empty()) {
    std::ofstream file(out);
    write_jsonl(file, records);
    if (!file)
      fail("cannot write " + out);
  }
  workload_stats s = analyze_workload(records);
  fmt::print("{{\"requests\": {}, \"mean_input_length\": {:.1f}, \"mean_output_length\": {:.1f}, "
             "\"duration_s\": {:.1f}, \"reuse_ratio\": {:.4f}}}\n",
             s.requests, s.mean_input_length, s.mean_output_length, s.duration_s, s.reuse_ratio);
  return 0;
}
