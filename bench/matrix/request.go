package matrix

import (
	"context"
	"runtime"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
)

// PeerRequest is what the redlock command sends, as JSON on standard
// input, to the peer command of the nested module bench/peers. The peer
// command answers with PeerMessages, one JSON object per line on standard
// output: a Start as each cell begins and a Done as it ends, in the order
// of Cells.
type PeerRequest struct {
	// Addrs maps a scenario (Loopback, Proxy) to its server addresses.
	Addrs map[string][]string `json:"addrs"`
	// Auth and TLS, as given to the redlock command.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	TLS      bool   `json:"tls,omitempty"`
	TLSCA    string `json:"tls_ca,omitempty"`
	// RunID makes keys unique to the run.
	RunID    string        `json:"run_id"`
	TTL      time.Duration `json:"ttl"`
	PoolSize int           `json:"pool_size"`
	Duration time.Duration `json:"duration"`
	Warmup   time.Duration `json:"warmup"`
	Cells    []Cell        `json:"cells"`
}

// PeerMessage is one line of the peer command's output: exactly one field
// is set.
type PeerMessage struct {
	Start *Cell   `json:"start,omitempty"`
	Done  *Record `json:"done,omitempty"`
}

// Measure runs cell c of the request against s with the request's timing,
// after a garbage collection, so that the previous cell's garbage is not
// this cell's cost. Both child commands (ours and the peers') measure
// through it, so both sides of a comparison run the same loop.
func (r PeerRequest) Measure(ctx context.Context, s measure.Subject, c Cell) measure.Result {
	runtime.GC()
	return measure.Run(ctx, s, measure.Spec{
		Clients:   c.Clients,
		SharedKey: c.SharedKey,
		KeyPrefix: c.KeyPrefix(r.RunID),
		Duration:  r.Duration,
		Warmup:    r.Warmup,
	})
}
