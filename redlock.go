// Package redlock wires package core's Redlock algorithm to production
// inputs: the system clock, crypto/rand tokens and a seeded jitter
// generator. The algorithm, its assumptions and the Locker API are
// documented in package core; the Redis clients are in drivers/.
//
//	drv, err := redigo.Dial(addrs, redigo.Options{}) // or radix, rueidis, goredis
//	locker, err := redlock.New(drv, core.Config{TTL: 10 * time.Second})
//	lock, err := locker.Acquire(ctx, "resource")
//	...
//	err = locker.Release(ctx, lock)
package redlock

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/redlock-go/redlock/core"
)

// New returns core.New(d, cfg) with cfg's nil Clock, Tokens and Jitter set
// to SystemClock, CryptoTokens() and NewJitter().
func New(d core.Driver, cfg core.Config) (*core.Locker, error) {
	if cfg.Clock == nil {
		cfg.Clock = core.SystemClock{}
	}
	if cfg.Tokens == nil {
		cfg.Tokens = CryptoTokens()
	}
	if cfg.Jitter == nil {
		cfg.Jitter = NewJitter()
	}
	return core.New(d, cfg)
}

// CryptoTokens returns a TokenSource of 128-bit tokens from crypto/rand. It
// reads 512 bytes at a time, so a token costs no allocation and, on
// average, 1/32 of a system call. Safe for concurrent use.
func CryptoTokens() core.TokenSource { return &cryptoTokens{} }

type cryptoTokens struct {
	mu  sync.Mutex
	buf [32 * core.TokenSize]byte
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
	c.off += core.TokenSize
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
