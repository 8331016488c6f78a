# Helpers every CMakeLists.txt uses, so that warnings, include roots and test
# labels are set in one place.

set(DYNAMO_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
if(DYNAMO_WERROR)
  list(APPEND DYNAMO_WARNINGS -Werror)
endif()
if(DYNAMO_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # Asio (planes/http, planes/http_client, their tests, every app that serves
  # HTTP) orders its handler hand-offs with std::atomic_thread_fence, which TSan
  # cannot model (g++ 12: -Wtsan, an error under -Werror). Asio is header-only,
  # so it is instrumented apart from the fences; our own code has no fences.
  list(APPEND DYNAMO_WARNINGS -Wno-tsan)
endif()

# dynamo_add_library(<name> SOURCES <src...> [DEPS <targets...>] [PRIVATE_DEPS <targets...>])
# A static library rooted at the repository top, so includes read "runtime/kv/block_pool.hpp".
function(dynamo_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${DYNAMO_WARNINGS}>)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# dynamo_add_executable(<name> SOURCES <src...> [DEPS <targets...>])
function(dynamo_add_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${DYNAMO_WARNINGS}>)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

# dynamo_add_test(<name> KIND unit|integration|gpu|e2e SOURCES <src...> [LIBS <targets...>]
#                 [TIMEOUT <seconds>] [ENV <k=v...>])
# One Boost.Test executable registered with CTest and labelled by KIND; CI runs `ctest -LE gpu`.
function(dynamo_add_test name)
  cmake_parse_arguments(ARG "" "KIND;TIMEOUT" "SOURCES;LIBS;ENV" ${ARGN})
  if(NOT ARG_KIND)
    set(ARG_KIND unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${DYNAMO_WARNINGS}>)
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} Boost::unit_test_framework)
  add_test(NAME ${name} COMMAND ${name} --color_output=no --log_level=test_suite --report_level=short)
  set_tests_properties(${name} PROPERTIES LABELS ${ARG_KIND} TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "DYNAMO_SOURCE_DIR=${PROJECT_SOURCE_DIR};${ARG_ENV}")
endfunction()
