// Package repo provides typed repositories over mgm collections that
// publish the events of package events around every operation, bulk writes,
// reads, operator updates, replaces, deletes, aggregations, counts and
// change streams included, while mgm's own model hooks keep firing.
//
// Event order, per model:
//
//	Insert, Save (new)   Creating, Saving, BeforeConvert, BeforeSave, write, AfterSave, Created, Saved
//	Save (existing)      Updating, Saving, BeforeQuery, BeforeConvert, BeforeSave, replace, AfterSave, Updated, Saved
//	Update               Updating, Saving, BeforeQuery, BeforeConvert, BeforeSave, $set, AfterSave, Updated, Saved
//	InsertMany           the Insert sequence up to BeforeSave for each model, one write, then the rest
//	FindByID, FindOne,   BeforeQuery, then AfterLoad, decode, AfterConvert, for each document as it is read
//	Find, Iter, All
//	FindPage             as Find for the page's models (the model read past the page is not decoded),
//	                     then, when asked, the BeforeQuery of its Count
//	FindAs, FindOneAs,   BeforeQuery, then AfterLoad and the DTO's decode per document (no AfterConvert: no model)
//	FindPageAs (DTOs)    (FindPageAs: the page as FindPage's, then the BeforeQuery of its Count when asked)
//	Count, Distinct      BeforeQuery
//	Aggregate            BeforeQuery (the pipeline), then AfterLoad (and for models AfterConvert) per result
//	UpdateOne,           BeforeQuery, BeforeUpdate, update, AfterUpdate
//	UpdateMany
//	FindOneAndUpdate     BeforeQuery, BeforeUpdate, update, AfterUpdate, AfterLoad, AfterConvert
//	FindOneAndDelete     BeforeQuery, BeforeDelete, delete, AfterDelete, AfterLoad, AfterConvert
//	ReplaceOne           Updating, Saving, BeforeQuery, BeforeConvert, BeforeSave, replace, AfterSave, Updated, Saved
//	                     (when none matched and none was upserted: nothing after the replace)
//	FindOneAndReplace    as ReplaceOne, then AfterLoad, AfterConvert for the returned document
//	                     (none when no document is returned)
//	Delete               Deleting, BeforeQuery, BeforeDelete, delete, AfterDelete, Deleted
//	DeleteOne,           BeforeQuery, BeforeDelete, delete, AfterDelete
//	DeleteMany
//	Watch                BeforeQuery (the change stream's pipeline); then, per change with a full document,
//	                     AfterLoad, decode, AfterConvert, as the stream reads it
//	BulkWrite            each write model in order as its twin (Insert, UpdateOne, UpdateMany, ReplaceOne,
//	                     DeleteOne, DeleteMany), hooks and events included, one write each
//
// Versions: a model with an `auto:"version"` field holds, from
// BeforeConvert on, the version the write stores, as in Spring Data
// MongoDB's versioned save: 1 for an insert of a model at 0 (which Spring
// sets only after BeforeConvert), and the version read plus one for Save
// and Update, whose filter holds the version read. A BeforeConvert
// listener may not change it (the write is refused), and a write that
// fails gives the model back the version it had.
//
// Filters: every method that takes a filter, read or write, refuses a nil
// one (untyped nil, or a nil bson.D, bson.M, map, slice or pointer) with
// an error that wraps ErrInvalidArgument and names the method, before any
// listener sees it: a nil filter is most often a variable left unset, and
// would match every document. To match every document, say so with an
// empty filter, bson.D{}. Aggregate and Watch take a pipeline, not a
// filter: a nil pipeline is an empty one.
//
// Results: a write by filter returns the driver's result of its kind, as
// the driver's own method does: UpdateOne, UpdateMany and ReplaceOne a
// *mongo.UpdateResult, DeleteOne and DeleteMany a *mongo.DeleteResult,
// BulkWrite a *mongo.BulkWriteResult. The find-and-modify methods return
// the model.
//
// An error from a hook or a Before* listener aborts the operation before
// anything is sent. An After* error is returned after the write has
// happened. mgm's hooks need a model, so the operations by filter that
// take none do not run them, as in mgm; ReplaceOne and FindOneAndReplace,
// which take one, run Save's.
//
// Interceptors on the bus (events.Interceptor) wrap each of these methods
// whole, hooks and events included, and see it end however it ends.
//
// # Policy tags and collections
//
// The policies act on a model's `policy` tags (see model.PolicyField and
// model.Schema.PolicyTags), and New refuses a model whose tags no policy on
// the bus enforces. A collection may be served by several models, but all
// repositories of one collection (by database and collection name, in
// this process, whatever the client) must declare the same policy fields:
// for each policy, the same fields with the same options (the tenant
// field, say, or the encrypted fields). Otherwise a model without the
// tenant field would read every tenant's documents, one without the
// encrypted fields would write them in plaintext, one without the
// softdelete mark would see deleted documents and delete for real. So New
// refuses, with ErrUnenforced naming both models and the tag, a model that
// disagrees on a tag with one that serves its collection already, in
// either order: the second repository is refused, whichever declares more. Unenforced(tag),
// given to either of the two, lets them disagree on that tag knowingly (an
// admin report that reads every tenant).
package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/sequence"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Errors returned, wrapped, by repositories.
var (
	// ErrNotConfigured: mgm.SetDefaultConfig was not called and no
	// WithDatabase option was given.
	ErrNotConfigured = errors.New("repo: mgm is not configured; call mgm.SetDefaultConfig or pass repo.WithDatabase")
	// ErrNilModel: a nil model, or nil filter where one is required.
	ErrNilModel error = &kindError{"repo: nil model", "invalid_argument"}
	// ErrInvalidArgument: an argument the repository cannot use.
	ErrInvalidArgument error = &kindError{"repo: invalid argument", "invalid_argument"}
	// ErrNotFound is mongo.ErrNoDocuments, so errors.Is matches either.
	ErrNotFound = mongo.ErrNoDocuments
	// ErrUnenforced: the model has tags that only a policy gives meaning to
	// (`policy` tags, model.NeedsPolicy), and no policy on the bus enforces
	// them;
	// or another repository serves its collection with other fields for
	// such a tag (see the package doc).
	ErrUnenforced = errors.New("repo: model tags not enforced by any policy")
	// ErrVersionConflict: the document's version changed since the model
	// was read (optimistic locking); nothing was written.
	ErrVersionConflict error = &kindError{"repo: version conflict: the document was changed by someone else", "version_conflict"}
)

