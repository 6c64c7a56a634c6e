package autokeys_test

import (
	"context"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

var ctx = context.Background()

// User is the reference designs' model: a UUID and a number.
type User struct {
	mgm.DefaultModel `bson:",inline"`
	UserID           string `bson:"userId" auto:"uuid"`
	LongID           int64  `bson:"longId" auto:"inc"`
	UserName         string `bson:"userName"`
}

// Counted has an int64 _id numbered by a sequence, as in the mgo example.
type Counted struct {
	ID   int64  `bson:"_id" auto:"inc,seq=counted,batch=10"`
	Name string `bson:"name"`
}

func (c *Counted) PrepareID(id any) (any, error) { return id, nil }
func (c *Counted) GetID() any                    { return c.ID }
func (c *Counted) SetID(id any)                  { c.ID, _ = id.(int64) }

func keyed[T mgm.Model](t testing.TB, opts ...autokeys.Option) (*repo.Repository[T], *autokeys.Keys, *mongo.Database) {
	t.Helper()
	db := srv.PooledDatabase(t)
	return keyedOn[T](t, db, opts...)
}

func keyedOn[T mgm.Model](t testing.TB, db *mongo.Database, opts ...autokeys.Option) (*repo.Repository[T], *autokeys.Keys, *mongo.Database) {
	t.Helper()
	keys, err := autokeys.New(db, opts...)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	r, err := repo.New[T](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return r, keys, db
}

func TestAutoKeysFillsZeroFields(t *testing.T) {
	users, _, db := keyed[*User](t)
	u := &User{UserName: "zwt"}
	require.NoError(t, users.Insert(ctx, u))
	id, err := uuid.Parse(u.UserID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(4), id.Version())
	assert.Len(t, u.UserID, 36)
	assert.Equal(t, int64(1), u.LongID)

	given := &User{UserName: "given", UserID: "mine", LongID: 500}
	require.NoError(t, users.Insert(ctx, given))
	assert.Equal(t, "mine", given.UserID, "set fields are never touched")
	assert.Equal(t, int64(500), given.LongID)

	// An update keeps the keys.
	u.UserName = "renamed"
	require.NoError(t, users.Update(ctx, u))
	require.NoError(t, users.Save(ctx, u))
	stored, err := users.FindByID(ctx, u.ID)
	require.NoError(t, err)
	assert.Equal(t, u.UserID, stored.UserID)
	assert.Equal(t, int64(1), stored.LongID)
	n, _ := db.Collection("users").CountDocuments(ctx, bson.M{"longId": 1, "userId": u.UserID})
	assert.Equal(t, int64(1), n)
}

func TestAutoKeysOnIntID(t *testing.T) {
	counted, _, db := keyed[*Counted](t)
	for _, name := range []string{"a", "b", "c"} {
		require.NoError(t, counted.Insert(ctx, &Counted{Name: name}))
	}
	got, err := counted.FindByID(ctx, int64(2))
	require.NoError(t, err)
	assert.Equal(t, "b", got.Name)
	n, _ := db.Collection("counteds").CountDocuments(ctx, bson.M{"_id": bson.M{"$in": []int64{1, 2, 3}}})
	assert.Equal(t, int64(3), n)
}

func TestAutoKeysInsertManyOneRoundTrip(t *testing.T) {
	users, keys, db := keyed[*User](t)
	require.NoError(t, users.Insert(ctx, &User{UserName: "warm"}))
	before := settled(t, keys.Allocator())
	batch := make([]*User, 1000)
	for i := range batch {
		batch[i] = &User{UserName: "bulk"}
	}
	require.NoError(t, users.InsertMany(ctx, batch))
	want := int64(1) // Atomic: one $inc
	if st, _ := keys.Allocator().Strategy(ctx); st == sequence.Claim {
		want = 2 // an insert and the check against the prune floor
	}
	assert.Equal(t, want, keys.Allocator().Stats().RoundTrips-before, "1000 models, one reservation")
	ids := make([]int64, len(batch))
	for i, u := range batch {
		ids[i] = u.LongID
	}
	assert.True(t, slices.IsSorted(ids))
	assert.Equal(t, 1000, len(slices.Compact(ids)))
	n, _ := db.Collection("users").CountDocuments(ctx, bson.M{})
	assert.Equal(t, int64(1001), n)
}

// settled returns a's round trips once no background fetch is adding to
// them: the count read three times in a row, 10ms apart, is the same. It
// fails the test when the count still moves after five seconds.
func settled(t *testing.T, a *sequence.Allocator) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	last, same := a.Stats().RoundTrips, 0
	for same < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the allocator's round trips still move after 5s (now %d)", last)
		}
		time.Sleep(10 * time.Millisecond)
		n := a.Stats().RoundTrips
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}

