#!/usr/bin/env bash
# Builds TinyGo for the two targets core/ is tested on, wasip1 (run by
# wazero) and js/wasm (run by node), on Debian bookworm, with nothing
# downloaded outside the Go module proxy and Debian's archive:
#   TinyGo source                     <- Go module proxy (its zip has no git submodules)
#   LLVM 19                           <- Debian packages
#   wasi-libc and compiler-rt sources <- Debian bookworm source packages
# The build is kept in ~/.cache and reused; it is redone when this script
# changes. Needs root (apt-get). About 2-4 minutes the first time.
# Prints only the line that puts this tinygo and wazero on PATH.
#
#   eval "$(bash .ci/tinygo.sh)"    # build or reuse; put tinygo and wazero on PATH
#   tinygo test -target=wasip1-wazero ./core/...
#   tinygo test -target=wasm ./core/...
#
# Limits of this build: no host (linux) target, and no package importing
# "net" (see step 7). Under TinyGo, testing.AllocsPerRun always returns 0
# and t.Fatal does not stop a test on wasm: tests run here count allocations
# with runtime.ReadMemStats and return right after t.Fatal.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TGV=v0.42.0   # accepts Go 1.25-1.27 and LLVM 15-22; LLVM 19 is the newest in bookworm
BUILD=${XDG_CACHE_HOME:-$HOME/.cache}/redlock-ci/tinygo-$TGV
TG=$BUILD/tinygo
STAMP=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
env_line="export PATH=\"$TG/build:$GOBIN_DIR:\$PATH\" TINYGOROOT=\"$TG\""

# Progress lines with seconds since start, so a CI log shows where time goes.
step() { echo "-- tinygo.sh ${SECONDS}s: $*"; }

built() { [ -x "$TG/build/tinygo" ] && [ "$(cat "$BUILD/.done" 2>/dev/null)" = "$STAMP" ]; }