// kindError is an error that names its kind, OpenTelemetry's error.type,
// by an ErrorType method: tracing and the slow-operation log classify
// errors by that method, without importing the package that made them.
type kindError struct{ msg, kind string }

func (e *kindError) Error() string { return e.msg }

// ErrorType returns the error's kind.
func (e *kindError) ErrorType() string { return e.kind }

// Option configures a repository.
type Option func(*config)

type config struct {
	db       *mongo.Database
	registry *bsoncodec.Registry
	noEvents bool
	retries  int
	versions sequence.Strategy
	indexes  bool
	// unenforced are policy tags the caller lets go unenforced.
	unenforced []string
}

// WithDatabase uses db instead of mgm's default database.
func WithDatabase(db *mongo.Database) Option { return func(c *config) { c.db = db } }

// WithRegistry encodes and decodes models and filters with r instead of
// model.Registry() (the driver's defaults plus UUIDs as subtype 4, and
// structs decoded strictly). New refuses r (ErrInvalidArgument) unless it
// decodes the model's struct strictly: build r from model.Registry(), or
// call model.RegisterStrict on it before anything decodes with it;
// otherwise a stored key such as "Tenant" would decode into the field
// stored as "tenant".
func WithRegistry(r *bsoncodec.Registry) Option { return func(c *config) { c.registry = r } }

// WithoutEvents makes the repository publish events only to policies
// (events.Policy), which no option switches off, and to essential
// listeners (events.Essential: AutoKeys, Auditing), whose work is part of
// the data, as Spring's setEntityLifecycleEventsEnabled(false) leaves its
// entity callbacks on. mgm's hooks and the version still run. See
// events.WithoutEvents, its per-call form, for exactly what is silenced.
func WithoutEvents() Option { return func(c *config) { c.noEvents = true } }

