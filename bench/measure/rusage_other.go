//go:build !unix

package measure

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
