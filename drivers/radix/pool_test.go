package radix_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

// heldDialer dials its first connection at once; each later dial waits
// until its context ends or closed is closed, then connects anyway: a
// dial that completes after the pool's Close.
type heldDialer struct {
	mu        sync.Mutex
	dials     int
	redialing chan struct{} // closed when a second dial begins
	closed    chan struct{}
}

func (d *heldDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dials++
	n := d.dials
	d.mu.Unlock()
	if n == 2 {
		close(d.redialing)
	}
	if n > 1 {
		select {
		case <-ctx.Done():
		case <-d.closed:
		}
	}
	return (&net.Dialer{}).DialContext(context.Background(), network, addr)
}

// TestMemberPoolLeavesNoConnection: a Sentinel's or Cluster's connection
// to a server that dropped it is dialled again, and a dial that ends
// after Close leaves no connection running. radix's own pool, which
// redials in the background, leaked that connection's reader and writer
// (CI saw them outlive a test).
func TestMemberPoolLeavesNoConnection(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	d := &heldDialer{redialing: make(chan struct{}), closed: make(chan struct{})}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := radix.NewMemberPool(ctx, radixv4.Dialer{NetDialer: d}, s.Addr)
	require.NoError(t, err)
	require.NoError(t, p.Do(ctx, radixv4.Cmd(nil, "PING")))
	_, err = s.Do("CLIENT", "KILL", "TYPE", "normal") // not this connection: SKIPME
	require.NoError(t, err)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = p.Do(ctx, radixv4.Cmd(nil, "PING")) // fails until redialled
			select {
			case <-d.redialing:
				return
			default:
			}
		}
	}()
	<-d.redialing
	assert.NoError(t, p.Close())
	close(d.closed)
	cancel()
	<-done
}

// TestMemberPoolLeavesATimedOutTargetAlone: when a command's context ends
// before its reply, radix's reader later reads that reply into the
// command's target, to keep the connection in step, after Do has returned.
// radix's Cluster reads its CLUSTER SLOTS target after such an error
// (getTopo), and the race detector caught the two in CI. A member's pool
// reads a reply into a target of its own and hands it over only on
// success: once Do has returned an error, the caller's target is left
// alone.
func TestMemberPoolLeavesATimedOutTargetAlone(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	p, err := radix.NewMemberPool(ctx, radixv4.Dialer{}, s.Addr)
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	require.NoError(t, p.Do(ctx, radixv4.Cmd(nil, "SET", "late", "reply")))

	s.Stop()
	var got string
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = p.Do(short, radixv4.Cmd(&got, "GET", "late"))
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	s.Cont()

	// radix's reader reads the late GET reply before this one, on the same
	// connection (a timeout leaves it usable).
	var pong string
	require.NoError(t, p.Do(ctx, radixv4.Cmd(&pong, "PING")))
	assert.Equal(t, "PONG", pong)
	assert.Empty(t, got, "the late reply was read into the caller's target")

	// A reply in time still reaches its target.
	require.NoError(t, p.Do(ctx, radixv4.Cmd(&got, "GET", "late")))
	assert.Equal(t, "reply", got)
}