// Unenforced lets the repository serve a model whose tags (see
// model.Schema.PolicyTags: the policies its `policy` tags name) no policy on
// the bus enforces, and a collection whose other repositories declare
// other fields for those tags (see the package doc). By default both are
// refused, since the data would be left unprotected; pass the tags for
// tools and benchmarks that mean to.
func Unenforced(tags ...string) Option {
	return func(c *config) { c.unenforced = append(c.unenforced, tags...) }
}

// WithWriteRetries sets how many times a write that failed on a duplicate
// key is retried after a listener repaired the cause (see
// events.WriteErrorHandler). The default is 3.
func WithWriteRetries(n int) Option { return func(c *config) { c.retries = n } }

// WithVersionStrategy sets how a versioned Save or Update (a model with an
// `auto:"version"` field) makes sure it is the only writer to move the
// document on from the version it read. sequence.Atomic trusts the server
// to apply the write's version filter atomically, as MongoDB does;
// sequence.Claim first inserts a unique claim document per transition into
// "<collection>.versions", for servers that do not (FerretDB 1.x, which
// loses updates under a filter across connections). The default,
// sequence.Detect, asks the server. Force Atomic only where the filter is
// atomic: on FerretDB, a client with a single connection (maxPoolSize 1).
func WithVersionStrategy(s sequence.Strategy) Option { return func(c *config) { c.versions = s } }

// Repository stores models of type T, a pointer to a struct that implements
// mgm.Model, in T's mgm collection. It is safe for concurrent use.
type Repository[T mgm.Model] struct {
	bus    *events.Bus
	coll   *mgm.Collection
	schema *model.Schema
	reg    *bsoncodec.Registry
	events bool
	retry  int
	vstrat sequence.Strategy
	sweep  *claimSweeper // version claims to delete
	oid    *model.Field  // the _id field an insert reads in place of GetID, or nil
	// unenforced are the policy tags New was told to let go unenforced.
	unenforced []string
}

// New returns the repository for T. It parses and validates T's tags now,
// lets the bus's listeners prepare for T (AutoKeys checks its sequences),
// and fails on any mistake rather than at the first write, such as a
// GetID that returns another ObjectID than the _id field the document
// stores (mgm.DefaultModel embedded beside an _id field of the type's
// own), or a field whose struct tag has a key that is the name of a
// policy on the bus, such as region:"eu" beside a policy "region" that
// reads policy:"region" (model.ErrInvalidTag). bus may be nil for no
// events.
func New[T mgm.Model](bus *events.Bus, opts ...Option) (*Repository[T], error) {
	s, err := model.For[T]()
	if err != nil {
		return nil, fmt.Errorf("repo.New[%v]: %w", reflect.TypeFor[T](), err)
	}
	c := config{retries: 3}
	for _, o := range opts {
		o(&c)
	}
	if c.retries < 0 {
		return nil, fmt.Errorf("repo.New[%v]: WithWriteRetries(%d): want ≥ 0: %w", s.Type, c.retries, ErrInvalidArgument)
	}
	if c.versions > sequence.Claim {
		return nil, fmt.Errorf("repo.New[%v]: WithVersionStrategy(%v): unknown strategy: %w", s.Type, c.versions, ErrInvalidArgument)
	}
	if c.registry == nil {
		c.registry = defaultRegistry
	} else if err := checkStrict(c.registry, s); err != nil {
		return nil, err
	} else if err := checkNames(c.registry, s); err != nil {
		return nil, err
	}
	// The collection encodes with the repository's registry, so that what
	// the driver encodes (a model, a filter) matches what we encode.
	copts := options.Collection().SetRegistry(c.registry)
	var coll *mgm.Collection
	if c.db != nil {
		coll = mgm.NewCollection(c.db, s.Collection, copts)
	} else {
		if _, _, _, err := mgm.DefaultConfigs(); err != nil {
			return nil, fmt.Errorf("repo.New[%v]: %w", s.Type, ErrNotConfigured)
		}
		coll = mgm.Coll(reflect.New(s.Struct).Interface().(mgm.Model), copts)
	}
	regs := bus.Listeners(s.Type)
	if err := misbound(regs, s); err != nil {
		return nil, fmt.Errorf("repo.New[%v]: %w", s.Type, err)
	}
	if err := prepare(regs, s.Type, coll.Collection); err != nil {
		return nil, fmt.Errorf("repo.New[%v]: %w", s.Type, err)
	}
	for _, tag := range s.PolicyTags() {
		if !enforces(regs, tag) && !slices.Contains(c.unenforced, tag) {
			return nil, fmt.Errorf("repo.New[%v]: the model has %q tags, but no policy on the bus enforces them (register it, for all its event types, or pass repo.Unenforced(%q) knowingly): %w",
				s.Type, tag, tag, ErrUnenforced)
		}
	}
	if err := idAgrees(s); err != nil {
		return nil, fmt.Errorf("repo.New[%v]: %w", s.Type, err)
	}
	if err := claimCollection(coll.Database().Name(), coll.Name(), s, c.unenforced); err != nil {
		return nil, fmt.Errorf("repo.New[%v]: %w", s.Type, err)
	}
	if c.indexes {
		if err := ensureIndexes(s, coll.Collection); err != nil {
			return nil, fmt.Errorf("repo.New[%v]: %w", s.Type, err)
		}
	}
	return &Repository[T]{bus: bus, coll: coll, schema: s, reg: c.registry, events: !c.noEvents, retry: c.retries, vstrat: c.versions, unenforced: c.unenforced,
		sweep: &claimSweeper{claims: coll.Database().Collection(coll.Name() + ".versions")}, oid: objectIDField(s, c.registry)}, nil
}

