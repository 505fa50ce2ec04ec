package dialtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/internal/contract"
	"github.com/redlock-go/redlock/internal/redistest"
)

// testAuth: servers that require a password, an ACL user, or TLS answer
// a driver dialled with the right Options, and refuse one dialled with
// wrong credentials or plain text with StatusError naming the node,
// within the command's deadline.
func testAuth(t *testing.T, dial DialFunc) {
	for _, tc := range []struct {
		name string
		srv  redistest.Options
		bad  map[string]func(*drivers.Options)
	}{
		{"password", redistest.Options{Password: "right horse battery"}, map[string]func(*drivers.Options){
			"wrong": func(o *drivers.Options) { o.Password = "wrong" },
			"none":  func(o *drivers.Options) { o.Password = "" },
		}},
		{"acl-user", redistest.Options{User: "locker", UserPassword: "pw-of-locker"}, map[string]func(*drivers.Options){
			"wrong password": func(o *drivers.Options) { o.Password = "wrong" },
			// The password alone authenticates as the disabled default user.
			"no user": func(o *drivers.Options) { o.Username = "" },
		}},
		{"tls", redistest.Options{TLS: true}, map[string]func(*drivers.Options){
			"plain text client": func(o *drivers.Options) { o.TLS = nil },
		}},
		{"tls-password", redistest.Options{TLS: true, Password: "pw"}, map[string]func(*drivers.Options){
			"wrong": func(o *drivers.Options) { o.Password = "wrong" },
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvs := contract.StartServers(t, 2, tc.srv)
			eps := Endpoints(srvs, tc.srv)
			right := drivers.Options{Username: eps[0].Username, Password: eps[0].Password, TLS: eps[0].TLS, DialTimeout: time.Second}
			open := func(t *testing.T, o drivers.Options) core.Driver {
				t.Helper()
				d, err := dial(contract.AddrsOf(srvs), o)
				require.NoError(t, err, "Dial connects lazily or to servers that are up")
				t.Cleanup(func() { assert.NoError(t, d.Close()) })
				return d
			}
			t.Run("right", func(t *testing.T) {
				d := open(t, right)
				for i := range srvs {
					r := contract.SendOne(d, i, contract.AcquireCmd("k"), 2*time.Second)
					require.Equal(t, core.StatusOK, r.Status, "node %d: %v", i, r.Err)
					r = contract.SendOne(d, i, contract.ReleaseCmd("k", contract.Token), 2*time.Second)
					require.Equal(t, core.StatusOK, r.Status, "node %d: %v", i, r.Err)
				}
			})
			for name, edit := range tc.bad {
				t.Run(name, func(t *testing.T) {
					o := right
					edit(&o)
					d, err := dial(contract.AddrsOf(srvs), o)
					if err != nil {
						return // refused at the dial: as good
					}
					t.Cleanup(func() { assert.NoError(t, d.Close()) })
					for i, srv := range srvs {
						start := time.Now()
						r := contract.SendOne(d, i, contract.AcquireCmd("k"), 2*time.Second)
						assert.Contains(t, []core.Status{core.StatusError, core.StatusTimeout}, r.Status, "node %d", i)
						assert.Less(t, time.Since(start), 5*time.Second, "node %d: the command outlived its deadline", i)
						if assert.Error(t, r.Err, "node %d", i) {
							assert.Contains(t, r.Err.Error(), srv.Addr, "the error names the node")
						}
						n, err := srv.Do("EXISTS", "k")
						require.NoError(t, err)
						assert.Equal(t, int64(0), n, "node %d: a refused client set the key", i)
					}
				})
			}
		})
	}
}

// Endpoints returns the endpoints of servers started with opts.
func Endpoints(srv []*redistest.Server, opts redistest.Options) []Endpoint {
	eps := make([]Endpoint, len(srv))
	for i, s := range srv {
		eps[i] = Endpoint{Addr: s.Addr, Password: opts.Password, TLS: s.ClientTLS()}
		if opts.User != "" {
			eps[i].Username, eps[i].Password = opts.User, opts.UserPassword
		}
	}
	return eps
}
