package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// BenchAudited is updated by filter with Auditing stamping updatedAt.
type BenchAudited struct {
	mgm.IDField `bson:",inline"`
	UserName    string    `bson:"userName"`
	Touched     time.Time `bson:"touched" audit:"updatedAt"`
}

// manyDocs is how many documents each UpdateMany of the bench changes.
const manyDocs = 100

// benchUpdateMany: repo.UpdateMany of 100 documents with Auditing, which
// adds updatedAt to the $set, against the raw UpdateMany with the same
// $set, updatedAt included.
func benchUpdateMany(env *benchEnv) ([]figure, error) {
	ctx := env.ctx
	audit := listeners.NewAuditing()
	bus := events.NewBus()
	bus.Register(audit)
	audited, err := repo.New[*BenchAudited](bus, repo.WithDatabase(env.db))
	if err != nil {
		return nil, err
	}
	raw := env.db.Collection("raw_audited")
	for i := range manyDocs {
		if err := audited.Insert(ctx, &BenchAudited{UserName: "u" + strconv.Itoa(i)}); err != nil {
			return nil, err
		}
		if _, err := raw.InsertOne(ctx, &BenchAudited{UserName: "u" + strconv.Itoa(i)}); err != nil {
			return nil, err
		}
	}
	check := func(res *mongo.UpdateResult) error {
		if res.MatchedCount != manyDocs {
			return fmt.Errorf("UpdateMany matched %d documents, want %d", res.MatchedCount, manyDocs)
		}
		return nil
	}
	rawV := &variant{name: "raw UpdateMany", op: func(ctx context.Context, i int) error {
		res, err := raw.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{
			{Key: "userName", Value: "v" + strconv.Itoa(i)}, {Key: "touched", Value: time.Now().UTC()}}}})
		if err != nil {
			return err
		}
		return check(res)
	}}
	lib := &variant{name: "repo UpdateMany", op: func(ctx context.Context, i int) error {
		res, err := audited.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "userName", Value: "v" + strconv.Itoa(i)}}}})
		if err != nil {
			return err
		}
		return check(res)
	}}
	if err := env.alternate("update many", env.c.manyRounds, 5, rawV, lib); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(lib, rawV)
	return []figure{
		{"update_many_ratio", r, ci, fmt.Sprintf("repo.UpdateMany of %d with Auditing %.0f/s ÷ raw UpdateMany, same $set, %.0f/s; %s", manyDocs, lib.perSec(), rawV.perSec(), sp), "≥ 0.97"},
	}, nil
}

// BenchTenant belongs to a tenant, and may be soft-deleted.
type BenchTenant struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	UserName         string     `bson:"userName"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// BenchSoft is BenchTenant in a collection of its own, for the soft-delete
// phase.
type BenchSoft BenchTenant

// policyRepos returns repositories of M on a bus without policies and on
// one with policy; the policy tags of M that policy does not enforce are
// knowingly left unenforced, to measure one policy at a time.
func policyRepos[M mgm.Model](env *benchEnv, policy events.Listener) (plain, with *repo.Repository[M], err error) {
	unenforced := repo.Unenforced("tenant", "softdelete")
	if plain, err = repo.New[M](events.NewBus(), repo.WithDatabase(env.db), unenforced); err != nil {
		return nil, nil, err
	}
	bus := events.NewBus()
	bus.Register(policy)
	with, err = repo.New[M](bus, repo.WithDatabase(env.db), unenforced)
	return plain, with, err
}

// benchTenancy: Insert, and FindOne by a field, through a repository with
// Tenancy, against the same repository on a bus without it; then FindByID
// alone, where the embedded server shows its query planner, not the
// library.
func benchTenancy(env *benchEnv) ([]figure, error) {
	ctx := tenancy.WithTenant(env.ctx, "acme")
	plain, tenanted, err := policyRepos[*BenchTenant](env, tenancy.New())
	if err != nil {
		return nil, err
	}
	const seeded = 200
	var ids []any
	for i := range seeded {
		m := &BenchTenant{Tenant: "acme", UserName: "s" + strconv.Itoa(i)}
		if err := plain.Insert(ctx, m); err != nil {
			return nil, err
		}
		ids = append(ids, m.ID)
	}
	insertFind := func(r *repo.Repository[*BenchTenant]) func(context.Context, int) error {
		return func(_ context.Context, i int) error {
			if err := r.Insert(ctx, &BenchTenant{Tenant: "acme", UserName: "u" + strconv.Itoa(i)}); err != nil {
				return err
			}
			_, err := r.FindOne(ctx, bson.M{"userName": "s" + strconv.Itoa(i%seeded)})
			return err
		}
	}
	byID := func(r *repo.Repository[*BenchTenant]) func(context.Context, int) error {
		return func(_ context.Context, i int) error {
			_, err := r.FindByID(ctx, ids[i%seeded])
			return err
		}
	}
	without := &variant{name: "without Tenancy", op: insertFind(plain)}
	with := &variant{name: "with Tenancy", op: insertFind(tenanted)}
	idWithout := &variant{name: "FindByID without Tenancy", op: byID(plain)}
	idWith := &variant{name: "FindByID with Tenancy", op: byID(tenanted)}
	if err := env.alternate("tenancy", env.c.rounds/10+1, env.c.inserts, without, with, idWithout, idWith); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(with, without)
	ir, iCI, isp := throughputRatio(idWith, idWithout)
	return []figure{
		{"tenancy_ratio", r, ci, fmt.Sprintf("Insert + FindOne by a field with Tenancy %.0f/s ÷ without %.0f/s; %s", with.perSec(), without.perSec(), sp), "≥ 0.97"},
		{"tenancy_findbyid_ratio", ir, iCI, fmt.Sprintf("FindByID with Tenancy ÷ without, among %d+ documents: {_id, tenant} is a scan on the embedded server, which indexes {_id} alone; %s", seeded, isp), "reported"},
	}, nil
}

// benchSoftDeleteFind: Find of 100 documents through a repository with
// SoftDelete, against the same repository on a bus without it.
func benchSoftDeleteFind(env *benchEnv) ([]figure, error) {
	plain, softDeleted, err := policyRepos[*BenchSoft](env, softdelete.New())
	if err != nil {
		return nil, err
	}
	docs := make([]any, manyDocs)
	for i := range docs {
		docs[i] = &BenchSoft{Tenant: "acme", UserName: "f"}
	}
	if _, err := plain.Collection().InsertMany(env.ctx, docs); err != nil {
		return nil, err
	}
	find := func(r *repo.Repository[*BenchSoft]) func(context.Context, int) error {
		return func(ctx context.Context, _ int) error {
			ms, err := r.Find(ctx, bson.M{"userName": "f"})
			if err == nil && len(ms) != manyDocs {
				err = fmt.Errorf("found %d, want %d", len(ms), manyDocs)
			}
			return err
		}
	}
	without := &variant{name: "Find without SoftDelete", op: find(plain)}
	with := &variant{name: "Find with SoftDelete", op: find(softDeleted)}
	if err := env.alternate("soft delete find", env.c.bulkRounds, 5, without, with); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(with, without)
	return []figure{
		{"softdelete_find_ratio", r, ci, fmt.Sprintf("Find of %d with SoftDelete ÷ without; %s", manyDocs, sp), "reported"},
	}, nil
}

// BenchSealed has two encrypted fields, one searchable; BenchOpen is the
// same model in the clear.
type BenchSealed struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email" policy:"encrypt,eq"`
	Notes            string `bson:"notes" policy:"encrypt"`
}

