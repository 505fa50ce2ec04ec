package servers

import (
	"testing"
	"time"
)

func TestMiniAnswersPing(t *testing.T) {
	m, err := StartMini(2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
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
}

func TestRedisAnswersPing(t *testing.T) {
	if Binary() == "" {
		t.Skip("bench/servers: redis-server is not on PATH")
	}
	r, err := StartRedis("", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Version() == "" {
		t.Error("no version")
	}
	for _, a := range r.Addrs() {
		if err := Ping(a, time.Second); err != nil {
			t.Fatal(err)
		}
	}
}
