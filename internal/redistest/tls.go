package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// pki is one CA and one server certificate for 127.0.0.1, generated once
// per test binary: every TLS server presents the same certificate, so one
// client configuration trusts them all.
type pki struct {
	caPEM, certPEM, keyPEM []byte
	pool                   *x509.CertPool
}

var (
	pkiOnce sync.Once
	pkiVal  *pki
	errPKI  error
)

func getPKI() (*pki, error) {
	pkiOnce.Do(func() { pkiVal, errPKI = newPKI() })
	return pkiVal, errPKI
}

func newPKI() (*pki, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	p := &pki{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		pool:    x509.NewCertPool(),
	}
	p.pool.AddCert(ca)
	return p, nil
}

// writeTLSFiles writes ca.crt, server.crt and server.key into dir.
func writeTLSFiles(dir string) error {
	p, err := getPKI()
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"ca.crt": p.caPEM, "server.crt": p.certPEM, "server.key": p.keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// clientTLS trusts the generated CA. It is only called once a TLS server
// exists, so the PKI has been generated without error.
func clientTLS() *tls.Config {
	p, _ := getPKI()
	return &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// ServerTLS is the server side of the PKI that ClientTLS trusts, for the
// in-process servers of package embedded with Options.TLS.
func ServerTLS() (*tls.Config, error) {
	p, err := getPKI()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(p.certPEM, p.keyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