func TestAutoKeysConcurrentInserts(t *testing.T) {
	const goroutines, each = 16, 40
	users, _, db := keyed[*User](t)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := users.Insert(ctx, &User{UserName: "g"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var ids []int64
	cur, err := db.Collection("users").Find(ctx, bson.M{})
	require.NoError(t, err)
	for cur.Next(ctx) {
		ids = append(ids, cur.Current.Lookup("longId").Int64())
	}
	require.Len(t, ids, goroutines*each)
	slices.Sort(ids)
	assert.Len(t, slices.Compact(ids), goroutines*each, "every longId distinct")
}

type Small struct {
	mgm.DefaultModel `bson:",inline"`
	N                int32 `bson:"n" auto:"inc,start=2147483646,batch=1"`
}

func TestAutoKeysOverflow(t *testing.T) {
	smalls, _, db := keyed[*Small](t)
	for range 2 {
		require.NoError(t, smalls.Insert(ctx, &Small{}))
	}
	s := &Small{}
	err := smalls.Insert(ctx, s)
	require.ErrorIs(t, err, sequence.ErrOverflow)
	assert.ErrorContains(t, err, "2147483648")
	assert.ErrorContains(t, err, "field N")
	assert.Zero(t, s.N)
	batch := []*Small{{}, {}}
	err = smalls.InsertMany(ctx, batch)
	require.ErrorIs(t, err, sequence.ErrOverflow)
	assert.Zero(t, batch[0].N, "an aborted write leaves the models' keys as they were")
	n, _ := db.Collection("smalls").CountDocuments(ctx, bson.M{})
	assert.Equal(t, int64(2), n, "nothing written after an overflow")
}

type Order struct {
	mgm.DefaultModel `bson:",inline"`
	No               string `bson:"no" auto:"inc,format=ORD{date:060102}{seq:5}"`
	Ref              string `bson:"ref" auto:"inc,seq=refs,start=99998,format=R{seq:5}"`
}

func TestAutoKeysOrderNumbers(t *testing.T) {
	now := time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	orders, _, _ := keyed[*Order](t, autokeys.WithClock(clock))
	var nos, refs []string
	for i := range 3 {
		if i == 2 {
			mu.Lock()
			now = now.Add(2 * time.Minute) // the next day
			mu.Unlock()
		}
		o := &Order{}
		require.NoError(t, orders.Insert(ctx, o))
		nos, refs = append(nos, o.No), append(refs, o.Ref)
	}
	assert.Equal(t, []string{"ORD26113000001", "ORD26113000002", "ORD26120100001"}, nos, "the number restarts each day")
	assert.Equal(t, []string{"R99998", "R99999", "R100000"}, refs, "a wider number widens the result")
}

type Invoice struct {
	mgm.DefaultModel `bson:",inline"`
	No               string `bson:"no" auto:"inc,format=INV-{date:0601}-{seq:3}-EU"`
}

// TestAutoKeysFormatWithLiteralText: literal text between the date and
// the number and after the number is stored as written.
func TestAutoKeysFormatWithLiteralText(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	invoices, _, db := keyed[*Invoice](t, autokeys.WithClock(func() time.Time { return now }))
	var nos []string
	for range 2 {
		inv := &Invoice{}
		require.NoError(t, invoices.Insert(ctx, inv))
		nos = append(nos, inv.No)
	}
	assert.Equal(t, []string{"INV-2611-001-EU", "INV-2611-002-EU"}, nos)
	n, _ := db.Collection("invoices").CountDocuments(ctx, bson.M{"no": bson.M{"$in": nos}})
	assert.Equal(t, int64(2), n)
}

type Keys struct {
	mgm.DefaultModel `bson:",inline"`
	V7               string    `bson:"v7" auto:"uuid,v7"`
	Compact          string    `bson:"compact" auto:"uuid,compact"`
	Typed            uuid.UUID `bson:"typed" auto:"uuid"`
	Bytes            [16]byte  `bson:"bytes" auto:"uuid"`
}

func TestAutoKeysUUIDs(t *testing.T) {
	ks, _, db := keyed[*Keys](t)
	k := &Keys{}
	require.NoError(t, ks.Insert(ctx, k))
	v7, err := uuid.Parse(k.V7)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(7), v7.Version())
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), k.Compact)
	assert.NotEqual(t, uuid.Nil, k.Typed)
	assert.NotEqual(t, [16]byte{}, k.Bytes)

	raw, err := db.Collection("keys").FindOne(ctx, bson.M{"_id": k.ID}).Raw()
	require.NoError(t, err)
	sub, data := raw.Lookup("typed").Binary()
	assert.Equal(t, byte(4), sub, "uuid.UUID is stored as the standard UUID subtype")
	assert.Equal(t, k.Typed[:], data)
	sub, _ = raw.Lookup("bytes").Binary()
	assert.Equal(t, byte(0), sub, "a plain [16]byte keeps the driver's generic subtype")

	byUUID, err := ks.FindOne(ctx, bson.M{"typed": k.Typed})
	require.NoError(t, err, "a uuid.UUID filter matches: the repository's collection has the registry")
	assert.Equal(t, k.ID, byUUID.ID)

	back, err := ks.FindByID(ctx, k.ID)
	require.NoError(t, err)
	assert.Equal(t, k.Typed, back.Typed)
	assert.Equal(t, k.Bytes, back.Bytes)
}

