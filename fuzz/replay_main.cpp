// A main() for the fuzz targets where libFuzzer is not available (the g++
// sanitizer tree, scripts/sanitize.sh): replays every file of a corpus
// directory through LLVMFuzzerTestOneInput, then feeds seeded random mutations
// of them (bit flips, byte sets, cuts, splices, repeats) until a time budget
// ends. Not coverage-guided: it catches what ASan/UBSan see near the seeds.
// Usage: <target> [-seconds=N] [-seed=N] [-artifact=FILE] CORPUS_DIR...
// A sanitizer report writes the input being run to FILE first. Single-threaded.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#include <sanitizer/common_interface_defs.h>
#define DYNAMO_REPLAY_DEATH_CALLBACK 1
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

using input = std::vector<uint8_t>;
constexpr size_t max_len = 65536; // as scripts/fuzz.sh's -max_len

const std::vector<uint8_t>* g_current = nullptr; // the input being run
std::string g_artifact = "replay-crash.bin";

void save_current() {
  if (!g_current)
    return;
  if (std::FILE* f = std::fopen(g_artifact.c_str(), "wb")) {
    std::fwrite(g_current->data(), 1, g_current->size(), f);
    std::fclose(f);
    std::fprintf(stderr, "replay: input written to %s\n", g_artifact.c_str());
  }
}

void run(const std::vector<uint8_t>& x) {
  g_current = &x;
  LLVMFuzzerTestOneInput(x.data(), x.size());
  g_current = nullptr;
}

std::vector<input> read_corpus(const std::vector<std::string>& dirs) {
  std::vector<input> out;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(d, ec)) {
      if (!e.is_regular_file())
        continue;
      std::ifstream f{e.path(), std::ios::binary};
      input bytes{std::istreambuf_iterator<char>{f}, {}};
      if (bytes.size() <= max_len)
        out.push_back(std::move(bytes));
    }
  }
  return out;
}

input mutate(const std::vector<input>& corpus, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  input x = corpus.empty() ? input{} : corpus[pick(corpus.size())];
  for (int rounds = 1 + static_cast<int>(pick(4)); rounds > 0; --rounds) {
    switch (pick(6)) {
    case 0: // flip a bit
      if (!x.empty())
        x[pick(x.size())] ^= static_cast<uint8_t>(1u << pick(8));
      break;
    case 1: { // set a byte to an interesting value
      static constexpr uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xc1, 0xdd, 0xdf, '{', '"', '%', '\n'};
      if (!x.empty())
        x[pick(x.size())] = interesting[pick(std::size(interesting))];
      break;
    }
    case 2: // cut the tail
      x.resize(pick(x.size() + 1));
      break;
    case 3: { // erase a range
      if (x.empty())
        break;
      size_t at = pick(x.size()), n = 1 + pick(std::min<size_t>(16, x.size() - at));
      x.erase(x.begin() + static_cast<long>(at), x.begin() + static_cast<long>(at + n));
      break;
    }
    case 4: { // splice in a piece of another input
      const auto& y = corpus.empty() ? x : corpus[pick(corpus.size())];
      if (y.empty())
        break;
      size_t from = pick(y.size()), n = 1 + pick(std::min<size_t>(64, y.size() - from));
      input piece(y.begin() + static_cast<long>(from), y.begin() + static_cast<long>(from + n));
      x.insert(x.begin() + static_cast<long>(pick(x.size() + 1)), piece.begin(), piece.end());
      break;
    }
    default: { // repeat a range (lengths, nesting)
      if (x.empty())
        break;
      size_t at = pick(x.size()), n = 1 + pick(std::min<size_t>(8, x.size() - at));
      input piece(x.begin() + static_cast<long>(at), x.begin() + static_cast<long>(at + n));
      for (size_t k = 1 + pick(32); k > 0 && x.size() < max_len; --k)
        x.insert(x.begin() + static_cast<long>(at), piece.begin(), piece.end());
      break;
    }
    }
  }
  if (x.size() > max_len)
    x.resize(max_len);
  return x;
}

} // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  double seconds = 0;
  uint64_t seed = 1;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string_view a{argv[i]};
    if (a.starts_with("-seconds="))
      seconds = std::atof(argv[i] + 9);
    else if (a.starts_with("-seed="))
      seed = std::strtoull(argv[i] + 6, nullptr, 10);
    else if (a.starts_with("-artifact="))
      g_artifact = argv[i] + 10;
    else if (a.starts_with("-")) {
      std::fprintf(stderr, "usage: %s [-seconds=N] [-seed=N] [-artifact=FILE] CORPUS_DIR...\n", argv[0]);
      return 2;
    } else
      dirs.emplace_back(a);
  }
#ifdef DYNAMO_REPLAY_DEATH_CALLBACK
  __sanitizer_set_death_callback(save_current);
#endif
  auto corpus = read_corpus(dirs);
  for (const auto& x : corpus)
    run(x);
  std::mt19937_64 rng{seed};
  uint64_t mutated = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    for (int k = 0; k < 64; ++k, ++mutated) {
      run(mutate(corpus, rng));
    }
  }
  std::printf("replay: %zu corpus inputs, %llu mutations (seed %llu)\n", corpus.size(),
              static_cast<unsigned long long>(mutated), static_cast<unsigned long long>(seed));
  return 0;
}
