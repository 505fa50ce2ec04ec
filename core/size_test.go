package core

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestAcquisitionFitsTinyGosStack: TinyGo keeps an object on the stack
// only up to 1 KiB; a larger Acquisition goes to the heap, and the
// allocation-free path allocates (TestZeroAllocs under TinyGo). Keep the
// small fields together, after the large ones.
func TestAcquisitionFitsTinyGosStack(t *testing.T) {
	size := unsafe.Sizeof(Acquisition{})
	t.Logf("%s: Acquisition %d bytes, Round %d, Command %d", runtime.Compiler, size, unsafe.Sizeof(Round{}), unsafe.Sizeof(Command{}))
	if runtime.Compiler == "tinygo" && size > 1024 {
		t.Errorf("Acquisition is %d bytes: TinyGo puts it on the heap", size)
	}
}
