// The model deployment card: what a worker serves, published with its
// discovery record so the frontend can build the tokenizer, the chat template
// and the limits without asking the worker. Plain value.
#pragma once

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

#include <cstdint>
#include <string>

namespace dynamo::protocol {

struct model_card {
  std::string name;            ///< served model name (the OpenAI "model" field)
  std::string source;          ///< "mocker" or a path to a GGUF file
  uint32_t context_length = 0; ///< max prompt + output tokens
  uint32_t kv_block_size = 16; ///< tokens per KV block (router hashes with this)
  uint32_t total_kv_blocks = 0;
  uint32_t max_num_seqs = 0;
  uint32_t max_num_batched_tokens = 0;
  /// Width of the hidden states an embed request returns (/v1/embeddings);
  /// 0: the workers' engine computes no embeddings.
  uint32_t embedding_size = 0;
  DYNAMO_MSGPACK_MAP(name, source, context_length, kv_block_size, total_kv_blocks, max_num_seqs,
                     max_num_batched_tokens, embedding_size);
};

} // namespace dynamo::protocol
