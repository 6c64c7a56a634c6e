package policytest_test

import (
	"bytes"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// TestPoliciesCannotBeUnregistered: the function Register returns for a
// policy removes nothing and reports false, for each of the three
// policies, on the bus a repository was made with and on a second bus the
// same policy is registered on; every repository on either, called after
// the unregister functions, keeps enforcing it, as the stored documents
// show.
func TestPoliciesCannotBeUnregistered(t *testing.T) {
	// each registers p on two buses, and returns them with a function that
	// calls both unregister functions, for after the repositories are made.
	each := func(t *testing.T, p events.Listener) ([2]*events.Bus, func()) {
		var buses [2]*events.Bus
		var stops [2]func() bool
		for i := range buses {
			buses[i] = events.NewBus()
			stops[i] = buses[i].Register(p)
		}
		return buses, func() {
			for i, stop := range stops {
				n := buses[i].Len()
				assert.False(t, stop(), "bus %d: a policy is never removed", i)
				assert.Equal(t, n, buses[i].Len(), "bus %d", i)
			}
		}
	}

	t.Run("encryption", func(t *testing.T) {
		enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret(t)}})
		require.NoError(t, err)
		buses, unregister := each(t, enc)
		var dbs []*mongo.Database
		var patients []*repo.Repository[*Patient]
		for _, bus := range buses {
			db := srv.Database(t)
			r, err := repo.New[*Patient](bus, repo.WithDatabase(db))
			require.NoError(t, err)
			dbs, patients = append(dbs, db), append(patients, r)
		}
		unregister()
		for i, db := range dbs {
			require.NoError(t, patients[i].Insert(ctx, &Patient{Email: "ann@example.com", Notes: "secret notes", Ward: "w"}))
			raw, err := db.Collection("patients").FindOne(ctx, bson.M{"ward": "w"}).Raw()
			require.NoError(t, err)
			assert.False(t, bytes.Contains(raw, []byte("ann@example.com")), "no plaintext at rest")
			assert.False(t, bytes.Contains(raw, []byte("secret notes")), "no plaintext at rest")
		}
	})

	t.Run("tenancy", func(t *testing.T) {
		buses, unregister := each(t, tenancy.New())
		for i, bus := range buses {
			db := srv.Database(t)
			invoices, err := repo.New[*Invoice](bus, repo.WithDatabase(db))
			require.NoError(t, err)
			unregister()
			_, err = db.Collection("invoices").InsertOne(ctx, bson.M{"tenant": globex, "amount": 10})
			require.NoError(t, err)
			require.NoError(t, invoices.Insert(asAcme, &Invoice{Amount: 1, No: 1}))
			all, err := invoices.Find(asAcme, bson.D{})
			require.NoError(t, err)
			require.Len(t, all, 1, "bus %d: acme sees its own invoice only", i)
			_, err = invoices.Find(ctx, bson.D{})
			assert.ErrorIs(t, err, tenancy.ErrNoTenant, "bus %d", i)
			n, err := db.Collection("invoices").CountDocuments(ctx, bson.M{"tenant": acme})
			require.NoError(t, err)
			assert.Equal(t, int64(1), n, "bus %d: the insert was stamped with the tenant", i)
		}
	})

	t.Run("softdelete", func(t *testing.T) {
		buses, unregister := each(t, softdelete.New())
		for i, bus := range buses {
			db := srv.Database(t)
			notes, err := repo.New[*Note](bus, repo.WithDatabase(db))
			require.NoError(t, err)
			unregister()
			n := &Note{Text: "kept"}
			require.NoError(t, notes.Insert(ctx, n))
			require.NoError(t, notes.Delete(ctx, n))
			raw, err := db.Collection("notes").FindOne(ctx, bson.M{"_id": n.ID}).Raw()
			require.NoError(t, err, "bus %d: the delete only marked the document", i)
			_, err = raw.LookupErr("deletedAt")
			assert.NoError(t, err, "bus %d: the mark is stored", i)
			left, err := notes.Find(ctx, bson.D{})
			require.NoError(t, err)
			assert.Empty(t, left, "bus %d: reads skip it", i)
		}
	})
}
