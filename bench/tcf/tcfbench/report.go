package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// report prints figures, for people (a table) or for scripts (-tsv).
type report struct {
	w   io.Writer // figures and the table
	log io.Writer // remarks in -tsv mode
	tsv bool
}

func (r *report) header(addr string, s *session) {
	svcs := s.c.Services()
	if r.tsv {
		fmt.Fprintf(r.w, "agent\t%s\t\t%d services\n", addr, len(svcs))
		return
	}
	fmt.Fprintf(r.w, "agent %s, %d services in its Hello: %s\n", addr, len(svcs), strings.Join(svcs, " "))
	fmt.Fprintf(r.w, "%-34s %12s  %-24s %s\n", "scenario", "median", "runs (min..max)", "CPU per op, agent / client (medians)")
}

// figure is one measured quantity over several runs.
type figure struct {
	key    string    // stable name for scripts, e.g. "echo"
	label  string    // what was measured, for people
	unit   string    // "/s", "MiB/s", "ms", "µs"
	vals   []float64 // one per run
	cpu    []float64 // agent CPU µs per operation, one per run (empty: not measured)
	client []float64 // this client's CPU µs per operation, one per run
	note   string
}

func (r *report) figure(f figure) {
	med := median(f.vals)
	if r.tsv {
		fmt.Fprintf(r.w, "%s\t%s\t%s\t%s\n", f.key, num(med), f.unit, f.note)
		if len(f.cpu) > 0 {
			fmt.Fprintf(r.w, "%s.agentcpu\t%s\tµs\tagent CPU per operation\n", f.key, num(median(f.cpu)))
		}
		if len(f.client) > 0 {
			fmt.Fprintf(r.w, "%s.clientcpu\t%s\tµs\tclient CPU per operation\n", f.key, num(median(f.client)))
		}
		return
	}
	spread := fmt.Sprintf("%s..%s", human(slices.Min(f.vals)), human(slices.Max(f.vals)))
	cpu := "-"
	if len(f.cpu) > 0 {
		cpu = human(median(f.cpu))
	}
	if len(f.client) > 0 {
		cpu += " / " + human(median(f.client)) + " µs"
	} else if len(f.cpu) > 0 {
		cpu += " µs"
	} else {
		cpu = ""
	}
	line := fmt.Sprintf("%-34s %12s  %-24s %s", f.label, human(med)+" "+f.unit, spread, cpu)
	if f.note != "" {
		line += "  (" + f.note + ")"
	}
	fmt.Fprintln(r.w, strings.TrimRight(line, " "))
}

func (r *report) na(key, reason string) {
	reason = strings.ReplaceAll(reason, "\n", " ")
	if r.tsv {
		fmt.Fprintf(r.w, "%s\tn/a\t\t%s\n", key, reason)
		return
	}
	fmt.Fprintf(r.w, "%-34s %12s  %s\n", key, "n/a", reason)
}

// info prints a remark about the run (to stderr in -tsv mode).
func (r *report) info(format string, a ...any) {
	if r.tsv {
		fmt.Fprintf(r.log, "tcfbench: "+format+"\n", a...)
		return
	}
	fmt.Fprintf(r.w, "  "+format+"\n", a...)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// num is v for scripts: plain decimal, about four significant digits.
func num(v float64) string {
	p := 3
	switch {
	case v >= 1000:
		p = 0
	case v >= 100:
		p = 1
	case v >= 10:
		p = 2
	}
	return strconv.FormatFloat(v, 'f', p, 64)
}

// human is v with three significant digits and a k/M suffix.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', prec(v/1e6), 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', prec(v/1e3), 64) + "k"
	default:
		return strconv.FormatFloat(v, 'f', prec(v), 64)
	}
}

func prec(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	case v >= 1:
		return 2
	default:
		return 3
	}
}
