package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Format is an order-number template, written in a tag as
//
//	PREFIX{date:LAYOUT}{seq:WIDTH}
//
// PREFIX is literal text (no braces); the date part is optional and LAYOUT
// is a Go time layout of fixed width, such as 060102 or 2006-01; the number
// is zero-padded to at least WIDTH digits. ORD{date:060102}{seq:5} gives
// ORD26113000042. A number wider than WIDTH widens the result, so numbers
// never collide. With a date, each period (in UTC) has its own counter, so
// the number restarts each period.
type Format struct {
	Prefix string // literal text before the date
	Layout string // Go time layout, or "" for no date
	Width  int    // minimum digits of the number
}

var (
	refA = time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)
	refB = time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// ParseFormat parses a template such as ORD{date:060102}{seq:5}.
func ParseFormat(s string) (*Format, error) {
	bad := func(why string) (*Format, error) {
		return nil, fmt.Errorf("format=%s: %s; want PREFIX{date:LAYOUT}{seq:WIDTH}, e.g. ORD{date:060102}{seq:5}", s, why)
	}
	f := &Format{}
	i := strings.IndexByte(s, '{')
	if i < 0 {
		return bad("no {seq:WIDTH}")
	}
	f.Prefix, s = s[:i], s[i:]
	if strings.ContainsAny(f.Prefix, "}#") {
		return bad("the prefix may not contain '}' or '#'")
	}
	if rest, ok := strings.CutPrefix(s, "{date:"); ok {
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return bad("unclosed {date:")
		}
		f.Layout, s = rest[:j], rest[j+1:]
		if err := checkLayout(f.Layout); err != nil {
			return bad(err.Error())
		}
	}
	rest, ok := strings.CutPrefix(s, "{seq:")
	if !ok || !strings.HasSuffix(rest, "}") {
		return bad("it must end with {seq:WIDTH}")
	}
	w, err := strconv.Atoi(strings.TrimSuffix(rest, "}"))
	if err != nil || w < 1 || w > 19 {
		return bad("WIDTH must be a number from 1 to 19")
	}
	f.Width = w
	return f, nil
}

func checkLayout(layout string) error {
	a, b := refA.Format(layout), refB.Format(layout)
	switch {
	case layout == "":
		return errors.New("empty date layout")
	case strings.ContainsAny(layout, "{}#"):
		return errors.New("the date layout may not contain braces or '#'")
	case a == b:
		return fmt.Errorf("date layout %q has no date or time element", layout)
	case len(a) != len(b):
		return fmt.Errorf("date layout %q is not of fixed width (use 01 and 02, not 1 and 2), so two dates could run into the number", layout)
	}
	return nil
}

// Period returns the date part for t (in UTC), or "" when the format has
// no date.
func (f *Format) Period(t time.Time) string {
	if f.Layout == "" {
		return ""
	}
	return t.UTC().Format(f.Layout)
}

// Append appends the order number for period and n to dst.
func (f *Format) Append(dst []byte, period string, n int64) []byte {
	dst = append(dst, f.Prefix...)
	dst = append(dst, period...)
	var num [20]byte
	d := strconv.AppendInt(num[:0], n, 10)
	for i := len(d); i < f.Width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// String returns the template in tag syntax.
func (f *Format) String() string {
	s := f.Prefix
	if f.Layout != "" {
		s += "{date:" + f.Layout + "}"
	}
	return s + "{seq:" + strconv.Itoa(f.Width) + "}"
}
