// transfer_test_peer: a kv_receiver in a separate process for the process tests
// (see receiver_peer.cpp for the commands). Usage:
//   transfer_test_peer <transport> <blocks> <layers> <block_size> <kv_heads> <head_dim>
//                      <f32|f16|bf16> <am|put> <none|peer> <ucx tls|-> <host|cuda> <spin us> <batch runs>
#include "transfer_support.hpp"

#include <cstdio>

int main(int argc, char** argv) {
  auto args = dynamo::planes::transfer_testing::parse_peer_args(argc, argv, 1);
  if (!args) {
    std::fputs("usage: transfer_test_peer <transport> <blocks> <layers> <block_size> <kv_heads> "
               "<head_dim> <dtype> <am|put> <none|peer> <tls|-> <host|cuda> <spin us> <batch runs>\n",
               stderr);
    return 2;
  }
  return dynamo::planes::transfer_testing::run_receiver_peer(*args);
}
