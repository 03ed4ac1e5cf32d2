package tcf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// TrustStore is the set of peers a TLS end accepts: certificate
// authorities whose chains verify, and certificates trusted as they are
// (pinned). The C TCF agent and Eclipse's TCF client trust exactly the
// certificates (*.cert) found in their SSL directory (/etc/tcf/ssl, or
// ~/.tcf/ssl): each end's self-signed local.cert copied into the other's
// directory. A self-signed certificate given here is both a CA (for
// certificates it signed) and pinned, so either scheme works.
type TrustStore struct {
	pool   *x509.CertPool
	pinned [][]byte // DER
	files  []string
}

// LoadTrust reads PEM certificates from path: one file (a bundle), or a
// directory whose *.cert, *.crt and *.pem files are read (the C agent's
// scheme: every *.cert in its ssl directory is a trusted peer).
func LoadTrust(path string) (*TrustStore, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if st.IsDir() {
		files = nil
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			switch filepath.Ext(e.Name()) {
			case ".cert", ".crt", ".pem":
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	t := &TrustStore{pool: x509.NewCertPool()}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		n := 0
		for {
			var blk *pem.Block
			blk, data = pem.Decode(data)
			if blk == nil {
				break
			}
			if blk.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: certificate %d: %w", f, n+1, err)
			}
			t.pool.AddCert(c)
			t.pinned = append(t.pinned, c.Raw)
			n++
		}
		if n > 0 {
			t.files = append(t.files, f)
		}
	}
	if len(t.pinned) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate found", path)
	}
	return t, nil
}

// verify accepts a peer whose leaf certificate is pinned, or whose chain
// verifies to one of the store's certificates for usage.
func (t *TrustStore) verify(rawCerts [][]byte, usage x509.ExtKeyUsage, dnsName string) error {
	if len(rawCerts) == 0 {
		return errors.New("tls: peer sent no certificate")
	}
	if slices.ContainsFunc(t.pinned, func(p []byte) bool { return bytes.Equal(p, rawCerts[0]) }) {
		return nil
	}
	certs := make([]*x509.Certificate, 0, len(rawCerts))
	for _, r := range rawCerts {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("tls: peer certificate: %w", err)
		}
		certs = append(certs, c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: t.pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: dnsName})
	if err != nil {
		return fmt.Errorf("tls: peer certificate (%s) not trusted: %w", certs[0].Subject, err)
	}
	return nil
}

// ServerTLS is the agent's TLS configuration: TLS 1.3 only, its
// certificate and key from certFile and keyFile (PEM; PKCS#1, PKCS#8 or
// EC keys, so the C agent's local.cert/local.priv work), and a client
// certificate required and verified against clientCA (see LoadTrust).
func ServerTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	trust, err := LoadTrust(clientCA)
	if err != nil {
		return nil, fmt.Errorf("TLS client CA: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		// The certificate is required here and verified by the trust
		// store (chain or pin) rather than by crypto/tls, which knows
		// chains only.
		ClientAuth: tls.RequireAnyClientCert,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return trust.verify(raw, x509.ExtKeyUsageClientAuth, "")
		},
	}, nil
}

// ClientTLS is a client's TLS configuration for an agent at host: its own
// certificate (certFile, keyFile: the agent requires one) and the agent's
// trusted through serverCA (see LoadTrust). A pinned agent certificate is
// accepted whatever its names (the TCF scheme); one verified through a CA
// must name host.
func ClientTLS(certFile, keyFile, serverCA, host string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	trust, err := LoadTrust(serverCA)
	if err != nil {
		return nil, fmt.Errorf("TLS server CA: %w", err)
	}
	host = strings.Trim(host, "[]")
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		// Verified below (pin or chain with host), not by crypto/tls.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return trust.verify(raw, x509.ExtKeyUsageServerAuth, host)
		},
	}, nil
}
