// Package stale names what it no longer declares: every reference the
// test expects to fail is on a line of its own, marked below.
package stale

import "time"

// Grant is held by a Locker. // want Locker
//
// Its deadline is Grant.RemainingAt, its fence lives at FenceKey. // want Grant.RemainingAt FenceKey
type Grant struct {
	end time.Time
	// fence counts under DefaultDriftPPM. // want DefaultDriftPPM
	fence uint64
}

// Until returns the end; see [Grant.Gone] and `holderExpiry`. // want Grant.Gone holderExpiry
func (g Grant) Until() time.Time { return g.end }

// Make returns a Grant; wrapped by zap.Logger. // want zap.Logger
//
//   - A list item names the
//     HolderExpiry of a continuation line. // want HolderExpiry
//
// Code names the package's own removed function:
//
//	g := stale.Acquire(ctx) // want stale.Acquire
func Make() Grant { return Grant{} }