// TestAutoKeysHealsACounterBehindTheData: numbers already in the
// collection (a restored backup) make an insert fail on the unique index;
// the counter is moved past them and the insert retried, unseen.
// It runs with both strategies; Atomic on a database where findAndModify is
// atomic (one connection, on the embedded server).
func TestAutoKeysHealsACounterBehindTheData(t *testing.T) {
	for _, st := range []sequence.Strategy{sequence.Claim, sequence.Atomic} {
		t.Run(st.String(), func(t *testing.T) {
			db := srv.PooledDatabase(t)
			if st == sequence.Atomic {
				db = srv.Database(t)
			}
			healsBehindTheData(t, db, autokeys.WithSequenceOptions(sequence.WithStrategy(st)))
			if st == sequence.Atomic {
				var c struct{ Seq int64 }
				require.NoError(t, db.Collection("counters").FindOne(ctx, bson.M{"_id": "users.longId"}).Decode(&c))
				assert.GreaterOrEqual(t, c.Seq, int64(5001), "the counter itself was moved past the data")
			}
		})
	}
}

func healsBehindTheData(t *testing.T, db *mongo.Database, opts ...autokeys.Option) {
	users, keys, _ := keyedOn[*User](t, db, opts...)
	for range 3 {
		require.NoError(t, users.Insert(ctx, &User{UserName: "before"}))
	}
	var restored []any
	for n := int64(4); n <= 10; n++ {
		restored = append(restored, bson.M{"longId": n, "userName": "restored"})
	}
	_, err := db.Collection("users").InsertMany(ctx, restored)
	require.NoError(t, err)

	// This process had reserved 1..100 before the restore, so its cached
	// 4 collides; the counter is moved past the data and the cache dropped.
	u := &User{UserName: "after"}
	require.NoError(t, users.Insert(ctx, u), "the duplicate key is healed, not shown")
	assert.Greater(t, u.LongID, int64(10))

	// A collision in the middle of an InsertMany: the first model is
	// written, the rest are renumbered and retried.
	_, err = db.Collection("users").InsertOne(ctx, bson.M{"longId": u.LongID + 2, "userName": "in the way"})
	require.NoError(t, err)
	batch := []*User{{UserName: "m1"}, {UserName: "m2"}, {UserName: "m3"}}
	require.NoError(t, users.InsertMany(ctx, batch))
	assert.Equal(t, u.LongID+1, batch[0].LongID, "written before the collision")
	assert.Greater(t, batch[1].LongID, u.LongID+2, "renumbered past the data")
	assert.Greater(t, batch[2].LongID, batch[1].LongID)
	n, _ := db.Collection("users").CountDocuments(ctx, bson.M{})
	assert.Equal(t, int64(3+7+1+1+3), n)
	n, _ = db.Collection("users").CountDocuments(ctx, bson.M{"userName": bson.M{"$in": []string{"m1", "m2", "m3"}}})
	assert.Equal(t, int64(3), n, "each model written once")

	// A new process over data ahead of its counter starts past the data.
	_, err = db.Collection("users").InsertOne(ctx, bson.M{"longId": int64(5000)})
	require.NoError(t, err)
	fresh, _, _ := keyedOn[*User](t, db, opts...)
	v := &User{UserName: "new process"}
	require.NoError(t, fresh.Insert(ctx, v))
	assert.Equal(t, int64(5001), v.LongID)
	st, err := keys.Allocator().Strategy(ctx)
	require.NoError(t, err)
	assert.Equal(t, t.Name()[strings.LastIndex(t.Name(), "/")+1:], st.String(), "the strategy asked for")
}

