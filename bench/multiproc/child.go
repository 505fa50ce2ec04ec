package multiproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/target"
)

// ChildEnv is the environment variable that puts a binary in the child
// mode: a program's main calls Child when it is "1". Run sets it.
const ChildEnv = "REDLOCK_BENCH_MULTIPROC_CHILD"

// ChildSpec is what the parent tells one child, as the first line of its
// standard input.
type ChildSpec struct {
	Process    int      `json:"process"`
	Driver     string   `json:"driver"`
	Addrs      []string `json:"addrs"`
	Username   string   `json:"username,omitempty"`
	Password   string   `json:"password,omitempty"`
	TLS        bool     `json:"tls,omitempty"`
	TLSCA      string   `json:"tls_ca,omitempty"`
	Mode       string   `json:"mode"`
	Key        string   `json:"key"`
	Goroutines int      `json:"goroutines"`
	// Hold is the critical section: a spin of this long.
	Hold time.Duration `json:"hold"`
	TTL  time.Duration `json:"ttl"`
	// Shared is the path of the shared page (CreateShared).
	Shared string `json:"shared"`
}

// window is the second line of a child's standard input: the loop starts
// at once and stops at To, both on CLOCK_MONOTONIC; From is when the
// measured window opens.
type window struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// ChildResult is a child's report, the last line of its standard output.
type ChildResult struct {
	Sections     []Section `json:"sections"`
	Unattributed int64     `json:"unattributed"`
	Errors       int64     `json:"errors"`
	FirstError   string    `json:"first_error,omitempty"`
}

// readyLine is what a child writes once it is ready to start.
const readyLine = "ready\n"

// Child runs one child process: it reads its ChildSpec from in, dials,
// writes "ready", reads the window, loops its goroutines until the
// window closes and writes its ChildResult to out. It returns the exit
// code; errors go to errOut.
func Child(in io.Reader, out, errOut io.Writer) int {
	if err := child(in, out); err != nil {
		_, _ = fmt.Fprintln(errOut, "multiproc child:", err) // standard error: nowhere to report a failure
		return 1
	}
	return 0
}

func child(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	var spec ChildSpec
	if err := readLine(r, &spec); err != nil {
		return fmt.Errorf("reading the spec: %w", err)
	}
	if spec.Goroutines < 1 {
		return fmt.Errorf("process %d: %d goroutines", spec.Process, spec.Goroutines)
	}
	opts := target.DialOptions{Username: spec.Username, Password: spec.Password}
	if spec.TLS {
		var err error
		if opts.TLS, err = matrix.ClientTLS(spec.TLSCA); err != nil {
			return err
		}
	}
	drv, closeDrv, err := target.Dial(spec.Driver, spec.Addrs, opts)
	if err != nil {
		return err
	}
	defer func() { _ = closeDrv() }() // after the result is written: a failed close changes nothing in it
	counter, counted := CountAttempts(drv)
	hot, err := target.NewHotKey(counted, spec.Mode, spec.TTL)
	if err != nil {
		return err
	}
	sh, err := OpenShared(spec.Shared)
	if err != nil {
		return err
	}
	defer func() { _ = sh.Close() }() // unmapping at the end: the parent reads the page through its own mapping
	if _, err := io.WriteString(out, readyLine); err != nil {
		return err
	}
	var w window
	if err := readLine(r, &w); err != nil {
		return fmt.Errorf("reading the window: %w", err)
	}
	res := loop(context.Background(), hot, sh, spec, w.To)
	res.Unattributed = counter.Unattributed()
	return json.NewEncoder(out).Encode(res)
}

// loop runs spec.Goroutines contenders on hot until the shared clock
// reads to: Lock, the critical section, Unlock.
func loop(ctx context.Context, hot *target.HotKey, sh *Shared, spec ChildSpec, to int64) ChildResult {
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	timer := time.AfterFunc(time.Duration(to-Now()), stop)
	defer timer.Stop()
	release := context.WithoutCancel(ctx)
	var (
		mu  sync.Mutex
		res ChildResult
		wg  sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	for g := range spec.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n atomic.Int64
			lockCtx := WithAttempts(waitCtx, &n)
			var secs []Section
			for waitCtx.Err() == nil {
				before := n.Load()
				l, err := hot.C.Lock(lockCtx, spec.Key)
				acq := Now()
				if err != nil {
					if waitCtx.Err() == nil {
						fail(err)
					}
					continue
				}
				ticket, _ := sh.Enter()
				v := sh.Load()
				spin(spec.Hold)
				sh.Store(v + 1)
				sh.Leave()
				call := Now()
				// Its acquire rounds, if any (a release that handed the key
				// to a waiter that then left is announced by a TryLock and
				// its Unlock), are this contender's.
				err = l.Unlock(WithAttempts(release, &n))
				rel := Now()
				if err != nil {
					fail(err)
					rel = 0
				}
				secs = append(secs, Section{Contender: g, Ticket: ticket, Acq: acq, Call: call, Rel: rel, Attempts: n.Load() - before})
			}
			mu.Lock()
			res.Sections = append(res.Sections, secs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return res
}

// spin keeps the CPU busy for d: the critical section.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		measure.Spin(64)
	}
}

// readLine reads one line of JSON from r into v.
func readLine(r *bufio.Reader, v any) error {
	line, err := r.ReadBytes('\n')
	if err != nil && (!errors.Is(err, io.EOF) || len(line) == 0) {
		return err
	}
	return json.Unmarshal(line, v)
}