var defaultRegistry = model.Registry()

// Collection returns the mgm collection the repository uses.
func (r *Repository[T]) Collection() *mgm.Collection { return r.coll }

// encodedPipeline returns the stages of pipeline, a value that encodes
// itself as an array, as reg encodes them.
func encodedPipeline(reg *bsoncodec.Registry, pipeline any) (bson.A, error) {
	raw, err := bsonio.Marshal(reg, bson.D{{Key: "p", Value: pipeline}})
	if err != nil {
		return nil, fmt.Errorf("encoding the pipeline %T: %w: %w", pipeline, ErrInvalidArgument, err)
	}
	arr, ok := raw.Lookup("p").ArrayOK()
	if !ok {
		return nil, fmt.Errorf("the pipeline %T does not encode as an array: %w", pipeline, ErrInvalidArgument)
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, fmt.Errorf("the pipeline %T: %w: %w", pipeline, ErrInvalidArgument, err)
	}
	out := make(bson.A, len(vals))
	for i, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("stage %d of the pipeline %T is a BSON %v, not a document: %w", i, pipeline, v.Type, ErrInvalidArgument)
		}
		out[i] = doc
	}
	return out, nil
}

// Schema returns T's parsed metadata: a copy of its own, so that nothing
// done to it changes what the repository or its listeners read.
func (r *Repository[T]) Schema() *model.Schema {
	s, _ := model.Of(r.schema.Type) // parsed without error by New
	return s
}

// event returns a new event for one operation, or nil when no listener
// is to see it. With events off for the repository or ctx, only policies
// and essential listeners see it, and it is Quiet.
func (r *Repository[T]) event(ctx context.Context, op events.Op) *events.Event {
	if r.bus.Len() == 0 {
		return nil
	}
	quiet := !r.events || !events.Enabled(ctx)
	e := eventPool.Get().(*events.Event)
	*e = events.Event{Op: op, Collection: r.coll.Name(), Coll: r.coll.Collection, Registry: r.reg, ModelType: r.schema.Type, Quiet: quiet}
	return e
}

// eventPool holds events that finished operations gave back (release), so
// that a write does not allocate its Event, the largest thing it builds.
var eventPool = sync.Pool{New: func() any { return new(events.Event) }}

