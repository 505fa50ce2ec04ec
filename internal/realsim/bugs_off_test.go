//go:build !redlock_mutations

package realsim

import "go.uber.org/goleak"

// bugLeaks is empty without the redlock_mutations tag: no runner slip
// exists to leave a goroutine behind (bugs_test.go).
var bugLeaks []goleak.Option
