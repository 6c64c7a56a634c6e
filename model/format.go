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
//	PREFIX{date:LAYOUT}INFIX{seq:WIDTH}SUFFIX
//
// PREFIX, INFIX and SUFFIX are literal text without braces, each optional;
// the date part is optional, and comes before the number, and LAYOUT is a
// Go time layout of fixed width, such as 060102 or 2006-01; the number is
// zero-padded to at least WIDTH digits. ORD-{date:060102}-{seq:5} gives
// ORD-261130-00042, and INV{seq:4}-EU gives INV0042-EU. A number wider
// than WIDTH widens the result; since the text around it and the date are
// of fixed width, numbers never collide. With a date, each period (in UTC)
// has its own counter, so the number restarts each period.
type Format struct {
	Prefix string // literal text before the date, or before the number
	Layout string // Go time layout, or "" for no date
	Infix  string // literal text between the date and the number
	Width  int    // minimum digits of the number
	Suffix string // literal text after the number
}

var (
	refA = time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)
	refB = time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// ParseFormat parses a template such as ORD-{date:060102}-{seq:5}. An error
// quotes the whole template and says what is wrong with it.
func ParseFormat(s string) (*Format, error) {
	f, err := parseFormat(s)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return f, nil
}

// parseFormat is ParseFormat without the package's prefix on its errors,
// for the tag parser, whose errors carry it already.
func parseFormat(s string) (*Format, error) {
	bad := func(why string) (*Format, error) {
		return nil, fmt.Errorf("format %q: %s; want PREFIX{date:LAYOUT}INFIX{seq:WIDTH}SUFFIX, each part but {seq:WIDTH} optional, e.g. ORD-{date:060102}-{seq:5}", s, why)
	}
	f := &Format{}
	lit, rest, err := literal(s)
	if err != nil {
		return bad(err.Error())
	}
	f.Prefix = lit
	if after, ok := strings.CutPrefix(rest, "{date:"); ok {
		j := strings.IndexByte(after, '}')
		if j < 0 {
			return bad("unclosed {date:")
		}
		f.Layout = after[:j]
		if err := checkLayout(f.Layout); err != nil {
			return bad(err.Error())
		}
		if f.Infix, rest, err = literal(after[j+1:]); err != nil {
			return bad(err.Error())
		}
	}
	after, ok := strings.CutPrefix(rest, "{seq:")
	if !ok {
		if strings.HasPrefix(rest, "{date:") {
			return bad("a second {date:...}")
		}
		if rest == "" {
			return bad("no {seq:WIDTH}")
		}
		return bad(fmt.Sprintf("unknown part at %q; the parts are {date:LAYOUT} and {seq:WIDTH}", rest))
	}
	j := strings.IndexByte(after, '}')
	if j < 0 {
		return bad("unclosed {seq:")
	}
	w, err := strconv.Atoi(after[:j])
	if err != nil || w < 1 || w > 19 {
		return bad("WIDTH must be a number from 1 to 19")
	}
	f.Width = w
	if f.Suffix, rest, err = literal(after[j+1:]); err != nil {
		return bad(err.Error())
	}
	switch {
	case strings.HasPrefix(rest, "{date:"):
		return bad("{date:...} must come before {seq:...}, so that the numbers of a period sort together")
	case rest != "":
		return bad(fmt.Sprintf("more after the number: %q", rest))
	}
	return f, nil
}

// literal splits s at its first '{', and refuses a '}' before it.
func literal(s string) (lit, rest string, err error) {
	i := strings.IndexByte(s, '{')
	if i < 0 {
		i = len(s)
	}
	if strings.IndexByte(s[:i], '}') >= 0 {
		return "", "", errors.New("a '}' outside a part; literal text may not contain braces")
	}
	return s[:i], s[i:], nil
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
	case len(a) != len(b) || !fixedWidth(layout, len(a)):
		return fmt.Errorf("date layout %q is not of fixed width (use 01 and 02, not 1 and 2), so two dates could run into the number", layout)
	}
	return nil
}

// fixedWidth reports whether layout formats every month, weekday, day and
// hour of a year to n bytes (names such as Monday and January vary).
func fixedWidth(layout string, n int) bool {
	for d := refB; d.Before(refB.AddDate(1, 0, 0)); d = d.Add(23 * time.Hour) {
		if len(d.Format(layout)) != n {
			return false
		}
	}
	return true
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
	dst = append(dst, f.Infix...)
	var num [20]byte
	d := strconv.AppendInt(num[:0], n, 10)
	for i := len(d); i < f.Width; i++ {
		dst = append(dst, '0')
	}
	dst = append(dst, d...)
	return append(dst, f.Suffix...)
}

// String returns the template in tag syntax.
func (f *Format) String() string {
	s := f.Prefix
	if f.Layout != "" {
		s += "{date:" + f.Layout + "}"
	}
	return s + f.Infix + "{seq:" + strconv.Itoa(f.Width) + "}" + f.Suffix
}
