package encryption

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/policy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/mongo"
)

// Errors of Encryption, matched with errors.Is.
var (
	// ErrDecrypt: a stored value cannot be decrypted: its key is not in
	// the ring, the key is wrong, the ciphertext was changed or moved to
	// another field or document, or the field holds plaintext. The error
	// is a *DecryptError naming the collection, the _id and the field.
	ErrDecrypt = errors.New("encryption: cannot decrypt")
	// ErrEncryptedField: a query, sort, update or pipeline that the
	// encryption cannot answer on an encrypted field, or a model whose
	// tags cannot work with it. Nothing was sent.
	ErrEncryptedField = errors.New("encryption: not possible on an encrypted field")
	// ErrKey: an unusable key ring: a secret shorter than MinSecretLen, an
	// empty or repeated ID, no keys. The error never holds a secret.
	ErrKey = errors.New("encryption: unusable encryption key")
)

// DecryptError says which value could not be decrypted, and why.
type DecryptError struct {
	Collection string
	ID         string // the document's _id as extended JSON, or "" when it has none
	Field      string // the field's BSON name
	KeyID      string // the key ID stored in the value, when it could be read
	Reason     string
}

// Error names the collection, the _id, the field and the key ID.
func (e *DecryptError) Error() string {
	s := fmt.Sprintf("encryption: cannot decrypt field %q of document _id %s in collection %q", e.Field, e.ID, e.Collection)
	if e.ID == "" {
		s = fmt.Sprintf("encryption: cannot decrypt field %q of a document without _id in collection %q", e.Field, e.Collection)
	}
	if e.KeyID != "" {
		s += fmt.Sprintf(" (key %q)", e.KeyID)
	}
	return s + ": " + e.Reason
}

// Is reports whether target is ErrDecrypt.
func (e *DecryptError) Is(target error) bool { return target == ErrDecrypt }

// Encryption is a policy (see events.Policy) that encrypts the fields
// tagged `encrypt` with AES-256-GCM before every write and decrypts them
// after every read, and rewrites equality queries on `policy:"encrypt,eq"` fields
// into lookups of their blind index. Being a policy, it sees documents after
// every other listener has changed them, runs even when events are switched
// off, and the other listeners see decrypted documents on AfterLoad. See
// docs/encryption.md for the format, the threat model and what is refused.
//
// It is safe for concurrent use. Register it once per bus:
//
//	keys, err := encryption.ParseKeys(os.Getenv("MGMEVENTS_KEYS"))
//	enc, err := encryption.New(keys)
//	bus.Register(enc)
type Encryption struct {
	current   *ringKey
	byID      map[string]*ringKey
	indexKey  *secretKey // behind a pointer, so that printing an Encryption value shows an address
	normalize func(field string, v any) any
	noIndexes bool
	plans     *policy.Table[*encPlan] // per model and per collection (nil: nothing encrypted)
}

// Option configures Encryption.
type Option func(*encOptions) error

type encOptions struct {
	indexKey  *Key
	normalize func(field string, v any) any
	noIndexes bool
}

// WithIndexKey derives the blind-index key from k instead of from the
// oldest key of the ring (the last). Blind indexes must not change when the
// encryption key rotates: give a dedicated secret that never rotates, or,
// when retiring the oldest key, that key itself, so that the indexes stay
// valid. After changing it, run Reencrypt, which rewrites the indexes too.
func WithIndexKey(k Key) Option {
	return func(o *encOptions) error { o.indexKey = &k; return nil }
}

// WithNormalizer sets a function applied to the value of every
// `policy:"encrypt,eq"` field before its blind index is computed, on writes and on
// queries alike, so that a query for "Ann@Example.com" finds
// "ann@example.com". field is the BSON name; v is the value as BSON
// decodes it into an interface (string, int64, float64, bool,
// primitive.DateTime, bson.D, ...); the result is encoded again. The
// stored ciphertext keeps the value as given.
//
//	encryption.WithNormalizer(func(field string, v any) any {
//		if s, ok := v.(string); ok && field == "email" {
//			return strings.ToLower(strings.TrimSpace(s))
//		}
//		return v
//	})
func WithNormalizer(f func(field string, v any) any) Option {
	return func(o *encOptions) error { o.normalize = f; return nil }
}

// WithoutIndexes stops Encryption from creating, when a repository is
// created, an index on the blind-index field of every `policy:"encrypt,eq"` field
// in the repository's collection.
func WithoutIndexes() Option {
	return func(o *encOptions) error { o.noIndexes = true; return nil }
}

