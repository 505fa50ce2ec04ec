package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/core"
)

// TestBadInputIsRefusedBeforeSending: every entry point refuses bad input
// with ErrInvalidConfig, and no command reaches a node. (A nil context and
// the zero token were refused by core's blocking wrappers, which are gone:
// the zero token now draws tokens from Config.Tokens, and nil contexts are
// the root Client's to refuse.)
func TestBadInputIsRefusedBeforeSending(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{})
	lock, err := e.l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	calls := e.c.Calls(0)
	long := strings.Repeat("x", core.MaxKeyLen+1)
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"empty key", func() error { _, err := e.l.spec.Acquire("", core.Token{}, e.clock.Now()); return err }, "key is empty"},
		{"key too long", func() error { _, err := e.l.spec.Acquire(long, core.Token{}, e.clock.Now()); return err }, "longer than the limit (4096 bytes)"},
		{"guessable token", func() error {
			_, err := e.l.spec.Acquire("k", core.TokenFromUint64s(0, 42), e.clock.Now())
			return err
		}, "first 8 bytes zero"},
		{"release of the zero grant", func() error { _, err := e.l.spec.Release(core.Grant{}, e.clock.Now()); return err }, "zero Grant"},
		{"lease of the zero grant", func() error { ls := e.l.spec.Lease(core.Grant{}); return ls.Err() }, "zero Grant"},
		{"extend of the zero grant", func() error { ls := e.l.spec.Lease(core.Grant{}); return ls.Extend(e.clock.Now()) }, "zero Grant"},
		{"extend in flight", func() error {
			ls := e.l.spec.Lease(lock)
			if err := ls.Extend(e.clock.Now()); err != nil {
				return err
			}
			return ls.Extend(e.clock.Now()) // the round was never sent
		}, "in flight"},
		{"result before done", func() error {
			a, err := e.l.spec.Acquire("k2", core.Token{}, e.clock.Now())
			if err != nil {
				return err
			}
			_, err = a.Result()
			return err
		}, "not done"},
	} {
		err := tc.call()
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig containing %q", tc.name, err, tc.want)
			continue
		}
		if len(err.Error()) > 300 {
			t.Errorf("%s: error text of %d bytes", tc.name, len(err.Error()))
		}
	}
	if e.c.Calls(0) != calls {
		t.Error("bad input reached a node")
	}
	// The longest accepted key works.
	max := strings.Repeat("y", core.MaxKeyLen)
	l2, err := e.l.Acquire(context.Background(), max)
	if err != nil {
		t.Fatalf("key of MaxKeyLen bytes: %v", err)
	}
	if err := e.l.Release(context.Background(), l2); err != nil {
		t.Fatal(err)
	}
}

// TestErrorTextCutsLongKeys: a failed round's error names the key, cut to a
// readable length with its size, never the whole key.
func TestErrorTextCutsLongKeys(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{})
	key := strings.Repeat("k", core.MaxKeyLen)
	for i := range 3 {
		e.c.Set(i, key, core.TokenFromUint64s(7, 7), 10*ms*1000)
	}
	_, err := e.l.Acquire(context.Background(), key)
	if !errors.Is(err, core.ErrTaken) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	if len(msg) > 400 || !strings.Contains(msg, "(4096 bytes)") {
		t.Fatalf("error text of %d bytes: %.200s", len(msg), msg)
	}
}

// TestCancelledBeforeSendingSendsNothing: an acquisition whose context has
// ended sends nothing, not even a cleanup.
func TestCancelledBeforeSendingSendsNothing(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.l.Acquire(ctx, "k"); !errors.Is(err, core.ErrCancelled) {
			t.Fatalf("err = %v", err)
		}
		for i := range 3 {
			if e.c.Calls(i) != 0 {
				t.Fatalf("node %d got %d commands", i, e.c.Calls(i))
			}
		}
	})
}
