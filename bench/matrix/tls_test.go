package matrix

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClientTLS(t *testing.T) {
	c, err := ClientTLS("")
	if err != nil || c.RootCAs != nil {
		t.Fatalf("empty CA file: %v, %v (want system roots)", c, err)
	}
	bad := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ClientTLS(bad); err == nil {
		t.Fatal("a file without PEM certificates was accepted")
	}
	if _, err := ClientTLS(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}
