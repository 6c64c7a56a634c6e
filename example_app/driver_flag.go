package main

import (
	"errors"
	"fmt"
	"strings"
)

// takeDriver removes -driver (v1, v2, or both for the bench) from args,
// wherever it is, and returns its value, by default the line this
// example_app is of.
func takeDriver(args []string) (string, []string, error) {
	driver := line
	var rest []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(args[i], "-")
		switch {
		case a == "-driver" || a == "driver":
			if i+1 >= len(args) {
				return "", nil, errors.New("-driver needs a value: v1 or v2 (both, for the bench)")
			}
			driver = args[i+1]
			i++
		case strings.HasPrefix(a, "driver=") || strings.HasPrefix(a, "-driver="):
			driver = a[strings.Index(a, "=")+1:]
		default:
			rest = append(rest, args[i])
		}
	}
	switch driver {
	case "v1", "v2", "both":
		return driver, rest, nil
	}
	return "", nil, fmt.Errorf("-driver %q: want v1 or v2 (both, for the bench)", driver)
}
