package repo

import (
	"reflect"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type autoUser struct {
	mgm.DefaultModel `bson:",inline"`
	UserID           string `bson:"userId" auto:"uuid"`
	LongID           int64  `bson:"longId" auto:"inc"`
	Version          int64  `bson:"v" auto:"version"`
}

// TestZeroAndResetAuto: a retried write resets exactly the keys that were
// zero before it, and leaves the ones the caller gave.
func TestZeroAndResetAuto(t *testing.T) {
	s, err := model.For[*autoUser]()
	require.NoError(t, err)
	u := &autoUser{UserID: "x"}
	mask := zeroAuto(s, reflect.ValueOf(u))
	assert.Equal(t, uint64(0b110), mask, "longId and version are zero")
	u.LongID, u.Version = 9, 3
	resetAuto(s, reflect.ValueOf(u), mask)
	assert.Equal(t, "x", u.UserID)
	assert.Zero(t, u.LongID)
	assert.Zero(t, u.Version)
}

func BenchmarkZeroAuto(b *testing.B) {
	s, _ := model.For[*autoUser]()
	v := reflect.ValueOf(&autoUser{})
	b.ReportAllocs()
	for b.Loop() {
		_ = zeroAuto(s, v)
	}
}
