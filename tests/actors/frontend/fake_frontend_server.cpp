// Test-only server: frontend_service with deterministic fake backends, for
// driving the real HTTP API from other processes (tests/e2e/openai_client_test.py).
// Prints "listening on PORT" once ready and serves until SIGTERM or SIGINT.
#include "actors/core/type_ids.hpp"
#include "actors/frontend/frontend_service.hpp"
#include "runtime/core/log.hpp"
#include "tests/actors/frontend/fake_llm_client.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace {

void usage() {
  std::cout << "usage: fake_frontend_server [--host H] [--port N] [--io-threads N]\n"
               "Serves the OpenAI API with fake backends: 'fake' (a fixed reply), 'fake-endless'\n"
               "(tokens until cancelled), 'fake-silent' (no token until cancelled),\n"
               "'fake-fail-first' and 'fake-fail-mid' (errors),\n"
               "and prints \"listening on PORT\" when ready. Stops on SIGTERM or SIGINT.\n";
}

struct config : caf::actor_system_config {
  config() {
    set("scheduler.policy", caf::atom("sharing"));
    set("scheduler.max-threads", 2);
    dynamo::actors::register_types(*this);
  }
};

dynamo::frontend::model_entry fake_model(const std::string& name, dynamo::test::fake_options o) {
  dynamo::frontend::model_entry e;
  e.card.name = name;
  e.card.source = "fake";
  e.card.context_length = 4096;
  e.tokenizer = std::make_shared<dynamo::tok::byte_tokenizer>();
  e.chat_template = std::make_shared<dynamo::tok::simple_chat_template>();
  e.client = std::make_shared<dynamo::test::fake_llm_client>(std::move(o));
  return e;
}

} // namespace

int main(int argc, char** argv) {
  dynamo::frontend::frontend_options opts;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (arg == "--host") {
      opts.http.host = value();
    } else if (arg == "--port") {
      opts.http.port = static_cast<uint16_t>(std::atoi(value().c_str()));
    } else if (arg == "--io-threads") {
      opts.http.io_threads = static_cast<unsigned>(std::atoi(value().c_str()));
    } else {
      std::cerr << "unknown argument: " << arg << "\n";
      usage();
      return 2;
    }
  }
  dynamo::init_logging("fake_frontend_server");
  // Block the stop signals in every thread; main waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  config cfg;
  caf::actor_system sys{cfg};
  auto svc = dynamo::frontend::frontend_service::start(sys, opts);
  if (!svc) {
    std::cerr << "cannot start: " << dynamo::describe(svc.error()) << "\n";
    return 1;
  }
  dynamo::test::fake_options endless;
  endless.mode = dynamo::test::fake_options::behaviour::endless;
  endless.delay = std::chrono::milliseconds(5);
  using behaviour = dynamo::test::fake_options::behaviour;
  for (auto entry : {fake_model("fake", {}), fake_model("fake-endless", endless),
                     fake_model("fake-silent", {.mode = behaviour::silent}),
                     fake_model("fake-fail-first", {.mode = behaviour::fail_first}),
                     fake_model("fake-fail-mid", {.mode = behaviour::fail_mid})})
    if (auto ok = (*svc)->add_model(std::move(entry)); !ok) {
      std::cerr << "cannot add model: " << dynamo::describe(ok.error()) << "\n";
      return 1;
    }
  std::printf("listening on %u\n", static_cast<unsigned>((*svc)->port()));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  (*svc)->stop();
  return 0;
}
