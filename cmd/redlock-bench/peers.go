package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/redlock-go/redlock/bench/matrix"
)

// The peer libraries live in the nested module bench/peers, so that this
// module's go.mod does not carry them. Its command, peerbench, reuses this
// module's measurement loop (a replace directive points it here), reads a
// matrix.PeerRequest on standard input and writes matrix.PeerMessages,
// one per line. runPeers builds it with the go tool and runs it once per run.

// findPeersDir returns the nested peers module's directory: dir if set,
// else bench/peers under the enclosing module root of the working
// directory.
func findPeersDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", fmt.Errorf("%w: set --peers-dir or --peers none", err)
	}
	return filepath.Join(root, "bench", "peers"), nil
}

// repoRoot returns the root of the redlock module that encloses the
// working directory.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && //nolint:gosec // G304: the go.mod of the working directory or a parent
			strings.Contains(string(b), "module github.com/redlock-go/redlock\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("not inside the redlock repository")
		}
	}
}

// buildPeers compiles peerbench into tmp and returns its path.
func buildPeers(dir, tmp string) (string, error) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("the go tool is not on PATH")
	}
	bin := filepath.Join(tmp, "peerbench")
	cmd := exec.Command(gotool, "build", "-o", bin, "./cmd/peerbench") //nolint:gosec // G204: the go tool from PATH builds the peers module
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build in %s: %w\n%s", dir, err, out)
	}
	return bin, nil
}

// runChild runs bin (with extra environment variables env) on the cells of
// req, calling onStart as each cell starts and onRecord as it ends.
func runChild(ctx context.Context, bin string, env []string, req matrix.PeerRequest, onStart func(matrix.Cell), onRecord func(matrix.Record)) error {
	in, err := json.Marshal(req) //nolint:gosec // G117: the child needs the servers' password; it goes to its stdin, never to a file
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin) //nolint:gosec // G702: bin is this command's own executable or the peer command it built itself
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var msg matrix.PeerMessage
		if err := json.Unmarshal(line, &msg); err != nil {
			return fmt.Errorf("%s: bad output %q: %w", filepath.Base(bin), line, err)
		}
		switch {
		case msg.Start != nil:
			onStart(*msg.Start)
		case msg.Done != nil:
			onRecord(*msg.Done)
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(bin), err)
	}
	return sc.Err()
}
