// Package debuginfodtest runs the real elfutils debuginfod server for tests:
// on 127.0.0.1, on a free port, indexing a directory the test fills.
package debuginfodtest

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Server is a running debuginfod.
type Server struct {
	URL  string
	stop func()
}

// Start runs `debuginfod -F dir` and waits until it serves the debuginfo of
// readyBuildID (so the scan of dir is complete). It skips the test when the
// debuginfod binary is not installed, and stops the server at cleanup.
func Start(t testing.TB, dir string, readyBuildID []byte) *Server {
	t.Helper()
	bin, err := exec.LookPath("debuginfod")
	if err != nil {
		t.Skip("debuginfod server not installed (elfutils' debuginfod package): tests against it skipped")
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := start(t, bin, dir, readyBuildID)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatal(lastErr)
	return nil
}

func start(t testing.TB, bin, dir string, readyBuildID []byte) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	db := filepath.Join(t.TempDir(), "debuginfod.sqlite")
	var log bytes.Buffer
	cmd := exec.Command(bin, "-F", "-p", fmt.Sprint(port), "-d", db, "-t", "1", dir)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start debuginfod: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := sync.OnceFunc(func() {
		cmd.Process.Kill()
		<-exited
	})
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), stop: stop}
	ready := s.URL + "/buildid/" + hex.EncodeToString(readyBuildID) + "/debuginfo"
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			stop()
			return nil, fmt.Errorf("debuginfod exited early (%v):\n%s", err, log.String())
		default:
		}
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return s, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return nil, fmt.Errorf("debuginfod did not index %s within 60s:\n%s", dir, log.String())
}

// Stop kills the server early (to show that later answers come from the
// client's cache).
func (s *Server) Stop() { s.stop() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
