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
	What  string  `json:"what"`
	Goal  string  `json:"goal"`
}

func report(out io.Writer, figs []figure) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tgoal\twhat")
	for _, f := range figs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, format(f.Value), f.Goal, f.What)
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, f := range figs {
		fmt.Fprintf(out, "%s: %s\n", f.Name, format(f.Value))
	}
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