// release clears e and gives it back for another operation. Only the
// operation that made e calls it, when it returns: listeners must not keep
// the pointer (see events.Event), and an async listener works on a
// copy. A nil e is ignored.
func release(e *events.Event) {
	if e != nil {
		*e = events.Event{}
		eventPool.Put(e)
	}
}

// canon returns v, a filter, an update or a pipeline, encoded with the
// repository's registry when that is not model.Registry(): the helpers of
// package events read documents with model.Registry(), and a listener, a
// policy above all, must judge what the driver will send, not another
// reading of it (a struct whose fields another registry names otherwise).
func (r *Repository[T]) canon(v any) (any, error) {
	if r.reg == defaultRegistry || v == nil {
		return v, nil
	}
	if _, ok := v.(bson.Raw); ok {
		return v, nil
	}
	if !mql.IsPipeline(v) {
		raw, err := bsonio.Marshal(r.reg, v)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w: %w", v, ErrInvalidArgument, err)
		}
		return raw, nil
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return encodedPipeline(r.reg, v) // a value that encodes itself as an array
	}
	out := make(bson.A, rv.Len())
	for i := range out {
		st, err := r.canon(rv.Index(i).Interface())
		if err != nil {
			return nil, fmt.Errorf("pipeline stage %d: %w", i, err)
		}
		out[i] = st
	}
	return out, nil
}

// query publishes BeforeQuery for filter, and returns the filter its
// listeners left, which is what the operation sends. A nil e publishes
// nothing and returns filter.
func (r *Repository[T]) query(ctx context.Context, e *events.Event, filter any) (any, error) {
	if e == nil {
		return filter, nil
	}
	filter, err := r.canon(filter)
	if err != nil {
		return nil, err
	}
	e.Filter = filter
	if err := r.publish(ctx, e, events.BeforeQuery); err != nil {
		return nil, err
	}
	if e.Filter == nil {
		// Fail closed: a nil filter would match every document.
		return nil, fmt.Errorf("a BeforeQuery listener left a nil filter: %w", ErrInvalidArgument)
	}
	return e.Filter, nil
}

// publish publishes e as type t; a nil e publishes nothing. A Before*
// listener may change the model but not replace Event.Model: the
// repository writes its own model, so a replacement would make policies
// judge a decoy.
func (r *Repository[T]) publish(ctx context.Context, e *events.Event, t events.Type) error {
	if e == nil {
		return nil
	}
	e.Type = t
	m := e.Model
	if err := r.bus.Publish(ctx, e); err != nil {
		return err
	}
	if t.Before() && e.Model != m {
		e.Model = m
		return fmt.Errorf("a %v listener replaced Event.Model of %v; change the model in place instead: %w", t, r.schema.Type, ErrInvalidArgument)
	}
	return nil
}

// check returns m's value, or an error for a nil model, or for one whose
// GetID panics.
func (r *Repository[T]) check(m T, method string) (reflect.Value, error) {
	v := reflect.ValueOf(m)
	if !v.IsValid() || v.IsNil() {
		return v, fmt.Errorf("repo %s: %s(nil %v): %w", r.coll.Name(), method, r.schema.Type, ErrNilModel)
	}
	if r.oid == nil { // a GetID the repository has not seen work (see objectIDField)
		if _, err := r.getID(m); err != nil {
			return v, fmt.Errorf("repo %s: %s: %w", r.coll.Name(), method, err)
		}
	}
	return v, nil
}

// wrap says which operation on which collection failed.
func (r *Repository[T]) wrap(method string, err error) error {
	var le *events.ListenerError
	if errors.As(err, &le) {
		return err // it names the event, collection and model already
	}
	return fmt.Errorf("repo %s: %s: %w", r.coll.Name(), method, err)
}

func (r *Repository[T]) encode(m T) (bson.Raw, error) {
	b, err := bsonio.Marshal(r.reg, m)
	if err != nil {
		return nil, fmt.Errorf("encoding %v: %w", r.schema.Type, err)
	}
	return b, nil
}

func (r *Repository[T]) newModel() T {
	return reflect.New(r.schema.Struct).Interface().(T)
}
