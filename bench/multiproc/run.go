package multiproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"
)

// Spec describes one cell: P processes of G goroutines on one key.
type Spec struct {
	Driver             string
	Addrs              []string
	Username, Password string
	TLS                bool
	TLSCA              string
	Mode               string
	Key                string
	Procs, Goroutines  int
	// Hold is the critical section's spin; Warmup runs the loop
	// unmeasured first, then Duration is the measured window.
	Hold, Warmup, Duration time.Duration
	TTL                    time.Duration
}

// ErrExclusion is the error of a cell in which two critical sections
// overlapped.
var ErrExclusion = errors.New("multiproc: mutual exclusion violated")

// Run runs the cell of spec, each process a child of exe (which calls
// Child when ChildEnv is "1", set here) with env added to this process's
// environment, and returns its figures. Children's standard error goes
// to stderr. A cell whose sections overlapped returns its Record and an
// error that matches ErrExclusion.
func Run(ctx context.Context, spec Spec, exe string, env []string, stderr io.Writer) (Record, error) {
	rec := Record{Driver: spec.Driver, Mode: spec.Mode, Nodes: len(spec.Addrs), Procs: spec.Procs,
		Goroutines: spec.Goroutines, HoldUs: float64(spec.Hold) / 1e3}
	switch {
	case spec.Procs < 1 || spec.Goroutines < 1:
		return rec, fmt.Errorf("multiproc: %d processes of %d goroutines", spec.Procs, spec.Goroutines)
	case spec.Duration <= 0 || spec.Warmup < 0 || spec.Hold < 0:
		return rec, fmt.Errorf("multiproc: duration %v, warm-up %v, hold %v", spec.Duration, spec.Warmup, spec.Hold)
	case !slices.Contains(Modes, spec.Mode):
		return rec, fmt.Errorf("multiproc: unknown mode %q (%v)", spec.Mode, Modes)
	}
	sh, path, err := CreateShared("")
	if err != nil {
		return rec, err
	}
	// A page file left in the temporary directory, or a mapping left until
	// the process ends, is harmless: the cell's result does not depend on
	// them.
	defer func() { _ = os.Remove(path) }()
	defer func() { _ = sh.Close() }()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type proc struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	procs := make([]proc, spec.Procs)
	defer func() {
		for _, p := range procs {
			if p.cmd != nil && p.cmd.Process != nil {
				// Cleanup after a failure, which is the error returned;
				// a child killed here ends with an error by design.
				_ = p.in.Close()
				cancel()
				_ = p.cmd.Wait()
			}
		}
	}()
	for i := range procs {
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(append(os.Environ(), env...), ChildEnv+"=1")
		cmd.Stderr = stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return rec, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return rec, err
		}
		if err := cmd.Start(); err != nil {
			return rec, fmt.Errorf("multiproc: starting process %d: %w", i, err)
		}
		procs[i] = proc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}
		cs := ChildSpec{Process: i, Driver: spec.Driver, Addrs: spec.Addrs, Username: spec.Username, Password: spec.Password,
			TLS: spec.TLS, TLSCA: spec.TLSCA, Mode: spec.Mode, Key: spec.Key, Goroutines: spec.Goroutines,
			Hold: spec.Hold, TTL: spec.TTL, Shared: path}
		if err := writeLine(in, cs); err != nil {
			return rec, fmt.Errorf("multiproc: process %d: %w", i, err)
		}
	}
	for i, p := range procs {
		line, err := p.out.ReadString('\n')
		if err != nil {
			return rec, fmt.Errorf("multiproc: process %d did not get ready (%q, %w)", i, line, err)
		}
		if line != readyLine {
			return rec, fmt.Errorf("multiproc: process %d did not get ready (%q)", i, line)
		}
	}
	start := Now()
	w := window{From: start + int64(spec.Warmup), To: start + int64(spec.Warmup+spec.Duration)}
	for i, p := range procs {
		if err := writeLine(p.in, w); err != nil {
			return rec, fmt.Errorf("multiproc: process %d: %w", i, err)
		}
	}
	var secs []Section
	for i, p := range procs {
		var res ChildResult
		if err := readLine(p.out, &res); err != nil {
			return rec, fmt.Errorf("multiproc: process %d's result: %w", i, err)
		}
		for _, s := range res.Sections {
			s.Contender += i * spec.Goroutines
			secs = append(secs, s)
		}
		rec.Unattributed += res.Unattributed
		rec.Errors += res.Errors
		if rec.FirstError == "" && res.FirstError != "" {
			rec.FirstError = fmt.Sprintf("process %d: %s", i, res.FirstError)
		}
		_ = p.in.Close() // the child has written its result; Wait says how it ended
		if err := p.cmd.Wait(); err != nil {
			return rec, fmt.Errorf("multiproc: process %d: %w", i, err)
		}
		procs[i].cmd = nil
	}
	summarize(&rec, secs, spec.Procs*spec.Goroutines, w.From, w.To)
	rec.Exclusion = sh.Exclusion()
	if !rec.Exclusive() {
		return rec, fmt.Errorf("%w: %s: %d of %d sections entered while another was inside, %d updates lost",
			ErrExclusion, rec.Name(), rec.Overlaps, rec.Entered, rec.LostUpdates())
	}
	return rec, nil
}

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
