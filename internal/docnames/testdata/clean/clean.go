// Package clean writes references in every form the checker reads, all
// of them to names that exist: Grant, Grant.Until, Grant.Fence (a field),
// Holder.Until (promoted), [Grant], [*Grant], [Grant.Until], `Make`,
// [time.Duration], time.Time and clean.Make.
// Titles in quotes are prose: see "Some Heading". SET, NX and OK are
// commands. Grants is a plural, MakeAll calls Make for each of n.
//
// # A Heading
//
// Code names its own variables:
//
//	g := clean.Make()
//	d := g.Until().Sub(start)
//
// Redis is allowed by the test.
package clean

import "time"

// Grant is a grant.
type Grant struct {
	Fence uint64
	end   time.Time
}

// Holder embeds a Grant: Holder.Fence and Holder.Until are promoted.
type Holder struct{ Grant }

// Until returns g's end, the zero Time for the zero Grant.
func (g Grant) Until() time.Time { return g.end }

// Make returns a Grant: the caller's maxWait is ignored, and so is
// nodeCount.
func Make(maxWait time.Duration, nodeCount int) Grant { return Grant{} }

// MakeAll makes n Grants.
func MakeAll(n int) []Grant { return make([]Grant, n) }
