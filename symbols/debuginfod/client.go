// Package debuginfod is a client for debuginfod servers: given a build-id it
// downloads a binary's separate debug file, its executable, or one of its
// source files over HTTP, and keeps them in a local cache directory.
//
// It speaks the standard protocol (GET /buildid/<hex>/debuginfo,
// /buildid/<hex>/executable, /buildid/<hex>/source/<absolute path>) and reads
// the usual environment variables: DEBUGINFOD_URLS (space-separated server
// list), DEBUGINFOD_TIMEOUT and DEBUGINFOD_MAXTIME (seconds) and
// DEBUGINFOD_MAXSIZE (bytes). Servers are asked one after the other, in the
// order given. elfutils' own cache (DEBUGINFOD_CACHE_PATH) is not shared.
//
// The cache is sonde's own ($XDG_CACHE_HOME/sonde/debuginfod, or
// ~/.cache/sonde/debuginfod): <cache>/<build-id hex>/<artifact>. Files appear
// there atomically (written under a temporary name, then renamed), so a
// crashed or concurrent download never leaves a half file that a later run
// would trust. A "not found on any server" answer is remembered for
// NegativeTTL so a missing build-id does not cost a network round trip per
// lookup. The cache is never pruned by this package.
package debuginfod

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults, chosen like elfutils' client where it has one.
const (
	DefaultTimeout     = 90 * time.Second // elfutils' DEBUGINFOD_TIMEOUT default
	DefaultNegativeTTL = 10 * time.Minute // elfutils' cache_miss_s default
	DefaultMaxSize     = 4 << 30          // no debug file we know of is larger
	maxBuildIDLen      = 64
)

// Options configure a Client. Zero fields take the defaults above.
type Options struct {
	// URLs are the server base URLs, tried in order (e.g.
	// "https://debuginfod.debian.net").
	URLs []string
	// CacheDir holds downloaded files; default $XDG_CACHE_HOME/sonde/debuginfod
	// or ~/.cache/sonde/debuginfod.
	CacheDir string
	// Timeout bounds connecting to a server, waiting for its response
	// headers, and any pause of the body download (a server that stops
	// sending for this long is abandoned), like elfutils' DEBUGINFOD_TIMEOUT.
	Timeout time.Duration
	// MaxTime bounds one whole download (0: no bound besides Timeout),
	// like elfutils' DEBUGINFOD_MAXTIME.
	MaxTime time.Duration
	// MaxSize is the largest file accepted (bytes).
	MaxSize int64
	// NegativeTTL is how long "no server has it" is remembered; < 0 disables
	// negative caching.
	NegativeTTL time.Duration
	// HTTPClient replaces the default client (its Timeout is left alone).
	HTTPClient *http.Client
}

// Client downloads and caches debuginfod artifacts. It is safe for
// concurrent use. A nil *Client is valid and finds nothing (ErrDisabled).
type Client struct {
	urls     []string
	cacheDir string
	maxSize  int64
	negTTL   time.Duration
	stall    time.Duration
	maxTime  time.Duration
	http     *http.Client
}

var (
	// ErrNotFound: no server has the artifact (possibly remembered from an
	// earlier query, see Options.NegativeTTL).
	ErrNotFound = errors.New("not found on any debuginfod server")
	// ErrDisabled: the client is nil or has no server URLs.
	ErrDisabled = errors.New("debuginfod is not configured (DEBUGINFOD_URLS is empty)")
	// ErrTooLarge: the server's file exceeds Options.MaxSize.
	ErrTooLarge = errors.New("file exceeds the size limit")
)

// Error is returned for every failed request; errors.Is(err, ErrNotFound)
// tells "nobody has it" apart from network or server failures.
type Error struct {
	BuildID  string // hex
	Artifact string // "debuginfo", "executable" or "source/<path>"
	URL      string // the request URL that failed, "" when no server was asked
	Err      error
}

func (e *Error) Error() string {
	if e.URL != "" {
		return fmt.Sprintf("debuginfod: %s %s from %s: %v", e.Artifact, e.BuildID, e.URL, e.Err)
	}
	return fmt.Sprintf("debuginfod: %s %s: %v", e.Artifact, e.BuildID, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns a client with explicit options. With no URLs every request
// fails with ErrDisabled.
func New(opts Options) (*Client, error) {
	c := &Client{cacheDir: opts.CacheDir, maxSize: opts.MaxSize, negTTL: opts.NegativeTTL,
		stall: opts.Timeout, maxTime: opts.MaxTime, http: opts.HTTPClient}
	if c.stall <= 0 {
		c.stall = DefaultTimeout
	}
	for _, u := range opts.URLs {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, fmt.Errorf("debuginfod: server URL %q: want http:// or https://", u)
		}
		c.urls = append(c.urls, u)
	}
	if c.cacheDir == "" {
		dir, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		c.cacheDir = dir
	}
	if c.maxSize <= 0 {
		c.maxSize = DefaultMaxSize
	}
	if c.negTTL == 0 {
		c.negTTL = DefaultNegativeTTL
	}
	if c.http == nil {
		timeout := opts.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		c.http = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: timeout}).DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   4,
		}}
	}
	return c, nil
}

