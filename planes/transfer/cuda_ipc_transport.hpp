// The CUDA IPC KV transport (built only with CUDA): the receiver exports its device
// region (cudaIpcGetMemHandle); a sender on the same host copies device-to-device on
// its own stream, then reports done over a tcp control connection. Thread rules: as
// kv_transport.hpp (one copy thread per sender; on_received on the control thread).
#pragma once

#include "planes/transfer/kv_transport.hpp"

#include <memory>

namespace dynamo::planes {

/// errc::unsupported unless the region is CUDA device memory from cudaMalloc (the
/// base of its allocation); device_error when CUDA refuses.
[[nodiscard]] expected<std::unique_ptr<kv_receiver>> make_cuda_ipc_receiver(kv_receiver_config config);
[[nodiscard]] expected<std::unique_ptr<kv_sender>> make_cuda_ipc_sender(kv_sender_config config);

/// True when a CUDA device is usable here (any cudaGetDeviceCount error means no).
[[nodiscard]] bool cuda_device_available();

} // namespace dynamo::planes
