//go:build !redlock_mutations

package core

// Without the redlock_mutations tag every mutation switch is false at
// compile time: the branches they guard are dead code the compiler drops,
// and no program built from core carries a switch. mutations.go says
// what each one breaks.
const (
	mutExtendWithSpecDrift    = false
	mutExtendKeepsLostLock    = false
	mutSkipFenceRaise         = false
	mutLeaseLosesAtValidity   = false
	mutValidityWithoutDrift   = false
	mutWakeOnHeldOnly         = false
	mutMarkLapses             = false
	mutOutOfTriesKeepsMark    = false
	mutChainNeverOpens        = false
	mutPlaceIgnored           = false
	mutNeededOverstates       = false
	mutCancelStaysQueued      = false
	mutPlaceOutlivesHead      = false
	mutBehindKeepsTicket      = false
	mutNeverReannounce        = false
	mutNeverReannounceAtLeave = false
	mutFreedUnheard           = false
	mutLastAttemptQueues      = false
)
