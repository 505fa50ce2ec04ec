// Package redlock is the Redlock distributed lock over N independent Redis
// masters: a Client that hands out Lock handles, over any driver in
// drivers/ (redigo, radix, rueidis, go-redis, valkey-go).
//
//	drv, err := redigo.Dial([]string{"127.0.0.1:6379", "127.0.0.1:6380", "127.0.0.1:6381"}, redigo.Options{})
//	client, err := redlock.NewClient(drv, redlock.Options{Lease: &redlock.Lease{Fraction: 1.0 / 3}})
//	lock, err := client.Lock(ctx, "report")
//	defer lock.Unlock(context.Background())
//	err = work(lock.Context()) // cancelled the moment the lock is lost
//
// A Lock's Context is cancelled, with the cause in context.Cause, when the
// lock is lost; a Lease extends it in the background until Unlock, within
// a bound; with Config.Fencing, Lock.Fence returns a number that grows with
// every holder, for storage that refuses stale writers. Client.Lock, on a
// held key, waits for the holder's release to be announced (or for its
// keys to expire) rather than sleeping random delays; Options.Poll turns
// that off.
//
// Options.Observer hears what the Client does as typed events
// (acquisitions, each node's answer, releases, extensions, losses,
// waiters, handoffs, fences), at no cost when unset; the module
// github.com/redlock-go/redlock/otel records them as OpenTelemetry
// metrics and spans. Options.Logger takes the Client's warnings; nil logs
// nothing.
//
// The algorithm, its assumptions, fencing's argument and the step values
// for embedders (no I/O, no goroutines, no allocations, WebAssembly and
// TinyGo) are package core's: core decides when to attempt, clean up,
// wait, extend and give up, and the Client is the one runner that does
// the I/O, the sleeping and the goroutines. This package re-exports the
// names a Client's user needs.
package redlock

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/redlock-go/redlock/core"
)

// CryptoTokens returns a TokenSource of 128-bit tokens from crypto/rand. It
// reads 512 bytes at a time, so a token costs no allocation and, on
// average, 1/32 of a system call. Safe for concurrent use.
func CryptoTokens() core.TokenSource { return &cryptoTokens{} }

type cryptoTokens struct {
	mu  sync.Mutex
	buf [32 * len(core.Token{})]byte
	off int
}

func (c *cryptoTokens) NewToken() core.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off == 0 || c.off == len(c.buf) {
		rand.Read(c.buf[:]) // never fails since Go 1.24: it crashes instead
		c.off = 0
	}
	var t core.Token
	copy(t[:], c.buf[c.off:])
	c.off += len(core.Token{})
	return t
}

// NewJitter returns a fast lock-free Rand (SplitMix64) seeded from
// crypto/rand, for retry delays. Safe for concurrent use.
func NewJitter() core.Rand {
	var seed [8]byte
	rand.Read(seed[:])
	j := &splitMix{}
	j.state.Store(binary.LittleEndian.Uint64(seed[:]))
	return j
}

type splitMix struct{ state atomic.Uint64 }

func (s *splitMix) Uint64() uint64 {
	z := s.state.Add(0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
