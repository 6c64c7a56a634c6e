package policytest_test

import (
	"bytes"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// wipe changes everything reachable from a schema the API handed out.
func wipe(s *model.Schema) {
	for i := range s.Fields {
		s.Fields[i].BSON, s.Fields[i].Index = "wiped", nil
	}
	for i := range s.Policies {
		s.Policies[i].Policy, s.Policies[i].Options, s.Policies[i].BSON = "wiped", nil, "wiped"
	}
	for i := range s.Audit {
		s.Audit[i].Kind, s.Audit[i].BSON = 0, "wiped"
	}
	s.Fields, s.Auto, s.Audit, s.Policies, s.Version, s.ID = nil, nil, nil, nil, nil, nil
	s.Collection = "wiped"
}

// TestNothingHandedOutSwitchesAPolicyOff wipes the schemas repo.Schema and
// model.Of hand out after the repositories are made, and before: every
// policy still holds, judged on the database.
func TestNothingHandedOutSwitchesAPolicyOff(t *testing.T) {
	db := srv.Database(t)
	enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret(t)}})
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(tenancy.New())
	bus.Register(softdelete.New())
	bus.Register(enc)
	for _, s := range []func() (*model.Schema, error){model.For[*Account], model.For[*Note], model.For[*Secret]} {
		got, err := s()
		require.NoError(t, err)
		wipe(got)
	}
	accounts, err := repo.New[*Account](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	notes, err := repo.New[*Note](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	secrets, err := repo.New[*Secret](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	wipe(accounts.Schema())
	wipe(notes.Schema())
	wipe(secrets.Schema())
	for _, s := range []func() (*model.Schema, error){model.For[*Account], model.For[*Note], model.For[*Secret]} {
		got, err := s()
		require.NoError(t, err)
		wipe(got)
	}

	require.NoError(t, accounts.Insert(asAcme, &Account{Name: "a", No: 1}))
	require.NoError(t, accounts.Insert(asGlobex, &Account{Name: "g", No: 1}))
	_, err = accounts.Find(ctx, bson.D{})
	assert.ErrorIs(t, err, tenancy.ErrNoTenant, "no tenant: refused")
	mine, err := accounts.Find(asAcme, bson.D{})
	require.NoError(t, err)
	require.Len(t, mine, 1)
	assert.Equal(t, "a", mine[0].Name)

	n := &Note{Text: "gone"}
	require.NoError(t, notes.Insert(ctx, n))
	require.NoError(t, notes.Delete(ctx, n))
	live, err := notes.Find(ctx, bson.D{})
	require.NoError(t, err)
	assert.Empty(t, live, "the deleted note stays hidden")
	stored := mongotest.Docs(t, db.Collection("notes"), bson.D{})
	assert.Len(t, stored, 1, "and is kept, marked")

	require.NoError(t, secrets.Insert(ctx, &Secret{Email: "ann@example.com"}))
	for _, raw := range mongotest.Docs(t, db.Collection("secrets"), bson.D{}) {
		assert.False(t, bytes.Contains(raw, []byte("ann@example.com")), "the email is not stored in plaintext")
	}
	found, err := secrets.FindOne(ctx, bson.M{"email": "ann@example.com"})
	require.NoError(t, err)
	assert.Equal(t, "ann@example.com", found.Email)
}
