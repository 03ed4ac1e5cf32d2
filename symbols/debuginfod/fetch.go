package debuginfod

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// sourceCacheName flattens a source path into one file name ('/' becomes
// '#', as elfutils does); very long paths are hashed so the name fits.
func sourceCacheName(p string) string {
	name := "source-" + strings.ReplaceAll(p, "/", "#")
	if len(name) > 200 {
		sum := sha256.Sum256([]byte(p))
		name = "source-" + hex.EncodeToString(sum[:])
	}
	return name
}

func (c *Client) fetch(ctx context.Context, buildID []byte, artifact, cacheName string, wantELF bool) (string, error) {
	idHex := hex.EncodeToString(buildID)
	fail := func(u string, err error) (string, error) {
		return "", &Error{BuildID: idHex, Artifact: artifact, URL: u, Err: err}
	}
	if c == nil || len(c.urls) == 0 {
		return fail("", ErrDisabled)
	}
	if len(buildID) == 0 || len(buildID) > maxBuildIDLen {
		return fail("", fmt.Errorf("build-id of %d bytes (want 1..%d)", len(buildID), maxBuildIDLen))
	}
	dir := filepath.Join(c.cacheDir, idHex)
	final := filepath.Join(dir, cacheName)
	negative := final + ".notfound"
	if st, err := os.Stat(final); err == nil && st.Mode().IsRegular() {
		return final, nil
	}
	if c.negTTL > 0 {
		if st, err := os.Stat(negative); err == nil && time.Since(st.ModTime()) < c.negTTL {
			return fail("", ErrNotFound)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("", fmt.Errorf("cache directory: %w", err))
	}
	var firstErr *Error
	for _, base := range c.urls {
		u := base + "/buildid/" + idHex + "/" + artifact
		err := c.download(ctx, u, dir, final, wantELF)
		if err == nil {
			os.Remove(negative)
			return final, nil
		}
		if ctx.Err() != nil {
			return fail(u, err)
		}
		if !errors.Is(err, ErrNotFound) && firstErr == nil {
			firstErr = &Error{BuildID: idHex, Artifact: artifact, URL: u, Err: err}
		}
	}
	// A transient failure on one server must not be remembered as "missing".
	if firstErr != nil {
		return "", firstErr
	}
	if c.negTTL > 0 {
		if f, err := os.Create(negative); err == nil {
			f.Close()
		}
	}
	return fail("", ErrNotFound)
}

// download GETs u and stores the body at final via a temporary file in dir.
func (c *Client) download(ctx context.Context, u, dir, final string, wantELF bool) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.maxTime > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, c.maxTime, fmt.Errorf("download took longer than %v", c.maxTime))
		defer stop()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "sonde-debuginfod")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("HTTP status %s", resp.Status)
	}
	if resp.ContentLength > c.maxSize {
		return fmt.Errorf("%w: %d bytes > %d", ErrTooLarge, resp.ContentLength, c.maxSize)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// A server that stops sending mid-body must not hold us forever: each
	// read re-arms a watchdog that cancels the request after c.stall.
	stalled := fmt.Errorf("server sent nothing for %v", c.stall)
	watchdog := time.AfterFunc(c.stall, func() { cancel(stalled) })
	defer watchdog.Stop()
	body := &progressReader{r: resp.Body, onRead: func() { watchdog.Reset(c.stall) }}
	n, err := io.Copy(tmp, io.LimitReader(body, c.maxSize+1))
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return fmt.Errorf("download: %w", err)
	}
	if n > c.maxSize {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, c.maxSize)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("download truncated: %d of %d bytes", n, resp.ContentLength)
	}
	if wantELF {
		var magic [4]byte
		if _, err := tmp.ReadAt(magic[:], 0); err != nil || string(magic[:]) != "\x7fELF" {
			return errors.New("server sent something that is not an ELF file")
		}
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	name := tmp.Name()
	tmp = nil
	if err := os.Chmod(name, 0o644); err != nil {
		os.Remove(name)
		return fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(name, final); err != nil {
		os.Remove(name)
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// progressReader calls onRead after every read that returned data.
type progressReader struct {
	r      io.Reader
	onRead func()
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.onRead()
	}
	return n, err
}
