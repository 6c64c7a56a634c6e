package main

import (
	"fmt"
	"io"
)

func benchMain(args []string, out io.Writer) int {
	fmt.Fprintln(out, "bench: not built yet")
	return 2
}
