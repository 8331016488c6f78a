// actors_router_vllm_relay_tests: a Python stand-in for vLLM's KV-event
// publisher feeds a router through model_watcher. Without python3 and its
// pyzmq and msgpack (scripts/setup.sh installs them) it prints why and exits
// 77, which CTest reports as skipped.
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>

namespace {
bool init_suite() {
  boost::unit_test::framework::master_test_suite().p_name.value = "actors_router_vllm_relay";
  return true;
}
} // namespace

int main(int argc, char* argv[]) {
  if (std::system("python3 -c 'import zmq, msgpack' >/dev/null 2>&1") != 0) {
    std::puts("actors_router_vllm_relay_tests: python3 with pyzmq and msgpack is missing; skipped");
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_suite, argc, argv);
}
