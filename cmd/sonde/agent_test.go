package main

import "testing"

func TestParseListenAddr(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		loopback bool
	}{
		{"TCP:127.0.0.1:1534", "127.0.0.1:1534", true},
		{"tcp:localhost:0", "localhost:0", true},
		{"127.0.0.1:99", "127.0.0.1:99", true},
		{"TCP:[::1]:1534", "[::1]:1534", true},
		{"[::1]:1534", "[::1]:1534", true},
		{"TCP::1534", ":1534", false},
		{"TCP:0.0.0.0:1534", "0.0.0.0:1534", false},
		{"TCP:192.168.1.2:1534", "192.168.1.2:1534", false},
		{"TCP:example.org:1534", "example.org:1534", false},
	} {
		got, err := parseListenAddr(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseListenAddr(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		if lb := isLoopback(got); lb != tc.loopback {
			t.Errorf("isLoopback(%q) = %v, want %v", got, lb, tc.loopback)
		}
	}
	for _, bad := range []string{"foo", "UDP:1.2.3.4:5", "PIPE:x:y", "TCP:1.2.3.4", "1.2.3.4:"} {
		if got, err := parseListenAddr(bad); err == nil {
			t.Errorf("parseListenAddr(%q) = %q, want an error", bad, got)
		}
	}
}
