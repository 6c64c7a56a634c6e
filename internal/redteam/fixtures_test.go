package redteam_test

// Fixtures of the red-team tests: one bus with the three policies, models
// that use them, and helpers that read the database raw.

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"sync"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

var ctx = context.Background()

const acme, globex = "acme", "globex"

var (
	asAcme   = tenancy.WithTenant(ctx, acme)
	asGlobex = tenancy.WithTenant(ctx, globex)
)

// Account is a tenant's document.
type Account struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant"`
	Name             string `bson:"name"`
}

// Note is a tenant's soft-deleted document.
type Note struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	Text             string     `bson:"text"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// Patient is a tenant's document with encrypted fields.
type Patient struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant"`
	Email            string `bson:"email" policy:"encrypt,eq"`
	Notes            string `bson:"notes" policy:"encrypt"`
	Ward             string `bson:"ward"`
}

// Plain has no policy tags at all.
type Plain struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
}

// wired is what the application wires: one bus with every policy.
type wired struct {
	db       *mongo.Database
	bus      *events.Bus
	accounts *repo.Repository[*Account]
	notes    *repo.Repository[*Note]
	patients *repo.Repository[*Patient]
}

func wire(t *testing.T, opts ...*options.ClientOptions) *wired {
	t.Helper()
	db := srv.Database(t, opts...)
	secret := make([]byte, 32)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret}})
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(tenancy.New())
	bus.Register(softdelete.New())
	bus.Register(enc)
	w := &wired{db: db, bus: bus}
	w.accounts, err = repo.New[*Account](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	w.notes, err = repo.New[*Note](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	w.patients, err = repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return w
}

// seed stores two accounts per tenant and returns globex's.
func (w *wired) seed(t *testing.T) []*Account {
	t.Helper()
	require.NoError(t, w.accounts.InsertMany(asAcme, []*Account{{Name: "a1"}, {Name: "a2"}}))
	theirs := []*Account{{Name: "g1"}, {Name: "g2"}}
	require.NoError(t, w.accounts.InsertMany(asGlobex, theirs))
	return theirs
}

// raw returns the documents of coll that match filter, as stored.
func (w *wired) raw(t *testing.T, coll string, filter any) []bson.Raw {
	t.Helper()
	return mongotest.Docs(t, w.db.Collection(coll), filter)
}

func (w *wired) count(t *testing.T, coll string, filter any) int {
	t.Helper()
	return len(w.raw(t, coll, filter))
}

// plugin registers an ordinary listener, as a plugin would.
func (w *wired) plugin(f func(ctx context.Context, e *events.Event) error, opts ...events.Option) {
	w.bus.Register(events.ListenerFunc(f), opts...)
}

// wire records the commands a client sends.
type wireLog struct {
	mu   sync.Mutex
	cmds []bson.Raw
}

func (l *wireLog) options() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cmds = append(l.cmds, append(bson.Raw(nil), e.Command...))
	}})
}

// sent returns the commands named name sent so far.
func (l *wireLog) sent(name string) []bson.Raw {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []bson.Raw
	for _, c := range l.cmds {
		if els, err := c.Elements(); err == nil && len(els) > 0 && els[0].Key() == name {
			out = append(out, c)
		}
	}
	return out
}
