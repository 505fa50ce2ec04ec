// Package dialspec holds what a driver is dialled with, so that the engine
// and the drivers package can share it without importing each other: the
// Options, the Members and their Topology, and the two causes a member's
// vote can fail with that are not the network's. Package drivers
// re-exports every name; import that one.
package dialspec

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/redlock-go/redlock/core"
)

// DefaultDialTimeout applies when Options.DialTimeout is 0.
const DefaultDialTimeout = 2 * time.Second

// Options configure a driver's Dial. The zero value connects over plain TCP,
// without authentication, to database 0, with DefaultDialTimeout, on the
// system clock.
type Options struct {
	// Username and Password authenticate each connection: an ACL user and
	// its password, or the default user's password alone when Username is
	// empty (AUTH, or HELLO for rueidis). A Username needs a Password.
	Username, Password string
	// DB is the database the keys live in (SELECT); 0 is the default. It
	// must not be negative.
	DB int
	// TLS, when not nil, makes each connection TLS with this configuration
	// (its ServerName defaults to the address's host).
	TLS *tls.Config
	// DialTimeout bounds a connection attempt, TLS and authentication
	// included; a dial made for a command is also bounded by the command's
	// deadline. 0 means DefaultDialTimeout; it must not be negative.
	DialTimeout time.Duration
	// Clock is the clock of the commands' deadlines; give the same one to
	// redlock.Options.Clock, or leave both nil. Nil means the system clock
	// (core.SystemClock). The driver's Clock method returns it, and
	// redlock.NewClient adopts it, or refuses another.
	Clock core.Clock
	// Logger gets the driver's warnings (one: that a node refuses the
	// subscriptions that announce releases, so waiters poll). Nil logs
	// nothing; pass the Client's redlock.Options.Logger to see them. A
	// driver is dialled before any Client exists, so it takes its own.
	Logger *slog.Logger
}
