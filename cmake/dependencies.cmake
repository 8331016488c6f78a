# Every third-party dependency, found once. All come from Debian packages
# (scripts/setup.sh installs them); see docs/DEPENDENCIES.md for versions.
find_package(Threads REQUIRED)

# CAF 0.17.6: Debian ships no CMake config and no .pc file.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(CAF::core UNKNOWN IMPORTED)
set_target_properties(CAF::core PROPERTIES IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}" INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(CAF::io UNKNOWN IMPORTED)
set_target_properties(CAF::io PROPERTIES IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
  INTERFACE_LINK_LIBRARIES CAF::core)

find_package(cppzmq 4.9 REQUIRED)                  # target cppzmq (links libzmq)
find_package(msgpack 4.1 CONFIG REQUIRED)          # target msgpackc-cxx
find_package(spdlog 1.10 REQUIRED)                 # spdlog::spdlog (compiled, external fmt)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)          # nlohmann_json::nlohmann_json
find_package(yaml-cpp REQUIRED)                    # target yaml-cpp
find_package(ucx 1.13 REQUIRED)                    # ucx::ucp ucx::uct ucx::ucs
find_package(OpenSSL 3 REQUIRED)                   # OpenSSL::SSL: HTTPS in planes/http_client (the planner's Kubernetes connector)
find_package(Boost 1.74 REQUIRED COMPONENTS unit_test_framework)

# xxhash ships only a pkg-config file.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_LIBRARY xxhash REQUIRED)
add_library(xxhash::xxhash UNKNOWN IMPORTED)
set_target_properties(xxhash::xxhash PROPERTIES IMPORTED_LOCATION "${XXHASH_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}")
