package main

import (
	"reflect"
	"testing"
)

func TestCommandLineShowsGoRun(t *testing.T) {
	got := commandLine([]string{"/root/.cache/go-build/a9/a9a2-d/redlock-bench", "--pin"})
	if want := []string{"go", "run", "./cmd/redlock-bench", "--pin"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := commandLine([]string{"./redlock-bench"}); !reflect.DeepEqual(got, []string{"./redlock-bench"}) {
		t.Fatalf("a built binary is shown as is: %q", got)
	}
}
