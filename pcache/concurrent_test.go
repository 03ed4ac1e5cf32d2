package pcache

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
)

const (
	writers    = 8
	writerRuns = 15
)

func writerData(worker, run int) []byte { return pattern(1000+worker*997+run*61, byte(worker*31+run)) }

// TestMain runs the body of a writer process when TestConcurrentProcesses
// started this test binary as one.
func TestMain(m *testing.M) {
	if dir := os.Getenv("PCACHE_TEST_DIR"); dir != "" {
		worker, _ := strconv.Atoi(os.Getenv("PCACHE_TEST_WORKER"))
		if err := writerProcess(dir, worker); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writerProcess stores its own client's section again and again and loads
// the shared file in between; a torn or damaged file, or a lost section,
// fails it.
func writerProcess(dir string, worker int) error {
	c := &Cache{Dir: dir, MaxBytes: 1 << 30}
	for run := 0; run < writerRuns; run++ {
		cl := newClient(fmt.Sprintf("w%d", worker), 1, map[string][]byte{"data": writerData(worker, run)})
		if err := c.Store("shared", testID, cl); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		f, err := c.Load("shared", testID)
		if err != nil {
			return fmt.Errorf("load after store: %w", err)
		}
		got, ok := f.Section(cl.name, "data")
		if !ok || string(got) != string(cl.secs["data"]) {
			f.Close()
			return fmt.Errorf("run %d: own section lost or stale", run)
		}
		f.Close()
	}
	return nil
}

func TestConcurrentProcesses(t *testing.T) {
	dir := t.TempDir() + "/pc"
	var wg sync.WaitGroup
	errs := make([]error, writers)
	outs := make([][]byte, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "PCACHE_TEST_DIR="+dir, "PCACHE_TEST_WORKER="+strconv.Itoa(i))
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	// Meanwhile this process reads: every load succeeds or finds no file yet.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	c := &Cache{Dir: dir}
	loads := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		f, err := c.Load("shared", testID)
		if err != nil {
			if r := ReasonOf(err); r != ReasonMissing {
				t.Fatalf("concurrent load: %v", err)
			}
			continue
		}
		loads++
		f.Close()
	}
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	f, err := c.Load("shared", testID)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 0; i < writers; i++ {
		got, ok := f.Section(fmt.Sprintf("w%d", i), "data")
		if !ok || string(got) != string(writerData(i, writerRuns-1)) {
			t.Errorf("writer %d's last section missing or stale", i)
		}
	}
	t.Logf("%d concurrent loads", loads)
}
