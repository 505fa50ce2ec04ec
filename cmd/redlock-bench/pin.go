package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
)

// pinAdvice explains why and how to pin, for an unpinned run.
const pinAdvice = `note: not pinned. On a small VM, single-client latency is bimodal: a client
and a server on different CPUs pay about 3× per round trip. The latency
targets are defined pinned: re-run with --pin (re-executes under
"taskset -c 0" with GOMAXPROCS=1; the servers it starts inherit the pinning).
Throughput at high concurrency is meant to be read from an unpinned run.`

// reexecPinned runs this program again under taskset -c 0 with
// GOMAXPROCS=1, with the same arguments, and returns its exit code.
func reexecPinned(args []string, stderr io.Writer) (int, error) {
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return 1, errors.New("--pin needs taskset (util-linux); or run: GOMAXPROCS=1 taskset -c 0 <this command>")
	}
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	logf(stderr, "pinning: re-running under taskset -c 0 with GOMAXPROCS=1\n")
	cmd := exec.Command(ts, append([]string{"-c", "0", self}, args...)...) //nolint:gosec // G204: taskset from PATH re-runs this very binary with the user's arguments
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", pinnedEnv+"=1")
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), nil
		}
		return 1, err
	}
	return 0, nil
}
