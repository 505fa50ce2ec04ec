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
// a bound; with Options.Fencing, Lock.Fence returns a number that grows with
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
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/redlock-go/redlock/core"
)

// CryptoTokens returns a TokenSource of 128-bit tokens: the AES-128-CTR
// keystream under a key and a starting counter from crypto/rand (the
// generator of NIST's CTR_DRBG, without its reseeding: a token must be
// unique and unguessable, not secret after the fact). A token is one
// AES block of distinct counters, so a source never repeats one (a
// permutation of distinct blocks), and no token tells another without
// the key. It makes 32 at a time, so a token costs no allocation, no
// system call, and a fraction of the cost of reading crypto/rand for it.
// Safe for concurrent use.
func CryptoTokens() core.TokenSource {
	var key, iv [16]byte
	rand.Read(key[:]) // never fails since Go 1.24: it crashes instead
	rand.Read(iv[:])
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic("redlock: AES-128: " + err.Error()) // a 16-byte key is always valid
	}
	return &cryptoTokens{stream: cipher.NewCTR(block, iv[:]), off: tokenBatch}
}

const tokenBatch = 32 * len(core.Token{})

type cryptoTokens struct {
	mu     sync.Mutex
	stream cipher.Stream
	buf    [tokenBatch]byte
	off    int
}

func (c *cryptoTokens) NewToken() core.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off == len(c.buf) {
		clear(c.buf[:]) // the keystream itself: XORed over zeros
		c.stream.XORKeyStream(c.buf[:], c.buf[:])
		c.off = 0
	}
	var t core.Token
	copy(t[:], c.buf[c.off:])
	c.off += len(core.Token{})
	return t
}

// NewJitter returns a fast lock-free Rand (SplitMix64) seeded from
// crypto/rand, for retry delays. Safe for concurrent use. A Client always
// draws its tokens from CryptoTokens and its delays from NewJitter; both
// are exported for embedders of core, whose core.Config takes them.
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
