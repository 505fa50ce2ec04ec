package testguard_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/testguard"
)

// stuckEnv makes TestStuckChild block for ever, in the child process that
// TestArmFailsAStuckBinary starts.
const stuckEnv = "TESTGUARD_STUCK_CHILD"

func TestMain(m *testing.M) {
	testguard.Arm()
	os.Exit(m.Run())
}

// TestStuckChild is stuck when stuckEnv is set: it waits on a channel
// nobody closes, as a test whose Lock is never woken would.
func TestStuckChild(t *testing.T) {
	if os.Getenv(stuckEnv) != "1" {
		return // the parent's run: nothing to do
	}
	<-make(chan struct{})
}

// TestArmFailsAStuckBinary runs this binary again with a stuck test and a
// 4 s -timeout: Arm ends it at 3 s with exit status 1 and its message,
// naming the stuck test, before go test's own timeout panics.
func TestArmFailsAStuckBinary(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestStuckChild$", "-test.timeout=4s") //nolint:gosec // G204: this test binary itself
	cmd.Env = append(os.Environ(), stuckEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the stuck child must fail: %s", out)
	assert.Equal(t, 1, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "testguard: ")
	assert.Contains(t, string(out), "three quarters of its -timeout 4s")
	assert.Contains(t, string(out), "running: TestStuckChild")
	assert.NotContains(t, string(out), "test timed out", "go test's own timeout came first")
}

func TestRunningReadsTestNames(t *testing.T) {
	dump := "goroutine 7 [chan receive]:\n" +
		"github.com/redlock-go/redlock_test.TestFairServesWaitersInTurn.func2(0xc000)\n" +
		"\t/work/fair_test.go:90 +0x1\n" +
		"testing.tRunner(0xc0001, 0x2)\n" +
		"goroutine 1 [chan receive]:\n" +
		"main.TestMain(0xc0002)\n" +
		"github.com/redlock-go/redlock/drivers/redigo_test.TestSystem(0xc0003)\n"
	assert.Equal(t, []string{"TestFairServesWaitersInTurn", "TestSystem"}, testguard.Running(dump))
	assert.Equal(t, []string{"(no test function on any stack)"}, testguard.Running("goroutine 1 [running]:\nmain.main()\n"))
}

func TestContextEndsAfterLimit(t *testing.T) {
	ctx := testguard.Context(t)
	deadline, ok := ctx.Deadline()
	require.True(t, ok, "a guarded context has a deadline")
	assert.WithinDuration(t, time.Now().Add(testguard.Limit), deadline, testguard.Limit/2)
}