build() {
  export DEBIAN_FRONTEND=noninteractive
  mkdir -p "$BUILD"
  rm -f "$BUILD/.done"

  step "1. apt packages"
  # 1. Toolchain packages: LLVM 19 to link against, clang and wasm-ld to
  #    build the C libraries, binaryen for wasm-opt, g++ for cgo (TinyGo's
  #    LLVM bindings have C++ files), dpkg-dev for apt-get source.
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends \
    llvm-19-dev libclang-19-dev clang-19 lld-19 binaryen g++ dpkg-dev >/dev/null

  step "2. TinyGo source"
  # 2. TinyGo source from the module proxy.
  local dir
  dir=$(go mod download -json "github.com/tinygo-org/tinygo@$TGV" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  rm -rf "$TG"; cp -r "$dir" "$TG"; chmod -R u+w "$TG"

  # 3. tinygo.org/x/espflasher is not served by the proxy; TinyGo only uses
  #    it to flash ESP32 boards, so a stub with the same API stands in.
  local stub=$BUILD/espflasher-stub
  mkdir -p "$stub/pkg/espflasher"
  printf 'module tinygo.org/x/espflasher\n\ngo 1.22\n' > "$stub/go.mod"
  cat > "$stub/pkg/espflasher/stub.go" <<'GO'
// Package espflasher is a stub; the real module is not on the Go module proxy.
package espflasher

import (
	"errors"
	"io"
)

type ResetMode int

const ResetUSBJTAG ResetMode = 1

type StdoutLogger struct{ W io.Writer }
type Options struct {
	Compress  bool
	Logger    *StdoutLogger
	ResetMode ResetMode
}
type Flasher struct{}

func DefaultOptions() *Options                                   { return &Options{} }
func New(string, *Options) (*Flasher, error)                     { return nil, errors.New("espflasher stub") }
func (*Flasher) Close()                                          {}
func (*Flasher) ChipName() string                                { return "" }
func (*Flasher) EraseFlash(func(int, int)) error                 { return errors.New("stub") }
func (*Flasher) FlashImage([]byte, uint32, func(int, int)) error { return errors.New("stub") }
func (*Flasher) Reset()                                          {}
GO
  (cd "$TG" && go mod edit -replace "tinygo.org/x/espflasher=$stub")

  step "4. go build tinygo"
  # 4. Build against Debian's libLLVM-19 / libclang-19.
  (cd "$TG" && CGO_ENABLED=1 go build -o build/tinygo -tags "llvm19 osusergo" .)

  step "5. wasi-libc and compiler-rt sources"
  # 5. The C library sources the module zip lacks (they are git submodules
  #    upstream) come from Debian bookworm's source packages, fetched through
  #    a private deb-src list so the system's apt configuration is untouched.
  #    The archive's address is read from this machine's own apt sources
  #    (CI can reach no other). bookworm is fixed: step 6 is written for its
  #    wasi-libc.
  local mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg signed=
  mirror=$(sed -n 's/^URIs: *\(\S*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  [ -n "$mirror" ] || mirror=$(grep -hoE '^deb +\S+/debian ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | head -1)
  [ -n "$mirror" ] || { echo "no Debian archive address found in apt sources" >&2; return 1; }
  [ ! -f "$keyring" ] || signed="[signed-by=$keyring] "
  local aptd=$BUILD/apt-src src=$BUILD/srcpkgs
  mkdir -p "$aptd/lists/partial" "$aptd/etc" "$src"
  echo "deb-src ${signed}$mirror bookworm main" > "$aptd/etc/sources.list"
  # (APT::Sandbox::User=root: apt's _apt user cannot write into root's cache.)
  local A=(-o Dir::Etc::SourceList="$aptd/etc/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o Dir::State::Lists="$aptd/lists" -o APT::Sandbox::User=root)
  apt-get "${A[@]}" update -qq
  # Downloaded tarballs are kept in the cache: a rebuild does not refetch them.
  (cd "$src" && { ls wasi-libc_*.orig.tar.* && ls llvm-toolchain-19_*.orig.tar.*; } >/dev/null 2>&1 \
    || apt-get "${A[@]}" source --download-only -qq wasi-libc llvm-toolchain-19)
  (cd "$src"
    rm -rf wasi-libc-*/ && tar -xJf wasi-libc_*.orig.tar.xz
    rm -rf "$TG/lib/wasi-libc"; cp -r wasi-libc-*/ "$TG/lib/wasi-libc"
    # Only compiler-rt's builtins are needed from the whole LLVM tree.
    rm -rf llvm-toolchain-19_*/ && tar -xJf llvm-toolchain-19_*.orig.tar.xz \
      --wildcards '*/compiler-rt/lib/builtins/*' '*/compiler-rt/LICENSE.TXT'
    rm -rf "$TG/lib/compiler-rt-builtins"
    cp -r llvm-toolchain-19_*/compiler-rt/lib/builtins "$TG/lib/compiler-rt-builtins"
    rm -rf wasi-libc-*/ llvm-toolchain-19_*/)

  # 6. Adapt Debian's 2022 wasi-libc to the newer file list TinyGo 0.42
  #    compiles: two files it expects are missing, two others miss an include.
  local W=$TG/lib/wasi-libc
  cat > "$W/libc-top-half/musl/src/env/__stack_chk_fail.c" <<'C'
#include <stdint.h>
uintptr_t __stack_chk_guard;
void __stack_chk_fail(void) { __builtin_trap(); }
C
  cat > "$W/libc-top-half/musl/src/thread/thrd_sleep.c" <<'C'
#include <time.h>
#include <errno.h>
int thrd_sleep(const struct timespec *req, struct timespec *rem)
{
	int ret = clock_nanosleep(CLOCK_REALTIME, 0, req, rem);
	return ret == 0 ? 0 : ret == EINTR ? -1 : -2;
}
C
  local f
  for f in "$W/libc-bottom-half/cloudlibc/src/libc/stdlib/_Exit.c" "$W/libc-bottom-half/cloudlibc/src/libc/time/nanosleep.c"; do
    sed -i '1i #include <_/cdefs.h>' "$f"
  done
  # musl's features.h defines `weak`, which breaks __attribute__((weak, ...)).
  grep -rl "__attribute__((weak" "$W/libc-bottom-half" "$W/libc-top-half/sources" | xargs -r sed -i \
    -e 's/__attribute__((weak, alias(/__attribute__((__weak__, __alias__(/g' \
    -e 's/__attribute__((weak))/__attribute__((__weak__))/g' -e 's/__attribute__((weak,/__attribute__((__weak__,/g'
  # TinyGo caches the compiled libc; drop any built from other sources.
  rm -rf "${XDG_CACHE_HOME:-$HOME/.cache}"/tinygo/wasi-libc-*

  # 7. src/net is a git submodule that is not on the proxy: packages that
  #    import "net" cannot be built with this TinyGo (core/ does not).
  mkdir -p "$TG/src/net"

  # 8. TinyGo's wasip1 target runs tests with wasmtime, which Debian does not
  #    package; this target is wasip1 run by wazero instead.
  cat > "$TG/targets/wasip1-wazero.json" <<'J'
{
	"inherits": ["wasip1"],
	"emulator": "wazero run -mount={tmpDir}:/tmp {}"
}
J

  # 9. Debian bookworm's node 18 has no global crypto without a flag (it is
  #    global from node 19 on). Go's own wasm_exec_node.js fills it in from
  #    require("crypto"); TinyGo's does not and stops at "globalThis.crypto
  #    is not available", so it gets the same line.
  sed -i 's|^globalThis.fs = require("fs");$|&\nglobalThis.crypto ??= require("crypto");|' "$TG/targets/wasm_exec_node.js"
  grep -q '^globalThis.crypto ??= require("crypto");$' "$TG/targets/wasm_exec_node.js"

  echo "$STAMP" > "$BUILD/.done"
  step "built"
}

# Everything but the PATH line goes to stderr, for eval.
if ! built; then build >&2; fi
need_wazero >&2   # runs -target=wasip1-wazero
need_node >&2     # runs -target=wasm
"$TG/build/tinygo" version >&2
echo "$env_line"