// BenchOpen is BenchSealed without encryption.
type BenchOpen struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email"`
	Notes            string `bson:"notes"`
}

// benchEncryption: Insert, and FindOne by email among 200 documents,
// of a model with two encrypted fields against the same model unencrypted
// (with an index on email, as the encrypted one has on its blind index).
func benchEncryption(env *benchEnv) ([]figure, error) {
	ctx := env.ctx
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	enc, err := encryption.New(encryption.Keys{{ID: "bench", Secret: secret}})
	if err != nil {
		return nil, err
	}
	encBus := events.NewBus()
	encBus.Register(enc)
	sealed, err := repo.New[*BenchSealed](encBus, repo.WithDatabase(env.db))
	if err != nil {
		return nil, err
	}
	open, err := repo.New[*BenchOpen](events.NewBus(), repo.WithDatabase(env.db))
	if err != nil {
		return nil, err
	}
	if _, err := open.Collection().Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index()}); err != nil {
		return nil, err
	}
	const seeded = 200
	for i := range seeded {
		e := "user" + strconv.Itoa(i) + "@example.com"
		if err := sealed.Insert(ctx, &BenchSealed{Email: e, Notes: "notes"}); err != nil {
			return nil, err
		}
		if err := open.Insert(ctx, &BenchOpen{Email: e, Notes: "notes"}); err != nil {
			return nil, err
		}
	}
	email := func(i int) string { return "user" + strconv.Itoa(i%seeded) + "@example.com" }
	insOpen := &variant{name: "insert plain", op: func(ctx context.Context, i int) error {
		return open.Insert(ctx, &BenchOpen{Email: "n" + email(i), Notes: "notes"})
	}}
	insSealed := &variant{name: "insert encrypted", op: func(ctx context.Context, i int) error {
		return sealed.Insert(ctx, &BenchSealed{Email: "n" + email(i), Notes: "notes"})
	}}
	findOpen := &variant{name: "find plain", op: func(ctx context.Context, i int) error {
		_, err := open.FindOne(ctx, bson.M{"email": email(i)})
		return err
	}}
	findSealed := &variant{name: "find encrypted", op: func(ctx context.Context, i int) error {
		m, err := sealed.FindOne(ctx, bson.M{"email": email(i)})
		if err == nil && m.Email != email(i) {
			err = fmt.Errorf("found %q, want %q", m.Email, email(i))
		}
		return err
	}}
	if err := env.alternate("encryption", env.c.rounds/10+1, env.c.inserts, insOpen, insSealed, findOpen, findSealed); err != nil {
		return nil, err
	}
	ir, iCI, isp := throughputRatio(insSealed, insOpen)
	fr, fCI, fsp := throughputRatio(findSealed, findOpen)
	return []figure{
		{"encrypt_insert_ratio", ir, iCI, fmt.Sprintf("Insert with 2 encrypted fields ÷ unencrypted; %s", isp), "reported"},
		{"encrypt_find_ratio", fr, fCI, fmt.Sprintf("FindOne by an encrypted eq field among %d ÷ unencrypted, indexed; %s", seeded, fsp), "reported"},
	}, nil
}
