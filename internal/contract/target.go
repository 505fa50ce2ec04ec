package contract

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/redistest"
)

// Target is what a case body exercises: a driver, the node under test,
// and where each node keeps its keys, so that one body checks a
// standalone server, a Sentinel group's master or the Cluster master that
// owns a key's slot.
type Target struct {
	D Closer
	// I is the node under test.
	I int
	// Names are the names the driver must give its nodes (NodeName), and
	// its errors.
	Names []string
	// Prefix starts every key the case uses: the cases of
	// dialtest.RunMembers share their servers.
	Prefix string
	At     Layout
}

// Layout says where a driver's nodes keep their keys.
type Layout interface {
	// Master returns the server that holds key for node i now.
	Master(t *testing.T, i int, key string) *redistest.Server
	// AuxName returns the name on node i of key's auxiliary key under
	// prefix, such as its fence counter under core.FenceKeyPrefix.
	AuxName(t *testing.T, i int, prefix, key string) string
	// Pausable returns the servers that, SIGSTOPped, make node i stop
	// answering.
	Pausable(t *testing.T, i int) []*redistest.Server
}

// OnServers starts n standalone servers, opens a driver over their
// addresses and returns it as the target at node i.
func OnServers(t *testing.T, open func(*testing.T, []string) Closer, n, i int) Target {
	srvs := StartServers(t, n, redistest.Options{})
	return Target{D: open(t, AddrsOf(srvs)), I: i, Names: AddrsOf(srvs), At: Servers(srvs)}
}

// Key returns the case's key k.
func (n Target) Key(k string) string { return n.Prefix + k }

// Do runs cmd with key and args on the server that holds key for the node
// under test, and returns its reply.
func (n Target) Do(t *testing.T, cmd, key string, args ...any) any {
	t.Helper()
	srv := n.At.Master(t, n.I, key)
	v, err := srv.Do(append([]any{cmd, key}, args...)...)
	require.NoError(t, err, "%s %s on %s", cmd, key, srv.Addr)
	return v
}

// PTTL returns key's PTTL on the node under test.
func (n Target) PTTL(t *testing.T, key string) int64 {
	t.Helper()
	v := n.Do(t, "PTTL", key)
	ms, ok := v.(int64)
	require.True(t, ok, "PTTL %s replied %v", key, v)
	return ms
}

// Pause SIGSTOPs node i's servers until the test ends or the returned
// function continues them.
func (n Target) Pause(t *testing.T, i int) (cont func()) {
	t.Helper()
	srvs := n.At.Pausable(t, i)
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

// Servers is the layout of standalone servers, node i at Servers[i].
type Servers []*redistest.Server

// Master returns the server of node i.
func (s Servers) Master(_ *testing.T, i int, _ string) *redistest.Server { return s[i] }

// AuxName returns prefix+key: a standalone server keeps every key.
func (Servers) AuxName(_ *testing.T, _ int, prefix, key string) string { return prefix + key }

// Pausable returns the server of node i.
func (s Servers) Pausable(_ *testing.T, i int) []*redistest.Server { return s[i : i+1] }
