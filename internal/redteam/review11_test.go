package redteam_test

// Review 11: the policy tag, DTO reads and keyset pages. Each test asserts
// the guarantee, and fails while the library breaks it.

import (
	"strings"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// Secrets holds a patient's secret, inlined by pointer.
type Secrets struct {
	Diagnosis string `bson:"diagnosis" policy:"encrypt"`
	Tenant    string `bson:"tenant" policy:"tenant"`
}

// Chart inlines its secrets through a pointer, which the driver's struct
// codec flattens as it does an inline struct.
type Chart struct {
	mgm.DefaultModel `bson:",inline"`
	*Secrets         `bson:",inline"`
	Ward             string `bson:"ward"`
}

// TestR11PolicyFieldsInInlinePointerStruct: the driver inlines a pointer
// to a struct (`*S bson:",inline"`) as it inlines a struct, storing S's
// fields at the top level, but model walks only inline struct values: the
// policy tags of a pointer's fields are never seen, so no policy governs
// them, repo.New accepts the model, and its policy:"encrypt" field is
// stored in plaintext and its policy:"tenant" field is the caller's to
// set, and left out of every filter.
func TestR11PolicyFieldsInInlinePointerStruct(t *testing.T) {
	w := wire(t)
	charts, err := repo.New[*Chart](w.bus, repo.WithDatabase(w.db))
	if err == nil {
		err = charts.Insert(asAcme, &Chart{Secrets: &Secrets{Diagnosis: "flu", Tenant: globex}, Ward: "3"})
		require.NoError(t, err)
	}
	assert.ErrorIs(t, err, model.ErrInvalidTag, "a policy tag the model's policies cannot see")
	for _, d := range w.raw(t, "charts", bson.D{}) {
		assert.NotContains(t, d.String(), "flu", "stored in plaintext: %s", d)
		assert.NotEqual(t, globex, d.Lookup("tenant").StringValue(), "acme stored a globex document: %s", d)
	}
}

// Owned is a tenant field of a struct that a model inlines.
type Owned struct {
	Tenant string `bson:"tenant" policy:"tenant"`
}

// Ledger inlines Owned, then declares a field of the same BSON name
// without a tag, which the driver stores instead of Owned's.
type Ledger struct {
	mgm.DefaultModel `bson:",inline"`
	Owned            `bson:",inline"`
	Tenant           string `bson:"tenant"`
	Total            int    `bson:"total"`
}

// TestR11ShadowedPolicyField: a policy-tagged field shadowed by a
// shallower field of the same BSON name (the driver stores the shallower
// one) is dropped from the schema without a word, so the model reaches
// the collection as if it declared no tenant: repo.New accepts it and its
// reads are no tenant's.
func TestR11ShadowedPolicyField(t *testing.T) {
	w := wire(t)
	ledgers, err := repo.New[*Ledger](w.bus, repo.WithDatabase(w.db))
	if err == nil {
		require.NoError(t, ledgers.Insert(asGlobex, &Ledger{Tenant: globex, Total: 7}))
		mine, err := ledgers.Find(asAcme, bson.D{})
		require.NoError(t, err)
		assert.Empty(t, mine, "acme reads globex's ledgers")
		t.Fatal("repo.New accepted a model whose policy tag the schema dropped")
	}
	require.Error(t, err, "a policy tag the schema drops")
	assert.ErrorIs(t, err, model.ErrInvalidTag)
	assert.True(t, strings.Contains(err.Error(), "Tenant"), "names the field: %v", err)
}
