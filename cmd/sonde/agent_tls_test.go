package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// opensslIn runs openssl in dir (the README's certificate commands).
func opensslIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("openssl", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl %v: %v\n%s", args, err, out)
	}
}

func requireOpenSSL(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed (scripts/setup installs it)")
	}
}

// makeCAFiles makes, as the README says: a CA, the agent's certificate
// (for 127.0.0.1 and localhost) and a client certificate signed by it, and
// a client certificate of another CA.
func makeCAFiles(t *testing.T, dir string) {
	ec := []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"}
	opensslIn(t, dir, append(append([]string{"req", "-x509"}, ec...), "-days", "365", "-subj", "/CN=sonde test CA",
		"-keyout", "ca.key", "-out", "ca.pem")...)
	os.WriteFile(filepath.Join(dir, "agent.ext"), []byte("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "client.ext"), []byte("extendedKeyUsage=clientAuth\n"), 0o644)
	for _, who := range []string{"agent", "client"} {
		opensslIn(t, dir, append(append([]string{"req"}, ec...), "-subj", "/CN="+who, "-keyout", who+".key", "-out", who+".csr")...)
		opensslIn(t, dir, "x509", "-req", "-in", who+".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
			"-days", "365", "-extfile", who+".ext", "-out", who+".pem")
	}
	// A stranger: its own CA.
	opensslIn(t, dir, append(append([]string{"req", "-x509"}, ec...), "-days", "365", "-subj", "/CN=stranger",
		"-keyout", "stranger.key", "-out", "stranger.pem")...)
}

func dialTLS(t *testing.T, addr, cert, key, ca string) error {
	t.Helper()
	conf, err := tcf.ClientTLS(cert, key, ca, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return echo(t, addr, client.Options{TLS: conf})
}

// TestAgentTLS: --listen SSL: serves TLS 1.3 clients with a certificate
// the --tls-client-ca trusts, and no one else (no certificate, another
// CA's, TLS 1.2).
func TestAgentTLS(t *testing.T) {
	requireOpenSSL(t)
	dir := t.TempDir()
	makeCAFiles(t, dir)
	f := func(n string) string { return filepath.Join(dir, n) }
	a := startAgent(t, 1, "--listen", "SSL:127.0.0.1:0", "--tls-cert", f("agent.pem"), "--tls-key", f("agent.key"),
		"--tls-client-ca", f("ca.pem"))
	addr := a.addrs[0]
	if !strings.HasPrefix(addr, "SSL:127.0.0.1:") {
		t.Fatalf("address %q", addr)
	}
	if err := dialTLS(t, addr, f("client.pem"), f("client.key"), f("ca.pem")); err != nil {
		t.Fatalf("trusted client: %v\n%s", err, a.log.String())
	}
	if err := dialTLS(t, addr, f("stranger.pem"), f("stranger.key"), f("ca.pem")); err == nil {
		t.Error("a client certificate of another CA was served")
	}
	a.waitLog(t, "refusing connection", "TLS handshake", "not trusted")
	// No client certificate at all, and TLS 1.2: openssl as the client.
	for _, args := range [][]string{{"-tls1_3"}, {"-tls1_2", "-cert", f("client.pem"), "-key", f("client.key")}} {
		out := sClient(t, strings.TrimPrefix(addr, "SSL:"), f("ca.pem"), args...)
		if strings.Contains(out, "Locator") {
			t.Errorf("openssl s_client %v was served:\n%s", args, out)
		}
	}
	// The plain TCP client of the same port gets nothing either.
	if err := echo(t, strings.TrimPrefix(addr, "SSL:"), client.Options{}); err == nil {
		t.Error("plain TCP on the SSL port was served")
	}
}

// sClient connects with openssl s_client, sends a Hello and returns what
// it printed (the agent's Hello when served).
func sClient(t *testing.T, hostPort, ca string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "openssl", append([]string{"s_client", "-connect", hostPort, "-CAfile", ca,
		"-quiet", "-no_ign_eof", "-verify_return_error"}, args...)...)
	cmd.Stdin = &slowStdin{data: []byte("E\x00Locator\x00Hello\x00[]\x00\x03\x01")}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// slowStdin gives its data, waits for the reply to arrive, then ends (so
// s_client exits).
type slowStdin struct {
	data []byte
	done bool
}

func (s *slowStdin) Read(p []byte) (int, error) {
	if len(s.data) > 0 {
		n := copy(p, s.data)
		s.data = s.data[n:]
		return n, nil
	}
	if !s.done {
		s.done = true
		time.Sleep(time.Second)
	}
	return 0, os.ErrClosed
}

// TestAgentTLSLikeTheCAgent: the C TCF agent's and Eclipse's scheme —
// each end has a self-signed RSA local.cert and local.priv, and trusts the
// certificates (*.cert) in its ssl directory — works: the agent trusts a
// directory, an OpenSSL client with such a certificate is served, and the
// Go client pins the agent's self-signed certificate.
func TestAgentTLSLikeTheCAgent(t *testing.T) {
	requireOpenSSL(t)
	dir := t.TempDir()
	agentDir, peerDir := filepath.Join(dir, "agent", "ssl"), filepath.Join(dir, "peer", "ssl")
	for _, d := range []string{agentDir, peerDir} {
		os.MkdirAll(d, 0o700)
		opensslIn(t, d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "365", "-subj", "/CN=TCF",
			"-keyout", "local.priv", "-out", "local.cert")
	}
	peerCert, _ := os.ReadFile(filepath.Join(peerDir, "local.cert"))
	agentCert, _ := os.ReadFile(filepath.Join(agentDir, "local.cert"))
	os.WriteFile(filepath.Join(agentDir, "peer.cert"), peerCert, 0o644)
	os.WriteFile(filepath.Join(peerDir, "agent.cert"), agentCert, 0o644)
	a := startAgent(t, 1, "--listen", "SSL:127.0.0.1:0", "--tls-cert", filepath.Join(agentDir, "local.cert"),
		"--tls-key", filepath.Join(agentDir, "local.priv"), "--tls-client-ca", agentDir)
	hostPort := strings.TrimPrefix(a.addrs[0], "SSL:")
	out := sClient(t, hostPort, filepath.Join(peerDir, "agent.cert"), "-tls1_3",
		"-cert", filepath.Join(peerDir, "local.cert"), "-key", filepath.Join(peerDir, "local.priv"))
	if !strings.Contains(out, "Locator") || !strings.Contains(out, "Hello") {
		t.Errorf("OpenSSL peer with a pinned self-signed certificate not served:\n%s\n%s", out, a.log.String())
	}
	if err := dialTLS(t, a.addrs[0], filepath.Join(peerDir, "local.cert"), filepath.Join(peerDir, "local.priv"), peerDir); err != nil {
		t.Errorf("Go client pinning the agent's certificate: %v", err)
	}
	// A self-signed certificate not in the directory is refused.
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o700)
	opensslIn(t, other, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "365", "-subj", "/CN=TCF",
		"-keyout", "local.priv", "-out", "local.cert")
	if err := dialTLS(t, a.addrs[0], filepath.Join(other, "local.cert"), filepath.Join(other, "local.priv"), peerDir); err == nil {
		t.Error("an unknown self-signed certificate was served")
	}
}
