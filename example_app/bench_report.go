package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// figure is one line of the report.
type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// CI95 is the bootstrap 95% interval of a median of per-round ratios,
	// or nil (null in the JSON) for a figure that has no rounds: a count,
	// a percentile of pooled latencies, a go test benchmark.
	CI95 *interval `json:"ci95"`
	What string    `json:"what"`
	Goal string    `json:"goal"`
}

func report(out io.Writer, figs []figure) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\t95% interval\tgoal\twhat")
	for _, f := range figs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Name, format(f.Value), f.CI95, f.Goal, f.What)
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, f := range figs {
		fmt.Fprintf(out, "%s: %s\n", f.Name, format(f.Value))
	}
}

// reportBoth prints the figures of the v1 line (v1) and of the v2 line
// (v2), measured in one run on one server, side by side.
func reportBoth(out io.Writer, v1, v2 []figure) {
	byName := map[string]figure{}
	for _, f := range v2 {
		byName[f.Name] = f
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tv1\tv1 95% interval\tv2\tv2 95% interval\tgoal")
	for _, f := range v1 {
		g, ok := byName[f.Name]
		v2v, v2ci := "-", "-"
		if ok {
			v2v, v2ci = format(g.Value), g.CI95.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, format(f.Value), f.CI95, v2v, v2ci, f.Goal)
	}
	tw.Flush()
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// String gives the interval as the report's column shows it, with the
// number of rounds it was drawn from; a figure without rounds says so.
func (iv *interval) String() string {
	if iv == nil {
		return "no rounds"
	}
	return fmt.Sprintf("%s–%s (%d rounds)", format(iv.Lo), format(iv.Hi), iv.Rounds)
}
