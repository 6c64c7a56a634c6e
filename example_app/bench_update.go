package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/internal/serverinfo"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// BenchVersioned is a model under optimistic locking.
type BenchVersioned struct {
	mgm.DefaultModel `bson:",inline"`
	UserName         string `bson:"userName"`
	Version          int64  `bson:"version" auto:"version"`
}

// BenchUpdate is the demo's User in its own collection, so that the
// update phase addresses a collection as small as the raw side's.
type BenchUpdate User

// seedRaw inserts n documents made by mk into coll, each with its _id set
// so that the raw side can address it later.
func seedRaw[M mgm.Model](ctx context.Context, coll *mongo.Collection, n int, mk func() M) ([]M, error) {
	docs := make([]M, n)
	for i := range docs {
		docs[i] = mk()
		docs[i].SetID(primitive.NewObjectID())
		if _, err := coll.InsertOne(ctx, docs[i]); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

// seedRepo inserts n models made by mk through r.
func seedRepo[M mgm.Model](ctx context.Context, r *repo.Repository[M], n int, mk func() M) ([]M, error) {
	ms := make([]M, n)
	for i := range ms {
		ms[i] = mk()
		if err := r.Insert(ctx, ms[i]); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// benchUpdate: repo.Update of a stored model, which $sets the model's
// fields, against the raw UpdateOne $set of the same fields, mgm's
// updated_at included.
func benchUpdate(env *benchEnv) ([]figure, error) {
	ctx, n := env.ctx, env.c.inserts
	updates, err := repo.New[*BenchUpdate](env.bus, repo.WithDatabase(env.db))
	if err != nil {
		return nil, err
	}
	libDocs, err := seedRepo(ctx, updates, n, func() *BenchUpdate { return &BenchUpdate{UserName: "bench"} })
	if err != nil {
		return nil, err
	}
	rawColl, err := env.rawCollection("raw_update")
	if err != nil {
		return nil, err
	}
	rawDocs, err := seedRaw(ctx, rawColl, n, env.rawDoc)
	if err != nil {
		return nil, err
	}
	raw := &variant{name: "raw update", op: func(ctx context.Context, i int) error {
		u := rawDocs[i%n]
		u.UserName, u.UpdatedAt = "u"+strconv.Itoa(i), time.Now().UTC()
		_, err := rawColl.UpdateOne(ctx, bson.D{{Key: "_id", Value: u.ID}}, bson.D{{Key: "$set", Value: u}})
		return err
	}}
	lib := &variant{name: "repo update", op: func(ctx context.Context, i int) error {
		u := libDocs[i%n]
		u.UserName = "u" + strconv.Itoa(i)
		return updates.Update(ctx, u)
	}}
	if err := env.alternate("update", env.c.updateRounds, n, raw, lib); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(lib, raw)
	return []figure{
		{"update_ratio", r, ci, fmt.Sprintf("repo.Update %.0f/s ÷ raw UpdateOne $set %.0f/s; %s", lib.perSec(), raw.perSec(), sp), "≥ 0.97"},
	}, nil
}

// benchVersionedSave: repo.Save of a stored auto:"version" model, which
// filters on the version read (and, where the server's filtered writes are
// not atomic, settles each version with a claim document first), against a
// raw ReplaceOne by _id.
func benchVersionedSave(env *benchEnv) ([]figure, error) {
	ctx, n := env.ctx, env.c.inserts
	versioned, err := repo.New[*BenchVersioned](env.bus, repo.WithDatabase(env.db))
	if err != nil {
		return nil, err
	}
	mk := func() *BenchVersioned { return &BenchVersioned{UserName: "bench"} }
	libDocs, err := seedRepo(ctx, versioned, n, mk)
	if err != nil {
		return nil, err
	}
	rawColl := env.db.Collection("raw_versioned")
	rawDocs, err := seedRaw(ctx, rawColl, n, func() *BenchVersioned { m := mk(); m.Version = 1; return m })
	if err != nil {
		return nil, err
	}
	atomicWrites, err := serverinfo.AtomicWrites(ctx, env.db)
	if err != nil {
		return nil, err
	}
	strategy := "claim (the server's filtered writes are not atomic: a claim insert before each save, the claim deleted later in batches)"
	if atomicWrites {
		strategy = "atomic (a version filter on the replace)"
	}
	raw := &variant{name: "raw replace", op: func(ctx context.Context, i int) error {
		m := rawDocs[i%n]
		m.UserName, m.UpdatedAt = "u"+strconv.Itoa(i), time.Now().UTC()
		m.Version++
		_, err := rawColl.ReplaceOne(ctx, bson.D{{Key: "_id", Value: m.ID}}, m)
		return err
	}}
	lib := &variant{name: "repo versioned save", op: func(ctx context.Context, i int) error {
		m := libDocs[i%n]
		m.UserName = "u" + strconv.Itoa(i)
		return versioned.Save(ctx, m)
	}}
	if err := env.alternate("versioned save", env.c.updateRounds, n, raw, lib); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(lib, raw)
	return []figure{
		{"versioned_save_ratio", r, ci, fmt.Sprintf("repo.Save of an auto:\"version\" model %.0f/s ÷ raw ReplaceOne %.0f/s; strategy %s; %s", lib.perSec(), raw.perSec(), strategy, sp), "reported"},
	}, nil
}
