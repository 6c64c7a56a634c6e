package natsjs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mgmevents/mgmevents/outbox"
)

// ErrSubject matches, through errors.Is, a message or option that cannot
// make a valid NATS subject.
var ErrSubject = errors.New("natsjs: no valid NATS subject")

// EscapeToken makes s one NATS subject token that any s maps to without
// collision: ASCII letters, digits, '-' and '_' stay as they are, every
// other byte becomes %XX (upper-case hex). So a '.', a space, a '*', a '>'
// or a '%' cannot split the token, make it a wildcard or be confused with
// an escape. The empty string stays empty, which no subject accepts.
func EscapeToken(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !plain(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// DefaultSubject is the subject a Publisher uses unless WithSubject says
// otherwise: prefix, then the collection (Source) as one escaped token,
// then the Type with each '.'-separated part as one escaped token. So type
// "order.placed" of collection "orders" goes to
// "<prefix>.orders.order.placed", and a consumer can filter on
// "<prefix>.orders.>" or "<prefix>.*.order.>". A type with an empty part
// ("order..placed", ".placed", "placed.") is refused: it has no subject.
func DefaultSubject(prefix string, m outbox.Message) (string, error) {
	if m.Source == "" {
		return "", fmt.Errorf("%w: the message has no Source (collection)", ErrSubject)
	}
	if m.Type == "" {
		return "", fmt.Errorf("%w: the message has no Type", ErrSubject)
	}
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteByte('.')
	b.WriteString(EscapeToken(m.Source))
	for part := range strings.SplitSeq(m.Type, ".") {
		if part == "" {
			return "", fmt.Errorf("%w: type %q has an empty part; a '.' in a type separates subject tokens", ErrSubject, m.Type)
		}
		b.WriteByte('.')
		b.WriteString(EscapeToken(part))
	}
	return b.String(), nil
}

// checkSubject accepts a subject a message can be published to: tokens
// separated by '.', none empty, no wildcard ('*', '>'), no whitespace and
// no control character.
func checkSubject(s string) error {
	if s == "" {
		return fmt.Errorf("%w: the subject is empty", ErrSubject)
	}
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" {
			return fmt.Errorf("%w: %q has an empty token", ErrSubject, s)
		}
	}
	for _, r := range s {
		switch {
		case r == '*' || r == '>':
			return fmt.Errorf("%w: %q holds the wildcard %q", ErrSubject, s, r)
		case r <= ' ' || r == 0x7f:
			return fmt.Errorf("%w: %q holds whitespace or the control character %U", ErrSubject, s, r)
		}
	}
	return nil
}
