package wire

import (
	"fmt"
	"strings"

	"github.com/redlock-go/redlock/drivers/internal/dialspec"
)

// MemberError returns err, member m's failed dial, as a failed vote
// matching dialspec.ErrMisconfigured when it says m is not what it was
// given as: a Sentinel group whose Sentinels know no master of its
// MasterName (noMaster, which only the client can tell from its error:
// an error reply "No such master with that name", or a nil reply to
// SENTINEL GET-MASTER-ADDR-BY-NAME), or a Cluster whose seed has cluster
// support disabled. Any other err is returned as it is.
func MemberError(m dialspec.Member, err error, noMaster bool) error {
	switch {
	case err == nil:
		return nil
	case m.Topology == dialspec.SentinelGroup && (noMaster || strings.Contains(err.Error(), "No such master")):
		return fmt.Errorf("%w: %s: the Sentinels know no master %q: %w", dialspec.ErrMisconfigured, m, m.MasterName, err)
	case m.Topology == dialspec.ClusterGroup && strings.Contains(err.Error(), "cluster support disabled"):
		return NotCluster(m, err)
	}
	return err
}

// NotCluster is the failed dial of Cluster member m whose seed is not in
// cluster mode, as err says: it matches dialspec.ErrMisconfigured.
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
