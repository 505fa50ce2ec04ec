package wire

import (
	"fmt"

	"github.com/redlock-go/redlock/drivers/internal/dialspec"
)

// UnknownMaster is the failed dial of Sentinel member m whose Sentinels
// answered err, that they know no master of its MasterName: it matches
// dialspec.ErrMisconfigured.
func UnknownMaster(m dialspec.Member, err error) error {
	return fmt.Errorf("%w: %s: the Sentinels know no master %q: %w", dialspec.ErrMisconfigured, m, m.MasterName, err)
}

// NotCluster is the failed dial of Cluster member m whose seed answered
// err, that it is not in cluster mode: it matches
// dialspec.ErrMisconfigured.
func NotCluster(m dialspec.Member, err error) error {
	return fmt.Errorf("%w: %s: not a Cluster: %w", dialspec.ErrMisconfigured, m, err)
}

// KeyIndex returns the position of the key in words, a command of the
// engine: SET's, or a script's first (its other keys share its hash slot
// on a Cluster: ClusterName); -1 for a command of no key.
func KeyIndex(words []string) int {
	switch {
	case words[0] == "SET" && len(words) > 1:
		return 1
	case (words[0] == "EVAL" || words[0] == "EVALSHA") && len(words) > 3 && words[2] != "0":
		return 3
	}
	return -1
}