// New returns the policy for the key ring keys, whose first key
// encrypts every write. Every key decrypts. It refuses an empty ring, a
// secret shorter than MinSecretLen, an empty ID and an ID used twice, with
// errors matching ErrKey that never hold a secret.
func New(keys Keys, opts ...Option) (*Encryption, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("encryption: New: no keys: %w", ErrKey)
	}
	var o encOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	x := &Encryption{byID: make(map[string]*ringKey, len(keys)), normalize: o.normalize, noIndexes: o.noIndexes,
		plans: policy.NewTable(newPlan)}
	for i, k := range keys {
		d, err := deriveKeys(i, k)
		if err != nil {
			return nil, err
		}
		if _, dup := x.byID[k.ID]; dup {
			first := slices.IndexFunc(keys, func(o Key) bool { return o.ID == k.ID })
			return nil, fmt.Errorf("encryption: New: %s has the ID of key %d: %w", keyRef(i, k.ID), first, ErrKey)
		}
		r, err := newRing(d)
		if err != nil {
			return nil, err
		}
		x.byID[k.ID] = r
		if i == 0 {
			x.current = r
		}
		x.indexKey = &secretKey{d.index} // the last key's, unless WithIndexKey
	}
	if o.indexKey != nil {
		if err := checkKey(0, *o.indexKey); err != nil {
			return nil, fmt.Errorf("encryption: WithIndexKey: %w", err)
		}
		d, err := deriveKeys(0, *o.indexKey)
		if err != nil {
			return nil, err
		}
		x.indexKey = &secretKey{d.index}
	}
	return x, nil
}

// String names the policy and the IDs of its keys, current first, never a
// key.
func (x *Encryption) String() string {
	if x == nil {
		return "Encryption(nil)"
	}
	ids := make([]string, 0, len(x.byID))
	ids = append(ids, strconv.Quote(x.current.id))
	for id := range x.byID {
		if id != x.current.id {
			ids = append(ids, strconv.Quote(id))
		}
	}
	slices.Sort(ids[1:])
	return "Encryption{keys: [" + strings.Join(ids, ", ") + "], secrets: [redacted]}"
}

// GoString is String, so that %#v redacts too.
func (x *Encryption) GoString() string { return x.String() }

// Format prints String for every verb, so that no verb (%+v, %x) reaches
// the derived keys.
func (x *Encryption) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, x.String()) }

// LogValue logs String.
func (x *Encryption) LogValue() slog.Value { return slog.StringValue(x.String()) }

// secretKey holds key bytes; it prints redacted.
type secretKey struct{ b []byte }

// String never shows the key.
func (*secretKey) String() string { return "[redacted]" }

// GoString never shows the key.
func (k *secretKey) GoString() string { return k.String() }

// Format never shows the key.
func (k *secretKey) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

var _ events.Preparer = (*Encryption)(nil)

// EnforcesPolicy marks Encryption as a policy.
func (*Encryption) EnforcesPolicy() {}

// EnforcesTags reports that Encryption enforces policy:"encrypt" tags
// (events.TagEnforcer).
func (*Encryption) EnforcesTags() []string { return []string{"encrypt"} }

// EventTypes lists the events Encryption handles.
func (*Encryption) EventTypes() []events.Type {
	return []events.Type{events.BeforeSave, events.AfterLoad, events.BeforeQuery, events.BeforeUpdate, events.BeforeDelete}
}

// HandleEvent encrypts on BeforeSave and BeforeUpdate (and on BeforeDelete
// when a listener turned the delete into an update), decrypts on
// AfterLoad, and rewrites or refuses queries on BeforeQuery.
func (x *Encryption) HandleEvent(ctx context.Context, e *events.Event) error {
	p, err := x.planFor(e)
	if p == nil || err != nil {
		return err
	}
	switch e.Type {
	case events.BeforeSave:
		if e.Document == nil {
			break
		}
		if _, ierr := e.Document.LookupErr("_id"); ierr != nil && e.Op.Replace() {
			return fmt.Errorf("encryption: %v of a %v without an ID: its ciphertexts would be bound to no document; give the model the _id of the document it replaces: %w", e.Op, e.ModelType, ErrEncryptedField)
		}
		e.Document, err = x.encryptDocument(p, e.Collection, e.Document)
	case events.AfterLoad:
		if e.Document != nil && (!policy.Pipelined(e) || preservesDocuments(e.Pipeline)) {
			e.Document, err = x.decryptDocument(p, e.Collection, e.Document)
		}
	case events.BeforeQuery:
		if err = x.query(p, e, false); err == nil {
			err = x.reaches(e)
		}
	case events.BeforeUpdate:
		e.Update, err = x.update(p, e.Collection, e.Filter, e.Update, e.Collation)
	case events.BeforeDelete:
		if e.Update != nil {
			e.Update, err = x.update(p, e.Collection, e.Filter, e.Update, e.Collation)
		}
	}
	return err
}

