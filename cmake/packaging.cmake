# Installation and packaging, in one place (docs/DEPLOY.md):
#   cmake --build build --target dynamo-apps && cmake --install build --prefix /opt/dynamo
#   cd build && cpack -G DEB        # dynamo-cpp_<version>_<arch>.deb
# Installed: the user-facing binaries of apps/ (bin/), the example cluster configs
# (share/dynamo/examples/), the Grafana dashboard (share/dynamo/observability/) and the
# user docs (share/doc/dynamo/). Not installed: tests, the component benchmarks under
# runtime/*/bench, static libraries, headers.
include(GNUInstallDirs)

# Every binary in apps/ is a user tool (README.md, "Binaries").
set(DYNAMO_INSTALL_PROGRAMS
  dynamo-run dynamo-frontend dynamo-worker dynamo-router dynamo-planner dynamo-launch
  dynamo-profile dynamo-bench dynamo-disagg-bench dynamo-soak dynamo-gguf-random)

# What `cmake --install` needs built, and nothing else (the tests and benchmarks are not).
add_custom_target(dynamo-apps DEPENDS ${DYNAMO_INSTALL_PROGRAMS})
# `ninja install` / cpack would otherwise build `all` first (tests included, ~450 steps):
# build dynamo-apps (or everything) before installing.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(DYNAMO_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/dynamo")
set(DYNAMO_INSTALL_DOCDIR "${CMAKE_INSTALL_DATADIR}/doc/dynamo")

install(TARGETS ${DYNAMO_INSTALL_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(DYNAMO_HAVE_CUDA)
  # The CUDA toolkit's lib directory (e.g. /usr/local/cuda-13.0/lib) is not on the loader's
  # path; installed binaries keep it as RUNPATH, as the build tree's do. The system libraries
  # add nothing (implicit link directories are left out).
  set_target_properties(${DYNAMO_INSTALL_PROGRAMS} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endif()
install(DIRECTORY examples/configs/ DESTINATION ${DYNAMO_INSTALL_DATADIR}/examples
  FILES_MATCHING PATTERN "*.yaml")
install(FILES deploy/observability/grafana-dashboard.json deploy/observability/README.md
  DESTINATION ${DYNAMO_INSTALL_DATADIR}/observability)
install(FILES README.md DESTINATION ${DYNAMO_INSTALL_DOCDIR})
install(FILES docs/DEPLOY.md docs/CLUSTER.md docs/ENDPOINTS.md docs/MODELS.md docs/SAMPLING.md
  docs/STRUCTURED_OUTPUTS.md docs/TOOLS.md docs/KV.md docs/CUDA.md docs/BENCHMARKS.md
  DESTINATION ${DYNAMO_INSTALL_DOCDIR})

# ---- CPack: a Debian package (cpack -G DEB, or -DCPACK_GENERATOR=DEB at configure time).
if(NOT CPACK_GENERATOR)
  set(CPACK_GENERATOR DEB)
endif()
set(CPACK_PACKAGE_NAME dynamo-cpp)
set(CPACK_PACKAGE_VENDOR "dynamo-cpp")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed LLM inference runtime (OpenAI-compatible API, GGUF models)")
set(CPACK_PACKAGE_CONTACT "dynamo-cpp maintainers <dynamo-cpp@example.invalid>")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://example.invalid/dynamo-cpp")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)          # dynamo-cpp_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${CPACK_PACKAGE_HOMEPAGE_URL}")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "etcd-server")  # discovery backend etcd (docs/CLUSTER.md)
string(CONCAT _dynamo_deb_description
  "dynamo-run serves GGUF models behind an OpenAI-compatible API from one process.\n"
  "dynamo-frontend, dynamo-worker, dynamo-router, dynamo-planner and dynamo-launch run\n"
  "a cluster described by one YAML file, with KV-cache-aware routing and disaggregated\n"
  "prefill/decode. Models are not included: see /usr/share/doc/dynamo/DEPLOY.md.")
# The runtime Depends come from dpkg-shlibdeps on the packaged binaries (versioned, and
# knows ABI names such as libspdlog1.10-fmt9). Without dpkg-shlibdeps, the packages a
# CPU build links on Debian 12 (objdump -p | NEEDED, mapped with dpkg -S).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
find_program(DYNAMO_DPKG_SHLIBDEPS dpkg-shlibdeps)
mark_as_advanced(DYNAMO_DPKG_SHLIBDEPS)
set(_dynamo_deb_depends "")
if(NOT DYNAMO_DPKG_SHLIBDEPS)
  set(_dynamo_deb_depends "libc6, libgcc-s1, libstdc++6, libcaf-core0.17, libfmt9, libspdlog1.10, libucx0, libxxhash0, libyaml-cpp0.7, libzmq5, libssl3")
endif()
if(DYNAMO_HAVE_CUDA)
  # libcudart and libcublas come from NVIDIA's CUDA repository (or the nvidia/cuda
  # runtime images), which ship no shlibs information: dpkg-shlibdeps skips them, so
  # they are named here. Override for another CUDA install (empty: no CUDA Depends).
  set(DYNAMO_DEB_CUDA_DEPENDS
    "cuda-cudart-${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}, libcublas-${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}"
    CACHE STRING "Depends the CUDA build's .deb adds for the CUDA runtime (NVIDIA's package names)")
  if(DYNAMO_DEB_CUDA_DEPENDS)
    if(_dynamo_deb_depends)
      string(APPEND _dynamo_deb_depends ", ")
    endif()
    string(APPEND _dynamo_deb_depends "${DYNAMO_DEB_CUDA_DEPENDS}")
  endif()
  set(CPACK_PACKAGE_NAME dynamo-cpp-cuda)
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS dynamo-cpp)
  set(CPACK_DEBIAN_PACKAGE_REPLACES dynamo-cpp)
  set(CPACK_DEBIAN_PACKAGE_PROVIDES dynamo-cpp)
  string(REPLACE ";" ", sm_" _dynamo_cuda_archs "${CMAKE_CUDA_ARCHITECTURES}")
  string(APPEND _dynamo_deb_description
    "\nThis build includes the CUDA backend (out=cuda, sm_${_dynamo_cuda_archs}): it needs an NVIDIA\n"
    "driver and the CUDA ${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR} runtime (libcudart, libcublas).")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_dynamo_deb_depends}")
# The first line of Description is CPACK_PACKAGE_DESCRIPTION_SUMMARY; this is the rest.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${_dynamo_deb_description}")
include(CPack)
