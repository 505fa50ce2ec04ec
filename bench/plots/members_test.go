package plots

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteMembers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "members.png")
	pts := []MembersPoint{
		{Label: "standalone", Nodes: 3, P50Us: 500, P99Us: 900},
		{Label: "cluster+WAIT", Nodes: 3, P50Us: 1500, P99Us: 4000},
		{Label: "standalone", Nodes: 5, P50Us: 700, P99Us: 1200},
	}
	if err := WriteMembers(file, pts); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
		t.Fatalf("no plot written: %v", err)
	}
	if err := WriteMembers(file, nil); err == nil {
		t.Error("WriteMembers of no cell: nil error")
	}
}