func TestAutoKeysUserDuplicateIsNotRetried(t *testing.T) {
	users, _, db := keyed[*User](t)
	require.NoError(t, users.Insert(ctx, &User{UserName: "a", LongID: 7}))
	err := users.Insert(ctx, &User{UserName: "b", LongID: 7})
	require.True(t, mongo.IsDuplicateKeyError(err), "a number the caller chose is the caller's: %v", err)
	n, _ := db.Collection("users").CountDocuments(ctx, bson.M{})
	assert.Equal(t, int64(1), n)
}

func TestAutoKeysCreatesUniqueIndexes(t *testing.T) {
	users, _, db := keyed[*User](t)
	require.NoError(t, users.Insert(ctx, &User{}))
	assert.True(t, hasUniqueIndex(t, db.Collection("users"), "longId"))

	db2 := srv.PooledDatabase(t)
	users2, _, _ := keyedOn[*User](t, db2, autokeys.WithoutIndexes())
	require.NoError(t, users2.Insert(ctx, &User{}))
	assert.False(t, hasUniqueIndex(t, db2.Collection("users"), "longId"))
}

func hasUniqueIndex(t *testing.T, coll *mongo.Collection, key string) bool {
	cur, err := coll.Indexes().List(ctx)
	require.NoError(t, err)
	var specs []struct {
		Key    bson.M `bson:"key"`
		Unique bool   `bson:"unique"`
	}
	require.NoError(t, cur.All(ctx, &specs))
	for _, s := range specs {
		if len(s.Key) == 1 && s.Key[key] != nil && s.Unique {
			return true
		}
	}
	return false
}

type SharedA struct {
	mgm.DefaultModel `bson:",inline"`
	N                int64 `bson:"n" auto:"inc,seq=shared,start=10"`
}
type SharedB struct {
	mgm.DefaultModel `bson:",inline"`
	N                int64 `bson:"n" auto:"inc,seq=shared,start=20"`
}

func TestAutoKeysRejectsConflictingSequencesAtRegistration(t *testing.T) {
	db := srv.PooledDatabase(t)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	_, err = repo.New[*SharedA](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = repo.New[*SharedB](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, sequence.ErrConflict)
	assert.ErrorContains(t, err, "field N")
}

func TestNewErrors(t *testing.T) {
	_, err := autokeys.New(nil)
	assert.ErrorContains(t, err, "autokeys: New(nil)")
	_, err = autokeys.New(srv.PooledDatabase(t), autokeys.WithSequenceOptions(sequence.WithBatch(-1)))
	assert.ErrorContains(t, err, "WithBatch(-1)")
	_, err = autokeys.New(srv.PooledDatabase(t), autokeys.WithAllocator(nil))
	assert.ErrorIs(t, err, sequence.ErrInvalidArgument)
}

var _ = math.MaxInt32

// TestAutoKeysClose: a process that closes its keys on exit leaves no gap
// for the next one, and inserts after Close fail with sequence.ErrClosed.
func TestAutoKeysClose(t *testing.T) {
	users, keys, db := keyed[*User](t)
	for range 3 {
		require.NoError(t, users.Insert(ctx, &User{UserName: "first run"}))
	}
	require.NoError(t, keys.Close(ctx))
	err := users.Insert(ctx, &User{UserName: "too late"})
	require.ErrorIs(t, err, sequence.ErrClosed)

	next, _, _ := keyedOn[*User](t, db)
	u := &User{UserName: "second run"}
	require.NoError(t, next.Insert(ctx, u))
	assert.Equal(t, int64(4), u.LongID, "the second run continues at 4, not 101")
	n, _ := db.Collection("users").CountDocuments(ctx, bson.M{})
	assert.Equal(t, int64(4), n)
}