// encPlan is what Encryption knows about one model type.
type encPlan struct {
	schema *model.Schema
	list   []*encField          // in declaration order
	fields map[string]*encField // by BSON name
	bidx   map[string]*encField // by blind-index name
	paths  []string             // the encrypted fields and blind indexes
	idOnce sync.Once
	idType bsontype.Type // the BSON type of the model's _id (int32 as int64), or 0 when unknown
}

// planFor returns the plan of e's model, or nil when it encrypts
// nothing, after judging, for such a model, the stages of e that reach
// collections (see reaches).
func (x *Encryption) planFor(e *events.Event) (*encPlan, error) {
	p, err := x.plan(e.ModelType)
	if p == nil && err == nil {
		err = x.reaches(e)
	}
	return p, err
}

// plan returns the plan of model type t, or nil when t encrypts nothing.
func (x *Encryption) plan(t reflect.Type) (*encPlan, error) {
	if t == nil {
		return nil, nil
	}
	p, _, err := x.plans.Model(t)
	return p, err
}

// newPlan makes the plan of a model's schema s, or nil when it encrypts
// nothing.
func newPlan(s *model.Schema) (*encPlan, bool, error) {
	fields, err := fieldsOf(s)
	if err != nil || len(fields) == 0 {
		return nil, false, err
	}
	p := &encPlan{schema: s, list: fields, fields: map[string]*encField{}, bidx: map[string]*encField{}}
	for _, f := range fields {
		p.fields[f.BSON] = f
		p.paths = append(p.paths, f.BSON)
		if f.Eq {
			p.bidx[f.BlindIndex()] = f
			p.paths = append(p.paths, f.BlindIndex())
		}
	}
	return p, true, nil
}

// reaches checks every stage of e's pipeline that reaches a collection
// with encrypted fields, from a pipeline of any model: a read may not
// name an encrypted field of it, in a condition or a join, since the
// stage is not rewritten and its plaintext would be sent; a write is
// refused, since what it stores would not be encrypted.
func (x *Encryption) reaches(e *events.Event) error {
	if e.Type != events.BeforeQuery || !policy.Pipelined(e) {
		return nil
	}
	_, err := x.plans.Reaches(e, func(r *mql.Reach, p *encPlan) error {
		if r.Writes {
			return fmt.Errorf("encryption: a pipeline may not write a collection with encrypted fields: what it stores would not be encrypted: %w", ErrEncryptedField)
		}
		return p.checkStage(bson.E{Key: r.Stage, Value: r.Spec()})
	})
	return err
}

// Prepare checks model type t when a repository is created, and refuses
// with ErrEncryptedField an encrypted _id, an encrypted field that is also
// `auto` or `audit`, a policy:"encrypt,eq" slice (MongoDB's element
// matching cannot be served by a blind index of the whole value) and a
// blind-index name taken by another field; with model.ErrInvalidTag an
// option other than eq, and an `auto:"inc,scope=..."` scoped by an
// encrypted field; and with model.ErrInvalidIndex an index the model
// declares on an encrypted field or on a blind index alone. Unless
// WithoutIndexes, it creates an index on each blind index in coll, the
// repository's collection.
func (x *Encryption) Prepare(t reflect.Type, coll *mongo.Collection) error {
	p, _, err := x.plans.Prepare(t, coll)
	if err != nil || p == nil || x.noIndexes || coll == nil {
		return err
	}
	return x.ensureIndexes(p, coll)
}

func (x *Encryption) ensureIndexes(p *encPlan, coll *mongo.Collection) error {
	s := p.schema
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, f := range p.list {
		if !f.Eq {
			continue
		}
		_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: f.BlindIndex(), Value: 1}}})
		if err != nil {
			return fmt.Errorf("encryption: %v: creating the index on %s in collection %q: %w", s.Type, f.BlindIndex(), coll.Name(), err)
		}
	}
	return nil
}
