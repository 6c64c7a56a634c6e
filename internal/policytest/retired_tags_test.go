package policytest_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// retired matches the struct tags the policy tag replaced (tenant, encrypt
// and softdelete keys), which no policy reads: repo.New refuses a model
// that uses one beside its policy (TestRetiredTagKeysAreRefused), and a
// guide still using one would mislead.
var retired = regexp.MustCompile(`\b(` + strings.Join([]string{"tenant", "encrypt", "softdelete"}, "|") + `):\\?"`)

// TestNoRetiredPolicyTags: no Go file or guide of the module uses a tag
// key the policy tag replaced; write policy:"tenant", policy:"encrypt,eq",
// policy:"softdelete,at" and so on (the CHANGELOG, which records the
// rename, and this file, whose models use them to prove they are refused,
// aside).
func TestNoRetiredPolicyTags(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || d.Name() == "CHANGELOG.md" || d.Name() == "retired_tags_test.go":
			return nil
		case !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := retired.FindString(line); m != "" {
				t.Errorf("%s:%d: %s is a retired tag; use the policy tag (see docs/policies.md#registration)", path, i+1, strings.TrimSuffix(m, `"`))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Models that bind their fields with the retired keys, the policy's name
// as the key, which no policy reads.
type (
	retiredTenant struct {
		mgm.DefaultModel `bson:",inline"`
		Tenant           string `bson:"tenant" tenant:"id"`
		Name             string `bson:"name"`
	}
	retiredEncrypt struct {
		mgm.DefaultModel `bson:",inline"`
		Email            string `bson:"email" encrypt:"eq"`
	}
	retiredSoftdelete struct {
		mgm.DefaultModel `bson:",inline"`
		DeletedAt        *time.Time `bson:"deletedAt,omitempty" softdelete:"at"`
	}
	// otherKeys has keys that no policy is named, beside a policy tag.
	otherKeys struct {
		mgm.DefaultModel `bson:",inline"`
		Tenant           string `bson:"tenant" policy:"tenant"`
		X                string `json:"x" bson:"x" foo:"bar"`
	}
)

// TestRetiredTagKeysAreRefused: tenant:"id", encrypt:"eq" and
// softdelete:"at" are refused by repo.New on a bus with the policy of
// that name, each alone and all three together, naming the type, the
// field, the tag and the fix, and nothing is written: the key would be
// ignored, and the model stored without its tenant, in plaintext, or
// deleted for real. Keys that no policy is named still pass.
func TestRetiredTagKeysAreRefused(t *testing.T) {
	enc := func() events.Listener {
		e, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret(t)}})
		require.NoError(t, err)
		return e
	}
	ten := func() events.Listener { return tenancy.New() }
	soft := func() events.Listener { return softdelete.New() }
	for name, policies := range map[string][]func() events.Listener{
		"each alone": nil,
		"together":   {ten, enc, soft},
	} {
		t.Run(name, func(t *testing.T) {
			db := srv.Database(t)
			busOf := func(alone func() events.Listener) *events.Bus {
				bus := events.NewBus()
				if policies == nil {
					bus.Register(alone())
					return bus
				}
				for _, p := range policies {
					bus.Register(p())
				}
				return bus
			}
			refusedUnwritten(t, busOf(ten), db, asAcme, &retiredTenant{Name: "n"}, "Tenant", `tenant:"id"`, "tenant")
			refusedUnwritten(t, busOf(enc), db, ctx, &retiredEncrypt{Email: "bob@example.com"}, "Email", `encrypt:"eq"`, "encrypt")
			refusedUnwritten(t, busOf(soft), db, ctx, &retiredSoftdelete{}, "DeletedAt", `softdelete:"at"`, "softdelete")
			names, err := db.ListCollectionNames(ctx, bson.D{})
			require.NoError(t, err)
			assert.Empty(t, names, "nothing reached the database")

			others, err := repo.New[*otherKeys](busOf(ten), repo.WithDatabase(db))
			require.NoError(t, err, "json and foo name no policy")
			require.NoError(t, others.Insert(asAcme, &otherKeys{X: "x"}))
			n, err := db.Collection("other_keys").CountDocuments(ctx, bson.M{"tenant": acme})
			require.NoError(t, err)
			assert.Equal(t, int64(1), n)
		})
	}
}

// refusedUnwritten asserts that repo.New refuses T on bus, naming field,
// its tag and policy, and that no document of T's collection is stored.
// Were T not refused, m would be inserted with ctx as the application
// would, and the count would show it.
func refusedUnwritten[T mgm.Model](t *testing.T, bus *events.Bus, db *mongo.Database, ctx context.Context, m T, field, tag, policy string) {
	t.Helper()
	r, err := repo.New[T](bus, repo.WithDatabase(db))
	if err == nil {
		assert.NoError(t, r.Insert(ctx, m), "the key ignored, the model is stored unprotected")
	}
	assert.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, "field "+field+": tag "+tag+` is not read by any listener; policy "`+policy+`" binds fields with policy:"`+policy+`" (docs/policies.md#registration)`)
	coll := mgm.CollName(m)
	n, err := db.Collection(coll).CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Zero(t, n, "nothing stored in %s", coll)
}
