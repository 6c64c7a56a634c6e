// Written by hand: the driver-v2 line's form of example_app/driver.go.

package main

import (
	"errors"
	"io"
)

// line is the driver line this example_app is of.
const line = "v2"

// otherLine runs the command for driver when another line's example_app
// runs it, and reports whether it did: the v1 line runs from the
// repository's root, which runs this one for -driver v2.
func otherLine(driver string, _ []string, out, _ io.Writer) (int, bool) {
	if driver == "v2" {
		return 0, false
	}
	return fail(out, errors.New("-driver "+driver+": run the v1 line's example_app, from the repository's root (go run ./example_app -driver "+driver+")")), true
}

// otherBench is the v1 line's: the v2 line's bench measures itself.
func otherBench(string, string, []string, io.Writer) ([]figure, error) {
	return nil, errors.New("-driver both: run the bench from the repository's root")
}
