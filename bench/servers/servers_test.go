package servers

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestMiniAnswersPing(t *testing.T) {
	m, err := StartMini(2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}()
	if len(m.Addrs()) != 2 || m.Addrs()[0] == m.Addrs()[1] {
		t.Fatalf("addrs = %v", m.Addrs())
	}
	for _, a := range m.Addrs() {
		if err := Ping(a, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if rtt, err := PingRTT(m.Addrs()[0], 5); err != nil || rtt <= 0 {
		t.Fatalf("PingRTT = %v, %v", rtt, err)
	}
	if rtt, err := PingRoundRTT(m.Addrs(), 5); err != nil || rtt <= 0 {
		t.Fatalf("PingRoundRTT = %v, %v", rtt, err)
	}
	if _, err := PingRoundRTT(append(m.Addrs(), "127.0.0.1:1"), 1); err == nil {
		t.Fatal("PingRoundRTT to a closed port: no error")
	}
	if _, err := PingRoundRTT(m.Addrs(), 0); err == nil {
		t.Fatal("PingRoundRTT of no round: no error")
	}
}

func TestRedisAnswersPing(t *testing.T) {
	r, err := StartRedis(redistest.RedisServerPath(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	if r.Version() == "" {
		t.Error("no version")
	}
	for _, a := range r.Addrs() {
		if err := Ping(a, time.Second); err != nil {
			t.Fatal(err)
		}
	}
}
