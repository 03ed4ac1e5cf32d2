package client_test

import (
	"context"
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
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// serveOn runs a server with Diagnostics and the agent's access policy on l.
func serveOn(t *testing.T, l net.Listener) *tcf.Server {
	t.Helper()
	srv := tcf.NewServer(tcf.Config{Admit: (&tcf.AccessPolicy{UID: os.Geteuid()}).Admit})
	tcf.RegisterDiagnostics(srv)
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}

func echoOK(t *testing.T, addr string, opts client.Options) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	res, err := c.Call(ctx, "Diagnostics", "echo", "hi")
	var s string
	if err != nil || res.Decode(&s) != nil || s != "hi" {
		t.Fatalf("echo over %s: %q %v", addr, s, err)
	}
}

// TestDialUNIX: the client speaks the UNIX transport, and the server
// knows the peer's uid from SO_PEERCRED.
func TestDialUNIX(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveOn(t, l)
	echoOK(t, "UNIX:"+path, client.Options{})
	srv.OnChannelOpen(func(ch *tcf.Channel) {
		if ch.Peer().UID != os.Geteuid() {
			t.Errorf("peer %+v, want uid %d", ch.Peer(), os.Geteuid())
		}
	})
	echoOK(t, "unix:"+path, client.Options{})
}

// writeCert writes a certificate (self-signed when parent is nil) and its
// key as PEM files dir/name.pem and dir/name.key.
func writeCert(t *testing.T, dir, name string, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	c, _ := x509.ParseCertificate(der)
	return c, key
}

// makeTLSFiles writes ca, server (for 127.0.0.1) and client certificates
// and keys into a new directory and returns a function naming its files.
func makeTLSFiles(t *testing.T) func(string) string {
	dir := t.TempDir()
	now := time.Now()
	ca, caKey := writeCert(t, dir, "ca", &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	writeCert(t, dir, "server", &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "server"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca, caKey)
	writeCert(t, dir, "client", &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "client"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca, caKey)
	return func(n string) string { return filepath.Join(dir, n) }
}

// TestDialSSL: the client speaks TLS 1.3 to a server that requires a
// client certificate; without one it is refused.
func TestDialSSL(t *testing.T) {
	f := makeTLSFiles(t)
	sconf, err := tcf.ServerTLS(f("server.pem"), f("server.key"), f("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, tls.NewListener(l, sconf))
	addr := "SSL:" + l.Addr().String()
	cconf, err := tcf.ClientTLS(f("client.pem"), f("client.key"), f("ca.pem"), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	echoOK(t, addr, client.Options{TLS: cconf})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Dial(ctx, addr, client.Options{}); err == nil {
		t.Error("SSL without Options.TLS dialed")
	}
	noCert := cconf.Clone()
	noCert.Certificates = nil
	if c, err := client.Dial(ctx, addr, client.Options{TLS: noCert}); err == nil {
		c.Close()
		t.Error("a client without a certificate was served")
	}
	// The server's certificate must name the host when verified through the CA.
	wrongHost, _ := tcf.ClientTLS(f("client.pem"), f("client.key"), f("ca.pem"), "example.org")
	if c, err := client.Dial(ctx, addr, client.Options{TLS: wrongHost}); err == nil {
		c.Close()
		t.Error("server certificate accepted for the wrong host")
	}
}

// TestSilentTLSPeersDoNotLockOut: connections that never complete their
// TLS handshake hold at most tcf.MaxHandshakesPerAddr admission slots per
// address, so a client from another address is still served.
func TestSilentTLSPeersDoNotLockOut(t *testing.T) {
	f := makeTLSFiles(t)
	sconf, err := tcf.ServerTLS(f("server.pem"), f("server.key"), f("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := tcf.NewServer(tcf.Config{Admit: (&tcf.AccessPolicy{UID: os.Geteuid()}).Admit,
		MaxChannels: 20, HelloTimeout: time.Minute})
	tcf.RegisterDiagnostics(srv)
	go srv.Serve(tls.NewListener(l, sconf))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	for range 40 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	cconf, err := tcf.ClientTLS(f("client.pem"), f("client.key"), f("ca.pem"), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}, Config: cconf}
	conn, err := d.DialContext(ctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("TLS client from another address while 40 silent connections are open: %v", err)
	}
	c := client.New(conn, client.Options{})
	defer c.Close()
	if err := c.WaitHello(ctx); err != nil {
		t.Fatalf("no Hello for the client from another address: %v", err)
	}
	if _, err := c.Call(ctx, "Diagnostics", "echo", "x"); err != nil {
		t.Fatal(err)
	}
}