// FromEnv configures a client from DEBUGINFOD_URLS, DEBUGINFOD_TIMEOUT and
// DEBUGINFOD_MAXSIZE and DEBUGINFOD_MAXTIME. It returns nil (and no error) when DEBUGINFOD_URLS is
// unset or empty, which callers treat as "debuginfod off".
func FromEnv() (*Client, error) {
	urls := strings.Fields(os.Getenv("DEBUGINFOD_URLS"))
	if len(urls) == 0 {
		return nil, nil
	}
	opts := Options{URLs: urls}
	if v := os.Getenv("DEBUGINFOD_TIMEOUT"); v != "" {
		secs, err := strconv.Atoi(v)
		if err != nil || secs <= 0 {
			return nil, fmt.Errorf("debuginfod: DEBUGINFOD_TIMEOUT=%q: want a positive number of seconds", v)
		}
		opts.Timeout = time.Duration(secs) * time.Second
	}
	if v := os.Getenv("DEBUGINFOD_MAXSIZE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("debuginfod: DEBUGINFOD_MAXSIZE=%q: want a positive number of bytes", v)
		}
		opts.MaxSize = n
	}
	if v := os.Getenv("DEBUGINFOD_MAXTIME"); v != "" {
		secs, err := strconv.Atoi(v)
		if err != nil || secs <= 0 {
			return nil, fmt.Errorf("debuginfod: DEBUGINFOD_MAXTIME=%q: want a positive number of seconds", v)
		}
		opts.MaxTime = time.Duration(secs) * time.Second
	}
	return New(opts)
}

// DefaultCacheDir is $XDG_CACHE_HOME/sonde/debuginfod, or
// ~/.cache/sonde/debuginfod when XDG_CACHE_HOME is unset.
func DefaultCacheDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "sonde", "debuginfod"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("debuginfod: no cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", "sonde", "debuginfod"), nil
}

// URLs returns the configured servers (for messages to the user).
func (c *Client) URLs() []string {
	if c == nil {
		return nil
	}
	return append([]string(nil), c.urls...)
}

// CacheDir returns the cache directory.
func (c *Client) CacheDir() string {
	if c == nil {
		return ""
	}
	return c.cacheDir
}

// DebugInfo returns the path of the cached separate debug file for buildID,
// downloading it when needed.
func (c *Client) DebugInfo(ctx context.Context, buildID []byte) (string, error) {
	return c.fetch(ctx, buildID, "debuginfo", "debuginfo", true)
}

// Executable returns the path of the cached executable (or shared library)
// with buildID, downloading it when needed.
func (c *Client) Executable(ctx context.Context, buildID []byte) (string, error) {
	return c.fetch(ctx, buildID, "executable", "executable", true)
}

// Source returns the path of a cached copy of the source file srcPath (an
// absolute path as recorded in the DWARF of the binary with buildID).
func (c *Client) Source(ctx context.Context, buildID []byte, srcPath string) (string, error) {
	clean := path.Clean(srcPath)
	if !path.IsAbs(clean) {
		return "", &Error{BuildID: hex.EncodeToString(buildID), Artifact: "source/" + srcPath,
			Err: errors.New("source path must be absolute (join DW_AT_comp_dir first)")}
	}
	var esc strings.Builder
	for _, seg := range strings.Split(clean[1:], "/") {
		esc.WriteString("/")
		esc.WriteString(url.PathEscape(seg))
	}
	return c.fetch(ctx, buildID, "source"+esc.String(), sourceCacheName(clean), false)
}

// Evict removes a cached artifact, e.g. after the caller found that a
// downloaded debug file does not match the build-id it asked for.
func (c *Client) Evict(buildID []byte, artifact string) error {
	if c == nil {
		return nil
	}
	name := artifact
	if strings.HasPrefix(artifact, "source/") {
		name = sourceCacheName(path.Clean("/" + strings.TrimPrefix(artifact, "source/")))
	} else if artifact != "debuginfo" && artifact != "executable" {
		return fmt.Errorf("debuginfod: unknown artifact %q", artifact)
	}
	err := os.Remove(filepath.Join(c.cacheDir, hex.EncodeToString(buildID), name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
