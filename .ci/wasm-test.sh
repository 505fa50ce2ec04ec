#!/usr/bin/env bash
# Runs core/'s tests under WebAssembly with the standard Go toolchain, in
# two passes: GOOS=wasip1 run by wazero, and GOOS=js run by node. Installs
# wazero (Go module proxy) and node (Debian's nodejs) when absent.
#
#   bash .ci/wasm-test.sh                 # ./core/...
#   bash .ci/wasm-test.sh -v ./core/      # any go test arguments
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
args=("${@:-./core/...}")

need_wazero
need_node

# go test runs a wasm test binary through go_<GOOS>_wasm_exec, which it finds
# only on PATH; Go ships both wrappers in $GOROOT/lib/wasm.
export PATH="$PATH:$GOBIN_DIR:$(go env GOROOT)/lib/wasm"

echo "== GOOS=wasip1 GOARCH=wasm (wazero $(wazero version))"
# Without GOWASIRUNTIME the wasip1 wrapper looks for wasmtime.
GOWASIRUNTIME=wazero GOOS=wasip1 GOARCH=wasm go test -count=1 "${args[@]}"

echo "== GOOS=js GOARCH=wasm (node $(node --version))"
GOOS=js GOARCH=wasm go test -count=1 "${args[@]}"
