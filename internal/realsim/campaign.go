package realsim

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// Summary is a campaign's outcome over one configuration.
type Summary struct {
	Config     string
	Broken     bool
	Schedules  int
	Acquired   int
	Lost       int
	Attempts   int
	Steps      int
	Virtual    time.Duration
	Real       time.Duration
	ByKind     map[string]int
	Failing    []Result // the first few failing schedules
	Violations int
}

// maxFailing is how many failing schedules a Summary keeps.
const maxFailing = 5

// Campaign runs schedules first, first+1, ... of cfg. starting, if not
// nil, is told each schedule's seed before it runs (a real-time watchdog).
func Campaign(t *testing.T, cfg Config, first uint64, schedules int, starting func(seed uint64)) Summary {
	s := Summary{Config: cfg.Name, Broken: cfg.Broken(), Schedules: schedules, ByKind: map[string]int{}}
	began := time.Now()
	for i := range schedules {
		if starting != nil {
			starting(first + uint64(i))
		}
		r := Run(t, cfg, first+uint64(i))
		s.Acquired += r.Acquired
		s.Lost += r.Lost
		s.Attempts += r.Attempts
		s.Steps += r.Steps
		s.Virtual += r.Virtual
		if len(r.Violations) > 0 {
			s.Violations++
			for _, v := range r.Violations {
				s.ByKind[v.Kind]++
			}
			if len(s.Failing) < maxFailing {
				s.Failing = append(s.Failing, r)
			}
		}
	}
	s.Real = time.Since(began)
	return s
}

// Report returns s as the campaign's report lines; replay is the command
// that reruns one schedule, with %d for its seed and %q for the
// configuration's name.
func (s *Summary) Report(replay string) string {
	var w strings.Builder
	fmt.Fprintf(&w, "%s: %d schedules, %d with violations", s.Config, s.Schedules, s.Violations)
	kinds := make([]string, 0, len(s.ByKind))
	for k := range s.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&w, ", %s %d", k, s.ByKind[k])
	}
	fmt.Fprintf(&w, "; %d attempts, %d acquired, %d lost; %d commands; %v virtual in %v\n",
		s.Attempts, s.Acquired, s.Lost, s.Steps, s.Virtual.Round(time.Millisecond), s.Real.Round(time.Millisecond))
	for _, r := range s.Failing {
		fmt.Fprintf(&w, "  seed %d: %s: %s\n", r.Seed, r.Violations[0].Kind, r.Violations[0].Detail)
		fmt.Fprintf(&w, "    replay: "+replay+"\n", r.Seed, s.Config)
	}
	return w.String()
}
