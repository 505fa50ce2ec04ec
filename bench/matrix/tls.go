package matrix

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientTLS returns a client TLS configuration for external servers that
// trusts the PEM certificates in caFile, or the system roots if caFile is
// empty.
func ClientTLS(caFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(caFile) //nolint:gosec // G304: the CA file the user named with --tls-ca
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates", caFile)
	}
	c.RootCAs = pool
	return c, nil
}
