package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// readOnlyCalls are the commands --read-only refuses, with arguments that
// would do their harm (files named under dir).
func readOnlyCalls(dir string) [][]any {
	created := filepath.Join(dir, "created")
	return [][]any{
		{"Processes", "start", dir, "/bin/sh", []string{"sh", "-c", "touch " + created + ".proc"}, []string{}, false},
		{"ProcessesV1", "start", dir, "/bin/sh", []string{"sh", "-c", "touch " + created + ".proc1"}, []string{}, map[string]any{}},
		{"Terminals", "launch", "ansi", "UTF-8", []string{}},
		{"Terminals", "getContext", "T1"},
		{"Memory", "set", "P1", 0x1000, 1, 1, 0, "AA=="},
		{"Memory", "fill", "P1", 0x1000, 1, 1, 0, []int{0}},
		{"Registers", "set", "R1", "AA=="},
		{"Registers", "setm", []any{}},
		{"Expressions", "assign", "E1", "AA=="},
		{"Streams", "write", "S1", 1, "AA=="},
		{"FileSystem", "open", created + ".w", 0x02 | 0x08, map[string]any{}},
		{"FileSystem", "open", created + ".a", 0x01 | 0x04, map[string]any{}},
		{"FileSystem", "open", filepath.Join(dir, "existing"), 0x01 | 0x10, map[string]any{}},
		{"FileSystem", "write", "FS1", 0, "AA=="},
		{"FileSystem", "setstat", filepath.Join(dir, "existing"), map[string]any{"Permissions": 0o777}},
		{"FileSystem", "fsetstat", "FS1", map[string]any{}},
		{"FileSystem", "remove", filepath.Join(dir, "existing")},
		{"FileSystem", "rmdir", dir},
		{"FileSystem", "mkdir", created + ".d", map[string]any{}},
		{"FileSystem", "rename", filepath.Join(dir, "existing"), created + ".r"},
		{"FileSystem", "symlink", created + ".l", "/etc/passwd"},
		{"FileSystem", "copy", "/etc/passwd", created + ".c", false, false},
	}
}

// TestAgentReadOnly: with --read-only every command that writes is
// answered with an error report naming --read-only and does nothing;
// reading (files, processes, echo) still works. Without the flag the same
// mkdir does create the directory, so the test can fail.
func TestAgentReadOnly(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, 1, "--listen", "TCP:127.0.0.1:0", "--read-only")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, a.addrs[0], client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, call := range readOnlyCalls(dir) {
		svc, cmd := call[0].(string), call[1].(string)
		res, err := c.Call(ctx, svc, cmd, call[2:]...)
		if err != nil {
			t.Errorf("%s.%s: %v", svc, cmd, err)
			continue
		}
		rep := res.Args().Report()
		if rep == nil || rep.Code != tcf.CodeUnsupported || !strings.Contains(rep.Message(), "--read-only") {
			t.Errorf("%s.%s was not refused: %q", svc, cmd, res.Raw())
		}
	}
	time.Sleep(100 * time.Millisecond) // a started sh would have touched its file by now
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "existing" {
		t.Errorf("read-only agent changed %s: %v", dir, ents)
	}
	if b, _ := os.ReadFile(existing); string(b) != "kept" {
		t.Errorf("existing file now %q", b)
	}
	a.waitLog(t, "command refused")

	// Reads work.
	res, err := c.Call(ctx, "FileSystem", "open", existing, 0x01, map[string]any{})
	var h string
	var rerr error
	if err == nil {
		err = res.Decode(&rerr, &h)
	}
	if err != nil || rerr != nil {
		t.Fatalf("FileSystem.open for reading: %v %v", err, rerr)
	}
	res, err = c.Call(ctx, "FileSystem", "read", h, 0, 100)
	var data []byte
	var eof bool
	if err == nil {
		err = res.Decode(&data, &rerr, &eof)
	}
	if err != nil || rerr != nil || string(data) != "kept" {
		t.Errorf("FileSystem.read: %q %v %v", data, err, rerr)
	}
	for _, call := range [][]any{
		{"FileSystem", "close", h},
		{"Processes", "getChildren", "", false},
		{"SysMonitor", "getChildren", ""},
		{"Diagnostics", "echo", "x"},
	} {
		res, err := c.Call(ctx, call[0].(string), call[1].(string), call[2:]...)
		if err != nil {
			t.Errorf("%s.%s: %v", call[0], call[1], err)
			continue
		}
		if call[0] != "Diagnostics" {
			if rep := res.Args().Report(); rep != nil {
				t.Errorf("%s.%s: %v", call[0], call[1], rep)
			}
		}
	}

	// Without --read-only the same mkdir works.
	b := startAgent(t, 1, "--listen", "TCP:127.0.0.1:0")
	c2, err := client.Dial(ctx, b.addrs[0], client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	mk := filepath.Join(dir, "made")
	if res, err := c2.Call(ctx, "FileSystem", "mkdir", mk, map[string]any{}); err != nil || res.Args().Report() != nil {
		t.Fatalf("mkdir without --read-only: %v %q", err, res.Raw())
	}
	if st, err := os.Stat(mk); err != nil || !st.IsDir() {
		t.Errorf("mkdir without --read-only did not create %s: %v", mk, err)
	}
}
