package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/core"
)

// TestBadInputIsRefusedBeforeSending: every entry point refuses bad input
// with ErrInvalidConfig, and no command reaches a node.
func TestBadInputIsRefusedBeforeSending(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{})
	lock, err := e.l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	calls := e.c.Calls(0)
	long := strings.Repeat("x", core.MaxKeyLen+1)
	var nilCtx context.Context
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"acquire nil ctx", func() error { _, err := e.l.Acquire(nilCtx, "k"); return err }, "context is nil"},
		{"acquire-token nil ctx", func() error {
			_, err := e.l.AcquireToken(nilCtx, "k", core.TokenFromUint64s(1, 1))
			return err
		}, "context is nil"},
		{"extend nil ctx", func() error { _, err := e.l.Extend(nilCtx, lock); return err }, "context is nil"},
		{"release nil ctx", func() error { return e.l.Release(nilCtx, lock) }, "context is nil"},
		{"empty key", func() error { _, err := e.l.Acquire(context.Background(), ""); return err }, "key is empty"},
		{"key too long", func() error { _, err := e.l.Acquire(context.Background(), long); return err }, "longer than MaxKeyLen"},
		{"guessable token", func() error {
			_, err := e.l.AcquireToken(context.Background(), "k", core.TokenFromUint64s(0, 42))
			return err
		}, "first 8 bytes zero"},
		{"zero token", func() error {
			_, err := e.l.AcquireToken(context.Background(), "k", core.Token{})
			return err
		}, "token is zero"},
	} {
		err := tc.call()
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig containing %q", tc.name, err, tc.want)
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
