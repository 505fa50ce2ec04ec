# Sourced by .ci/wasm-test.sh and .ci/tinygo.sh: the two runtimes the
# WebAssembly tests need, installed on a bare Debian machine when absent.
# CI reaches only the Go module proxy, Debian's archive and the npm
# registry, so wazero comes from the proxy and node from Debian.

WAZERO_VERSION=v1.12.0
GOBIN_DIR=$(go env GOBIN)
[ -n "$GOBIN_DIR" ] || GOBIN_DIR=$(go env GOPATH)/bin

# wazero runs GOOS=wasip1 binaries (Go's wrapper and TinyGo's emulator
# default to wasmtime, which is not packaged for Debian bookworm).
need_wazero() {
  if ! command -v wazero >/dev/null && [ ! -x "$GOBIN_DIR/wazero" ]; then
    go install "github.com/tetratelabs/wazero/cmd/wazero@$WAZERO_VERSION"
  fi
}

# node runs GOOS=js binaries (Go's go_js_wasm_exec) and TinyGo's -target=wasm.
# Debian bookworm's nodejs is 18.20. Go 1.26's wasm_exec_node.js runs on
# it as is; TinyGo's needs a one-line crypto polyfill, which .ci/tinygo.sh
# adds (step 9). Both tried, so no newer node is needed (CI could not get
# one from Debian, and npm cannot bootstrap node: npm itself needs node).
need_node() {
  if ! command -v node >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs >/dev/null
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 18 ]; then
    echo "node $(node --version) is too old for Go's and TinyGo's wasm_exec.js; need 18 or later" >&2
    return 1
  fi
}
