package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/redistest"
)

// target is what a case body exercises: a driver, the node under test,
// and where each node keeps its keys, so that one body checks a
// standalone server, a Sentinel group's master or the Cluster master that
// owns a key's slot.
type target struct {
	d Closer
	// i is the node under test.
	i int
	// names are the names the driver must give its nodes (NodeName), and
	// its errors.
	names []string
	// prefix starts every key the case uses: the cases of RunMembers
	// share their servers.
	prefix string
	at     layout
}

// layout says where a driver's nodes keep their keys.
type layout interface {
	// master returns the server that holds key for node i now.
	master(t *testing.T, i int, key string) *redistest.Server
	// auxName returns the name on node i of key's auxiliary key under
	// prefix, such as its fence counter under core.FenceKeyPrefix.
	auxName(t *testing.T, i int, prefix, key string) string
	// pausable returns the servers that, SIGSTOPped, make node i stop
	// answering.
	pausable(t *testing.T, i int) []*redistest.Server
}

// onServers starts n standalone servers, opens a driver over their
// addresses and returns it as the target at node i.
func onServers(t *testing.T, open func(*testing.T, []string) Closer, n, i int) target {
	srvs := startServers(t, n, redistest.Options{})
	return target{d: open(t, addrsOf(srvs)), i: i, names: addrsOf(srvs), at: servers(srvs)}
}

// key returns the case's key k.
func (n target) key(k string) string { return n.prefix + k }

// do runs cmd with key and args on the server that holds key for the node
// under test, and returns its reply.
func (n target) do(t *testing.T, cmd, key string, args ...any) any {
	t.Helper()
	srv := n.at.master(t, n.i, key)
	v, err := srv.Do(append([]any{cmd, key}, args...)...)
	require.NoError(t, err, "%s %s on %s", cmd, key, srv.Addr)
	return v
}

// pttl returns key's PTTL on the node under test.
func (n target) pttl(t *testing.T, key string) int64 {
	t.Helper()
	v := n.do(t, "PTTL", key)
	ms, ok := v.(int64)
	require.True(t, ok, "PTTL %s replied %v", key, v)
	return ms
}

// pause SIGSTOPs node i's servers until the test ends or the returned
// function continues them.
func (n target) pause(t *testing.T, i int) (cont func()) {
	t.Helper()
	srvs := n.at.pausable(t, i)
	cont = func() {
		for _, s := range srvs {
			s.Cont()
		}
	}
	t.Cleanup(cont)
	for _, s := range srvs {
		s.Stop()
	}
	return cont
}

// servers is the layout of standalone servers, node i at servers[i].
type servers []*redistest.Server

func (s servers) master(_ *testing.T, i int, _ string) *redistest.Server { return s[i] }

func (servers) auxName(_ *testing.T, _ int, prefix, key string) string { return prefix + key }

func (s servers) pausable(_ *testing.T, i int) []*redistest.Server { return s[i : i+1] }
