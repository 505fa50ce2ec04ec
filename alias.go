package redlock

import "github.com/redlock-go/redlock/core"

// The core types a user of the Client names, so that a program imports
// redlock and one driver only.
type (
	// Driver is a set of N independent Redis masters: any package under
	// drivers/ returns one. See core.Driver.
	Driver = core.Driver
	// Error is a failed acquire, release or extend that names its nodes.
	Error = core.Error
	// NodeResult is one node's answer in an Error.
	NodeResult = core.NodeResult
	// Token is the random value a lock holds its keys with.
	Token = core.Token
	// FanOut is how a round reaches its nodes.
	FanOut = core.FanOut
	// Clock is the time source: the driver's, the system clock unless
	// its Options.Clock set another.
	Clock = core.Clock
	// Op is a command's kind in a VoteEvent: acquire, release, extend...
	Op = core.Op
	// Status is a node's answer in a VoteEvent or a NodeResult.
	Status = core.Status
)

// The two fan-outs: see core.Multiplexed and core.Sequential.
const (
	Multiplexed = core.Multiplexed
	Sequential  = core.Sequential
)

// The conditions core reports, each matched with errors.Is: see core's
// documentation. The Client adds ErrLost, ErrUnlocked (which also matches
// ErrNotHeld) and ErrNoFencing (which also matches ErrInvalidConfig).
var (
	ErrTaken             = core.ErrTaken
	ErrQuorumUnreachable = core.ErrQuorumUnreachable
	ErrCancelled         = core.ErrCancelled
	ErrNotHeld           = core.ErrNotHeld
	ErrInvalidConfig     = core.ErrInvalidConfig
	ErrExtensionLimit    = core.ErrExtensionLimit
	ErrClosed            = core.ErrClosed
)
