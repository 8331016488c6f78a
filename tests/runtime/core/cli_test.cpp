#include "runtime/core/cli.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;

BOOST_AUTO_TEST_SUITE(cli_parsing)

BOOST_AUTO_TEST_CASE(parses_every_kind_of_argument) {
  std::string in = "http", out = "engine", model;
  uint32_t workers = 1;
  double ratio = 1.0;
  bool verbose = false, cache = true;
  int64_t port = 8000;
  cli c("dynamo-run", "test");
  c.pseudo("in", &in, "input").pseudo("out", &out, "engine")
    .option("num-workers", &workers, "n").option("speedup-ratio", &ratio, "r")
    .option("verbose", &verbose, "v").option("prefix-caching", &cache, "c")
    .option("http-port", &port, "p").option("model", &model, "m");
  const char* argv[] = {"dynamo-run", "out=mocker", "--num-workers", "4", "--speedup-ratio=0",
                        "--verbose", "--no-prefix-caching", "--http-port=0", "--model", "x y"};
  auto r = c.parse(10, argv);
  BOOST_REQUIRE(r);
  BOOST_TEST(*r);
  BOOST_TEST(in == "http");
  BOOST_TEST(out == "mocker");
  BOOST_TEST(workers == 4u);
  BOOST_TEST(ratio == 0.0);
  BOOST_TEST(verbose);
  BOOST_TEST(!cache);
  BOOST_TEST(port == 0);
  BOOST_TEST(model == "x y");
}

BOOST_AUTO_TEST_CASE(errors_name_the_argument) {
  uint32_t n = 0;
  cli c("prog", "test");
  c.option("num", &n, "n");
  const char* bad_number[] = {"prog", "--num", "4x"};
  auto r1 = c.parse(3, bad_number);
  BOOST_REQUIRE(!r1);
  BOOST_TEST(message_of(r1.error()).find("--num") != std::string::npos);
  const char* unknown[] = {"prog", "--nope"};
  auto r2 = c.parse(2, unknown);
  BOOST_REQUIRE(!r2);
  BOOST_TEST(message_of(r2.error()).find("--nope") != std::string::npos);
  const char* missing[] = {"prog", "--num"};
  BOOST_TEST(!c.parse(2, missing));
  const char* stray[] = {"prog", "stray"};
  BOOST_TEST(!c.parse(2, stray));
}

BOOST_AUTO_TEST_CASE(on_off_values_parse_and_others_name_the_flag) {
  BOOST_TEST(*parse_on_off("cpu-repack", "on"));
  BOOST_TEST(!*parse_on_off("cpu-repack", "off"));
  BOOST_TEST(!*parse_on_off("cpu-repack", "false"));
  const auto bad = parse_on_off("cpu-repack", "maybe");
  BOOST_REQUIRE(!bad);
  BOOST_TEST(message_of(bad.error()) == "--cpu-repack: 'maybe' is not on or off");
  bool b = true;
  cli c("prog", "test");
  c.option("flag", &b, "b");
  const char* off[] = {"prog", "--flag=off"};
  BOOST_REQUIRE(c.parse(2, off));
  BOOST_TEST(!b);
}

BOOST_AUTO_TEST_CASE(help_lists_options_with_defaults) {
  uint32_t n = 7;
  cli c("prog", "does things");
  c.option("num", &n, "how many");
  auto h = c.help();
  BOOST_TEST(h.find("--num VALUE") != std::string::npos);
  BOOST_TEST(h.find("[default: 7]") != std::string::npos);
  BOOST_TEST(h.find("--help") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
