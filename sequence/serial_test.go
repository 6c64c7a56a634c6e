package sequence_test

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// serialURI returns a URI for child processes that reaches the server
// through a proxy in this process which lets one command at a time through,
// across all connections of all processes. FerretDB applies findAndModify
// atomically when commands do not overlap, which is what one shared
// connection would give; so the Atomic strategy's multi-process tests can
// run on the embedded server. On MongoDB it returns the server's own URI.
func serialURI(t *testing.T) string {
	t.Helper()
	if srv.Info().AtomicFindMod {
		return srv.URI
	}
	u, err := url.Parse(srv.URI)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var turn sync.Mutex // held from a command's first byte to its reply's last
	upstream := u.Host
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(c, upstream, &turn)
		}
	}()
	u.Host = ln.Addr().String()
	return u.String()
}

// relay forwards c's wire-protocol messages to a connection of its own to
// upstream, one command and its reply at a time under turn.
func relay(c net.Conn, upstream string, turn *sync.Mutex) {
	defer c.Close()
	up, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer up.Close()
	for {
		msg, err := readMessage(c)
		if err != nil {
			return
		}
		turn.Lock()
		err = exchange(up, c, msg)
		turn.Unlock()
		if err != nil {
			return
		}
	}
}

func exchange(up, c net.Conn, msg []byte) error {
	if _, err := up.Write(msg); err != nil {
		return err
	}
	// OP_MSG with moreToCome (flag bit 1) gets no reply; nothing here sends one.
	if binary.LittleEndian.Uint32(msg[12:]) == 2013 && len(msg) >= 20 && binary.LittleEndian.Uint32(msg[16:])&2 != 0 {
		return nil
	}
	reply, err := readMessage(up)
	if err == nil {
		_, err = c.Write(reply)
	}
	return err
}

// readMessage reads one wire-protocol message: a little-endian int32 total
// length, then the rest.
func readMessage(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n < 16 || n > 48<<20 {
		return nil, io.ErrUnexpectedEOF
	}
	msg := make([]byte, n)
	copy(msg, hdr[:])
	_, err := io.ReadFull(r, msg[4:])
	return msg, err
}
