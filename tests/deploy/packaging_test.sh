#!/usr/bin/env bash
# Packaging checks on an already built tree (builds nothing; docs/DEPLOY.md):
#   packaging_test.sh install <cmake> <build_dir> <program...>
#     cmake --install into a temporary prefix: bin/ holds exactly <program...>, each answers
#     --help with exit 0 from the prefix; the examples, dashboard and docs are there; no
#     libraries or headers.
#   packaging_test.sh deb <cpack> <build_dir> <version> <program...>
#     cpack -G DEB: one dynamo-cpp*_<version>_<arch>.deb, listing every program under
#     /usr/bin (each, unpacked, answers --help), whose Depends names the Debian package of
#     every shared library the programs link. Exit 77 (skipped) without dpkg-deb, file or cpack.
set -uo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
mode="${1:?mode}"; shift
tmp="$(mktemp -d "${TMPDIR:-/tmp}/dynamo-packaging.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

case "$mode" in
install)
  cmake="$1" build="$2"; shift 2
  programs=("$@")
  prefix="$tmp/prefix"
  "$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 \
    || { cat "$tmp/install.log"; fail "cmake --install (build the dynamo-apps target first)"; }
  want="$(printf '%s\n' "${programs[@]}" | sort)"
  got="$(ls "$prefix/bin" | sort)"
  [ "$want" = "$got" ] || fail "bin/ holds [$(echo $got)], expected [$(echo $want)]"
  for p in "${programs[@]}"; do
    out="$(cd "$tmp" && timeout 20 "$prefix/bin/$p" --help 2>&1)"; rc=$?
    [ $rc -eq 0 ] || fail "$p --help: exit $rc: $out"
    [[ "$out" == *"$p"* ]] || fail "$p --help does not name itself: $out"
    echo "ok: bin/$p --help"
  done
  for f in share/dynamo/examples/mocker-cluster.yaml share/dynamo/examples/disagg-mocker.yaml \
           share/dynamo/observability/grafana-dashboard.json \
           share/doc/dynamo/README.md share/doc/dynamo/DEPLOY.md share/doc/dynamo/CLUSTER.md; do
    [ -s "$prefix/$f" ] || fail "missing $f"
    echo "ok: $f"
  done
  extra="$(cd "$prefix" && find . -name '*.a' -o -name '*.so*' -o -name '*.hpp' -o -name '*_tests' | head)"
  [ -z "$extra" ] || fail "installed what it should not: $extra"
  ;;
deb)
  cpack="$1" build="$2" version="$3"; shift 3
  programs=("$@")
  for tool in dpkg-deb dpkg objdump ldd file; do  # file: cpack DEB needs it for dpkg-shlibdeps
    command -v $tool >/dev/null || { echo "SKIP: no $tool"; exit 77; }
  done
  [ -x "$cpack" ] || command -v "$cpack" >/dev/null || { echo "SKIP: no cpack"; exit 77; }
  "$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1 \
    || { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
  arch="$(dpkg --print-architecture)"
  debs=("$tmp"/out/*.deb)
  [ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "expected one .deb, got: ${debs[*]}"
  deb="${debs[0]}"; name="$(basename "$deb")"
  [[ "$name" =~ ^dynamo-cpp(-cuda)?_${version}_${arch}\.deb$ ]] || fail "package file name $name"
  echo "ok: $name"
  listing="$(dpkg-deb -c "$deb")"
  for p in "${programs[@]}"; do
    grep -q " \./usr/bin/$p\$" <<<"$listing" || fail "$name lacks /usr/bin/$p"
  done
  echo "ok: /usr/bin holds ${#programs[@]} programs"
  grep -q ' \./usr/share/dynamo/observability/grafana-dashboard.json$' <<<"$listing" || fail "no dashboard"
  # the packaged (stripped) binaries run
  dpkg-deb -x "$deb" "$tmp/root" || fail "dpkg-deb -x"
  for p in "${programs[@]}"; do
    out="$(cd "$tmp" && timeout 20 "$tmp/root/usr/bin/$p" --help 2>&1)" || fail "packaged $p --help: $out"
  done
  echo "ok: the packaged binaries answer --help"
  depends="$(dpkg-deb -f "$deb" Depends)"
  [ -n "$depends" ] || fail "no Depends"
  echo "Depends: $depends"
  # Every shared library a program links comes from a package named in Depends
  # (libraries no package owns, e.g. a CUDA toolkit under /usr/local, are only reported).
  # (the libraries each program names as NEEDED, not ldd's transitive closure)
  for lib in $(for p in "${programs[@]}"; do
                 needed="$(objdump -p "$build/bin/$p" | awk '$1=="NEEDED" {print $2}')"
                 ldd "$build/bin/$p" | awk -v n="$needed" 'BEGIN {split(n, a, "\n"); for (i in a) want[a[i]]=1}
                                                           $2=="=>" && ($1 in want) && $3 ~ /^\// {print $3}'
               done | sort -u); do
    real="$(readlink -f "$lib")"
    pkg=""
    for path in "$lib" "$real" "${lib#/usr}" "${real#/usr}" "/usr$lib" "/usr$real"; do
      pkg="$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1)" && [ -n "$pkg" ] && break
    done
    if [ -z "$pkg" ]; then echo "note: $lib belongs to no package"; continue; fi
    # a Depends entry is the package or an ABI name starting with it (libspdlog1.10-fmt9)
    found=""
    IFS=',|' read -ra entries <<<"$depends"
    for e in "${entries[@]}"; do
      e="${e# }"; e="${e%% *}"
      [[ "$e" == "$pkg" || "$e" == "$pkg"-* ]] && found=1
    done
    [ -n "$found" ] || fail "$lib ($pkg) is not in Depends"
  done
  echo "ok: Depends covers every linked library"
  ;;
*) fail "unknown mode $mode" ;;
esac
echo "PASS"
