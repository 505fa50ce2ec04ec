package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

func TestCryptoTokensAreDistinctAndFree(t *testing.T) {
	src := redlock.CryptoTokens()
	seen := make(map[core.Token]bool)
	for i := 0; i < 5000; i++ { // crosses many 512-byte refills
		tok := src.NewToken()
		if tok == (core.Token{}) || seen[tok] {
			t.Fatalf("token %d repeated or zero: %v", i, tok)
		}
		seen[tok] = true
	}
	if a := testing.AllocsPerRun(1000, func() { src.NewToken() }); a != 0 {
		t.Fatalf("NewToken allocates %v times", a)
	}
	other := redlock.CryptoTokens() // its own key and counter
	for i := 0; i < 100; i++ {
		if tok := other.NewToken(); seen[tok] {
			t.Fatalf("a second source repeated the first's token %v", tok)
		}
	}
}

func TestJitterSpreads(t *testing.T) {
	j := redlock.NewJitter()
	var ones int
	for i := 0; i < 1000; i++ {
		if j.Uint64()&1 == 1 {
			ones++
		}
	}
	if ones < 400 || ones > 600 {
		t.Fatalf("low bit set %d/1000 times", ones)
	}
	if a, b := redlock.NewJitter().Uint64(), redlock.NewJitter().Uint64(); a == b {
		t.Fatal("two generators share a seed")
	}
}

func TestNewClientFillsProductionInputs(t *testing.T) {
	c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := c.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.TryLock(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	if lock.Token() == other.Token() || lock.Token() == (core.Token{}) {
		t.Fatalf("tokens %v and %v: not drawn from a source of their own", lock.Token(), other.Token())
	}
	if r := time.Until(lock.Until()); r <= 0 || r > time.Second {
		t.Fatalf("Until on the system clock is %v away", r)
	}
	if err := lock.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}
