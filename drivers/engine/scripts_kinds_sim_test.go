package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/sim"
)

// simKinds is the simulation's node (sim.ScriptModel) as a kindModel:
// the model the simulation's reader/writer and multi-key schedules run
// their commands through, held here to the shipped scripts.
type simKinds struct{ m *sim.ScriptModel }

func newSimKinds(faults sim.Faults) simKinds {
	m := sim.NewScriptModel(len(waiterIDs), faults)
	m.SetKeys(diffKey, kindKeys[1:]...)
	return simKinds{m}
}

func (s simKinds) apply(cmd core.Command, brk int32, srv, shifted time.Duration) core.Reply {
	var want core.Reply
	if brk != breakUnsent {
		want = s.m.Apply(0, cmd, srv+shifted)
	}
	if brk != 0 {
		want = s.m.ApplyResent(0, cmd, srv+shifted)
	}
	return want
}

func (s simKinds) state(srv, shifted time.Duration) kindState {
	k := s.m.KindState(srv + shifted)
	st := kindState{Keys: map[string]heldKey{}, Fences: k.Fences, Readers: map[core.Token]time.Duration{}}
	for name, h := range k.Keys {
		st.Keys[name] = heldKey{h.Token, h.Expires - shifted}
	}
	for t, at := range k.Readers {
		st.Readers[t] = at - shifted
	}
	if k.Mark.Token != (core.Token{}) {
		st.Mark = heldKey{k.Mark.Token, k.Mark.Expires - shifted}
	}
	return st
}

// firstSimKindsDiff returns the first difference between the scripts
// and the simulation's model with faults, over kinds sequences 1 to
// diffSeeds, or nil.
func (env *diffEnv) firstSimKindsDiff(faults sim.Faults) error {
	for seed := uint64(1); seed <= diffSeeds; seed++ {
		if err := env.diffKindsWith(seed, newSimKinds(faults), "the sim model"); err != nil {
			return err
		}
	}
	return nil
}

// kindsMatchSimModel is TestScriptsMatchSimModel of the kinds beyond the
// mutex: the sequences of kindCommand, through the scripts and through
// sim.ScriptModel.
func kindsMatchSimModel(t *testing.T, env *diffEnv) {
	require.NoError(t, env.firstSimKindsDiff(sim.Faults{}))
}

// TestKindDiffSeesPlantedSimModelDefects: the simulation's model with
// the defects its broken configurations plant (a reader admitted beside
// a writer, a multi-key take of a subset, a writer refused for readers
// that marks nothing) differs from the shipped scripts, and the test
// says where: what the simulation's checkers catch are defects a script
// could have.
func TestKindDiffSeesPlantedSimModelDefects(t *testing.T) {
	env := startDiff(t)
	for name, f := range map[string]sim.Faults{
		"reader beside writer": {ReaderBesideWriter: true},
		"subset taken":         {TakeSubset: true},
		"writer marks nothing": {NoWriterMark: true},
	} {
		err := env.firstSimKindsDiff(f)
		require.Error(t, err, "%s: the model's defect went unseen", name)
		require.Contains(t, err.Error(), "seed ")
		t.Logf("%s: %v", name, err)
	}
}
