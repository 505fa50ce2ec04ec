//go:build !tinygo && !wasm

package redlock_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/redlock-go/redlock"

// driverClients maps each driver under drivers/ to the module of the Redis
// client it wraps. A program that imports the root package and one driver
// links that client and no other.
var driverClients = map[string]string{
	"goredis":  "github.com/redis/go-redis",
	"radix":    "github.com/mediocregopher/radix",
	"redigo":   "github.com/gomodule/redigo",
	"rueidis":  "github.com/redis/rueidis",
	"valkeygo": "github.com/valkey-io/valkey-go",
}

// workshop is what the library's tests, benchmarks and plots use and a
// program that locks must never link.
var workshop = []string{
	"gonum.org/v1/plot",
	"github.com/HdrHistogram/hdrhistogram-go",
	"github.com/alicebob/miniredis",
	"github.com/stretchr/testify",
	"go.uber.org/goleak",
	"testing",
	module + "/bench",
	module + "/cmd",
	module + "/drivers/conformance",
	module + "/internal/contract",
	module + "/internal/dialtest",
	module + "/internal/subtest",
	module + "/internal/systest",
	module + "/internal",
}

// goList returns the import paths of pkgs and everything they import,
// transitively, as a program built from them would link.
func goList(t *testing.T, pkgs ...string) []string {
	t.Helper()
	// go test puts its own GOROOT/bin first in the test's PATH.
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput() //nolint:gosec // G204: the test's own package paths
	require.NoError(t, err, "go list -deps %v:\n%s", pkgs, out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, pkgs[0], "go list listed too little to check")
	return deps
}

// withPrefix returns the deps that are path or lie under it: the module
// or package path itself, or a package whose path continues it after a
// "/".
func withPrefix(deps []string, path string) []string {
	var out []string
	for _, d := range deps {
		if d == path || strings.HasPrefix(d, path+"/") {
			out = append(out, d)
		}
	}
	return out
}

// TestProgramDeps: a program of the root package and one driver links
// that driver's client and nothing of the workshop (plots, histograms,
// miniredis, testify, the benchmarks, the test suites) nor of another
// driver.
func TestProgramDeps(t *testing.T) {
	entries, err := os.ReadDir("drivers")
	require.NoError(t, err)
	var drivers []string
	for _, e := range entries {
		if e.IsDir() && !slices.Contains(sharedDriverDirs, e.Name()) {
			drivers = append(drivers, e.Name())
		}
	}
	require.NotEmpty(t, drivers)
	for _, drv := range drivers {
		t.Run(drv, func(t *testing.T) {
			client, ok := driverClients[drv]
			require.True(t, ok, "drivers/%s is a driver this test does not know: add its client to driverClients", drv)
			deps := goList(t, module, module+"/drivers/"+drv)
			assert.NotEmpty(t, withPrefix(deps, client), "drivers/%s links no %s: is the table right?", drv, client)
			for _, bad := range workshop {
				assert.Empty(t, withPrefix(deps, bad), "a program of redlock and drivers/%s links %s", drv, bad)
			}
			for other, c := range driverClients {
				if other != drv {
					assert.Empty(t, withPrefix(deps, c), "drivers/%s links %s, the client of drivers/%s", drv, c, other)
					assert.Empty(t, withPrefix(deps, module+"/drivers/"+other), "drivers/%s links drivers/%s", drv, other)
				}
			}
		})
	}
}

// sharedDriverDirs are the folders under drivers/ that are not a client's
// driver: what the drivers share, and the public contract suite.
var sharedDriverDirs = []string{"conformance", "engine", "internal", "wire"}

// TestLibraryDeps: the house as the imports show it. core stands on the
// standard library; drivers/ and the root package stand on core; the
// workshop (internal/, bench/, cmd/) stands beside them, and nothing that
// ships imports it. No package under drivers/ imports the root package,
// and none but the public contract suite imports testing or testify
// outside its tests.
func TestLibraryDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \",\"}} {{join .Deps \",\"}}", module, "./core/...", "./drivers/...").CombinedOutput() //nolint:gosec // G204: fixed arguments
	require.NoError(t, err, "go list:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(lines), 10, "go list listed too little to check:\n%s", out)
	seen := map[string]bool{}
	for _, line := range lines {
		f := strings.Fields(line)
		require.Len(t, f, 3, "unexpected go list line %q", line)
		pkg, imports, deps := f[0], strings.Split(f[1], ","), strings.Split(f[2], ",")
		seen[pkg] = true
		if pkg == module+"/drivers/conformance" {
			continue // the contract suite is a test kit by design
		}
		for _, bad := range []string{module + "/internal", module + "/bench", module + "/cmd"} {
			assert.Empty(t, withPrefix(deps, bad), "%s, which ships, links the workshop's %s", pkg, bad)
		}
		if strings.HasPrefix(pkg, module+"/drivers") {
			assert.NotContains(t, deps, module, "%s imports the root package", pkg)
			for _, bad := range []string{"testing", "github.com/stretchr/testify"} {
				assert.Empty(t, withPrefix(imports, bad), "%s imports %s outside its tests", pkg, bad)
			}
		}
		if strings.HasPrefix(pkg, module+"/core") {
			assert.Empty(t, withPrefix(deps, module+"/drivers"), "%s, at the ground floor, links drivers", pkg)
			assert.NotContains(t, deps, module, "%s, at the ground floor, links the root package", pkg)
		}
	}
	for _, want := range []string{module, module + "/core", module + "/drivers", module + "/drivers/engine", module + "/drivers/redigo"} {
		assert.True(t, seen[want], "go list did not list %s", want)
	}
}

// TestConformanceDeps: the driver contract a third-party driver author
// runs reaches neither the root package nor the benchmarks, nor this
// module's drivers' engine and own suites.
func TestConformanceDeps(t *testing.T) {
	deps := goList(t, module+"/drivers/conformance")
	assert.False(t, slices.Contains(deps, module), "drivers/conformance imports the root package")
	assert.Empty(t, withPrefix(deps, module+"/bench"), "drivers/conformance imports the benchmarks")
	assert.Empty(t, withPrefix(deps, module+"/internal/systest"), "drivers/conformance imports the system tests")
	for _, own := range []string{"/drivers/engine", "/internal/dialtest", "/internal/subtest", "/internal/latproxy"} {
		assert.Empty(t, withPrefix(deps, module+own), "drivers/conformance imports %s, of this module's drivers alone", own)
	}
	assert.True(t, slices.Contains(deps, module+"/core"), "go list listed too little to check")
}

// TestWithPrefix: the matching the two tests rely on.
func TestWithPrefix(t *testing.T) {
	deps := []string{"github.com/redis/go-redis/v9", "github.com/redis/rueidis", "github.com/redis/rueidiscompat",
		module, module + "/core", module + "/bench", module + "/benchmarks", module + "/bench/latproxy"}
	assert.Equal(t, []string{"github.com/redis/go-redis/v9"}, withPrefix(deps, "github.com/redis/go-redis"))
	assert.Equal(t, []string{"github.com/redis/rueidis"}, withPrefix(deps, "github.com/redis/rueidis"))
	assert.Equal(t, []string{module + "/bench", module + "/bench/latproxy"}, withPrefix(deps, module+"/bench"))
	assert.Equal(t, []string{module + "/core"}, withPrefix(deps, module+"/core"))
	assert.Empty(t, withPrefix(deps, module+"/internal"))
}
